/* Modes whose main thread is on CPU: spin, spin-timed, deep, exit-soon,
 * exec-soon, threads. */
#define _GNU_SOURCE
#include "include/stall_fixtures.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- spin ------------------------------------------------------------------------ */

/* No syscalls and no vDSO calls: every sample of this thread shows this frame on
 * top. stop_requested is only a memory read; nothing sets it in `spin`. */
FIXTURE_FRAME uint64_t spin_hot_loop(void)
{
    volatile uint64_t acc = 1;
    while (!stop_requested) {
        for (int i = 0; i < 1024; i++)
            spin_arith(&acc);
    }
    return acc;
}

FIXTURE_FRAME uint64_t spin_outer(void)
{
    uint64_t result = spin_hot_loop();
    KEEP_FRAME();
    return result;
}

FIXTURE_FRAME int run_spin(const struct fixture_args *args)
{
    (void)args;
    print_ready();
    spin_outer();
    KEEP_FRAME();
    return 0;
}

/* ---- spin-timed ------------------------------------------------------------------ */

/* One clock read per iteration plus a little arithmetic: the resolution at which
 * a pause of this thread (a ptrace stop, say) shows up as a gap. */
FIXTURE_FRAME uint64_t timed_hot_loop(struct gap_recorder *rec)
{
    volatile uint64_t acc = 1;
    while (!stop_requested) {
        gap_recorder_tick(rec);
        for (int i = 0; i < 8; i++)
            spin_arith(&acc);
    }
    return acc;
}

FIXTURE_FRAME int run_spin_timed(const struct fixture_args *args)
{
    if (args->gaps_path == NULL)
        usage_error("spin-timed needs --gaps FILE");
    static struct gap_recorder rec;
    gap_recorder_init(&rec);
    install_stop_handler(SIGTERM);
    print_ready();
    rec.first_ns = rec.prev_ns = mono_ns();
    timed_hot_loop(&rec);
    KEEP_FRAME();
    gap_recorder_write(&rec, args->gaps_path);
    return 0;
}

/* ---- deep ------------------------------------------------------------------------- */

FIXTURE_FRAME uint64_t deep_leaf_spin(struct gap_recorder *rec)
{
    volatile uint64_t acc = 1;
    if (rec != NULL) {
        while (!stop_requested) {
            gap_recorder_tick(rec);
            for (int i = 0; i < 8; i++)
                spin_arith(&acc);
        }
    } else {
        while (!stop_requested) {
            for (int i = 0; i < 1024; i++)
                spin_arith(&acc);
        }
    }
    return acc;
}

/* `depth` frames of recurse_deep above deep_leaf_spin. The volatile local and the
 * use of the callee's result keep each level a real frame (no tail recursion). */
FIXTURE_FRAME uint64_t recurse_deep(long depth, struct gap_recorder *rec)
{
    volatile long level = depth;
    uint64_t result = depth <= 1 ? deep_leaf_spin(rec) : recurse_deep(depth - 1, rec);
    KEEP_FRAME();
    return result + (uint64_t)level;
}

FIXTURE_FRAME int run_deep(const struct fixture_args *args)
{
    long depth = 100;
    if (args->npos > 0 && !parse_long(args->pos[0], 1, 100000, &depth))
        usage_error("deep: N must be an integer from 1 to 100000: %s", args->pos[0]);

    static struct gap_recorder rec;
    struct gap_recorder *recp = NULL;
    if (args->gaps_path != NULL) {
        gap_recorder_init(&rec);
        install_stop_handler(SIGTERM);
        recp = &rec;
    }
    print_ready_with("depth=%ld", depth);
    if (recp != NULL)
        rec.first_ns = rec.prev_ns = mono_ns();
    recurse_deep(depth, recp);
    KEEP_FRAME();
    if (recp != NULL)
        gap_recorder_write(recp, args->gaps_path);
    return 0;
}

/* ---- churn ------------------------------------------------------------------------ */

/* A stack that never holds still: calls down to a depth that changes every few
 * microseconds and returns, alternating two functions with frames of different sizes, so the
 * same stack address holds another return address or saved frame pointer from one descent to
 * the next. A stack copied after a ptrace stop's resume then reads other frames than the stop
 * saw, and the capture must notice it and copy again while stopped. */
FIXTURE_FRAME uint64_t churn_wide(long depth);

FIXTURE_FRAME uint64_t churn_descend(long depth)
{
    volatile uint64_t fill[24];
    for (int i = 0; i < 24; i++)
        fill[i] = (uint64_t)depth * 0x9E3779B97F4A7C15u + (uint64_t)i;
    uint64_t result = depth <= 1 ? fill[depth & 7] : churn_wide(depth - 1);
    KEEP_FRAME();
    return result ^ fill[3];
}

FIXTURE_FRAME uint64_t churn_wide(long depth)
{
    volatile uint64_t fill[61];
    for (int i = 0; i < 61; i++)
        fill[i] = (uint64_t)depth * 0xC2B2AE3D27D4EB4Fu + (uint64_t)i;
    uint64_t result = depth <= 1 ? fill[depth & 7] : churn_descend(depth - 1);
    KEEP_FRAME();
    return result ^ fill[5];
}

FIXTURE_FRAME int run_churn(const struct fixture_args *args)
{
    (void)args;
    install_stop_handler(SIGTERM);
    print_ready();
    uint64_t seed = 88172645463325252u, acc = 0;
    while (!stop_requested) {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        long depth = 1 + (long)(seed % 48);
        acc += (seed >> 32) & 1 ? churn_descend(depth) : churn_wide(depth);
    }
    KEEP_FRAME();
    return acc == 42 ? 1 : 0;
}

/* ---- exit-soon / exec-soon --------------------------------------------------------- */

static uint64_t parse_ms(const struct fixture_args *args)
{
    long ms;
    if (!parse_long(args->pos[0], 0, 86400000L, &ms))
        usage_error("MS must be a number of milliseconds: %s", args->pos[0]);
    return (uint64_t)ms * 1000000u;
}

/* The stop_requested checks make the exit conditional, so the compiler cannot mark
 * these functions noreturn (a call to a noreturn function can leave the return
 * address past the caller's end, which confuses symbolizers). */
FIXTURE_FRAME uint64_t spin_then_exit(uint64_t deadline_ns)
{
    uint64_t acc = burn_cpu_until(deadline_ns);
    if (!stop_requested)
        _exit(0);
    return acc;
}

FIXTURE_FRAME int run_exit_soon(const struct fixture_args *args)
{
    uint64_t delay = parse_ms(args);
    print_ready();
    spin_then_exit(mono_ns() + delay);
    KEEP_FRAME();
    return 0;
}

FIXTURE_FRAME uint64_t spin_then_exec(uint64_t deadline_ns, const char *argv0)
{
    uint64_t acc = burn_cpu_until(deadline_ns);
    if (!stop_requested) {
        /* By its own path, as a daemon re-executing itself does (haproxy -W on a reload):
         * same pid, same path, same name. */
        char self[4096];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0)
            fatal_errno("readlink /proc/self/exe");
        self[n] = '\0';
        char *const argv[] = { (char *)argv0, (char *)"spin", NULL };
        execv(self, argv);
        fatal_errno("execv");
    }
    return acc;
}

FIXTURE_FRAME int run_exec_soon(const struct fixture_args *args)
{
    uint64_t delay = parse_ms(args);
    print_ready();
    spin_then_exec(mono_ns() + delay, args->argv0);
    KEEP_FRAME();
    return 0;
}

/* ---- threads --------------------------------------------------------------------- */

struct worker_start {
    long index;
    pid_t tid;
    pthread_barrier_t *started;
};

FIXTURE_FRAME int worker_sleep(void)
{
    struct timespec hour = { .tv_sec = 3600 };
    while (!stop_requested)
        nanosleep(&hour, NULL);
    KEEP_FRAME();
    return 0;
}

FIXTURE_FRAME void *worker_thread(void *arg)
{
    struct worker_start *w = arg;
    char name[16];
    snprintf(name, sizeof name, "worker-%ld", w->index);
    set_thread_name(name);
    w->tid = current_tid();
    pthread_barrier_wait(w->started);
    worker_sleep();
    KEEP_FRAME();
    return NULL;
}

FIXTURE_FRAME int run_threads(const struct fixture_args *args)
{
    long count;
    if (!parse_long(args->pos[0], 0, 1000, &count))
        usage_error("threads: N must be an integer from 0 to 1000: %s", args->pos[0]);

    static struct worker_start workers[1000];
    pthread_barrier_t started;
    pthread_barrier_init(&started, NULL, (unsigned)count + 1);
    for (long i = 0; i < count; i++) {
        workers[i] = (struct worker_start){ .index = i, .started = &started };
        pthread_detach(spawn_thread(worker_thread, &workers[i]));
    }
    pthread_barrier_wait(&started);
    for (long i = 0; i < count; i++)
        wait_until_blocked(workers[i].tid, SYS_clock_nanosleep, SYS_nanosleep);

    print_ready_with("threads=%ld", count);
    spin_outer();
    KEEP_FRAME();
    return 0;
}
