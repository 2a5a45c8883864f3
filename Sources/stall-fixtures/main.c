/* stall-fixtures MODE [args] [options]: argument parsing and dispatch.
 *
 * main calls the mode's run_* function directly, so every captured main-thread
 * stack starts main -> run_<mode> -> ... */
#define _GNU_SOURCE
#include "include/stall_fixtures.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    OPT_GAPS = 1 << 0,
    OPT_LOG = 1 << 1,
    OPT_SCRIPT = 1 << 2,
    OPT_GAP = 1 << 3,
    OPT_EXIT_WHEN_DONE = 1 << 4,
};

struct mode {
    const char *name;
    int (*run)(const struct fixture_args *);
    int min_pos, max_pos;
    unsigned options;        /* OPT_* this mode accepts */
    const char *synopsis;
    const char *summary;
};

static const struct mode modes[] = {
    { "idle", run_idle, 0, 0, 0, "",
      "epoll_wait forever; SIGUSR1 prints `eintr=N wakeups=M`, SIGTERM/SIGINT print it and exit 0" },
    { "spin", run_spin, 0, 0, 0, "",
      "pure arithmetic forever in spin_outer -> spin_hot_loop" },
    { "spin-timed", run_spin_timed, 0, 0, OPT_GAPS, "--gaps FILE",
      "spin reading CLOCK_MONOTONIC, record gaps > 5 us; SIGTERM writes FILE and exits 0" },
    { "deep", run_deep, 0, 1, OPT_GAPS, "[N] [--gaps FILE]",
      "N (default 100) frames of recurse_deep, then spin in deep_leaf_spin" },
    { "churn", run_churn, 0, 0, 0, "",
      "spin in run_churn -> churn_descend <-> churn_wide, to a depth of 1-48 that changes every few microseconds" },
    { "sleep", run_sleep, 0, 0, 0, "",
      "nanosleep(3600 s) forever in sleep_forever" },
    { "mutex", run_mutex, 0, 0, 0, "",
      "block in wait_for_lock on a mutex held forever by thread `holder`" },
    { "deadlock", run_deadlock, 0, 0, 0, "",
      "main and thread `worker` each hold one mutex and wait for the other's" },
    { "pipe", run_pipe, 0, 0, 0, "",
      "block in read_from_pipe on a pipe nobody writes" },
    { "io", run_io, 0, 1, 0, "[DIR]",
      "write 8 MiB + fsync forever to a temp file in DIR (default $TMPDIR or /tmp); SIGTERM removes it" },
    { "exit-soon", run_exit_soon, 1, 1, 0, "MS",
      "spin in spin_then_exit, _exit(0) after MS milliseconds" },
    { "exec-soon", run_exec_soon, 1, 1, 0, "MS",
      "spin in spin_then_exec, then re-execute itself by its own path as `spin` after MS milliseconds" },
    { "threads", run_threads, 1, 1, 0, "N",
      "N sleeping threads worker-0..N-1 (in worker_sleep), main spins like `spin`" },
    { "zombie-parent", run_zombie_parent, 0, 0, 0, "",
      "leave an unreaped child (zombie=PID), sleep forever in sleep_forever" },
    { "slow-start", run_slow_start, 1, 1, OPT_LOG, "SECONDS [--log FILE]",
      "spin SECONDS in slow_startup_init, then behave like `idle`; logs kind `launch`" },
    { "park", run_park, 0, 0, 0, "",
      "no event loop: sigsuspend until SIGTERM/SIGINT in park_for_signals (like nginx's master)" },
    { "spawner", run_spawner, 1, 2, 0, "N [EVERY]",
      "a supervisor: fork N idle workers, then one more every EVERY seconds, each announced as `forked pid=P mono=SECONDS`; waits in sigtimedwait; SIGTERM ends the workers, then itself" },
    { "probe-loop", run_probe_loop, 2, 2, 0, "PID SECONDS",
      "the bare floor of an idle watch: pread /proc/PID/task/PID/syscall every 10 ms for SECONDS, print cpu_seconds=" },
    { "syscall-loop", run_syscall_loop, 2, 2, 0, "SECONDS WAITMS",
      "an epoll loop: each turn waits up to WAITMS ms (0: never blocks), then 4000 getppid calls; prints syscalls= cpu_ns_per_call= (second half of the run)" },
    { "batch", run_batch, 0, 0, 0, "",
      "a test runner: 24 fast tests around sleepy_test (3 s sleep), spinning_test (3 s CPU) and deadlock_test (4 s lock-order deadlock); prints `test NAME` per test, `done`, exits 1" },
    { "thread-batch", run_thread_batch, 0, 0, 0, "",
      "the batch runner's fast tests, sleepy_test and spinning_test, each in a thread of its own joined by main (Rust libtest's shape); exits 0" },
    { "loop", run_loop, 0, 0, OPT_SCRIPT | OPT_LOG | OPT_GAP | OPT_EXIT_WHEN_DONE,
      "--script SPEC [--log FILE] [--gap SECONDS] [--exit-when-done]",
      "5 ms timer event loop that runs scripted stalls (see below)" },
};

#define MODE_COUNT (sizeof modes / sizeof modes[0])

static void usage(FILE *out)
{
    fputs("usage: stall-fixtures MODE [args] [options]\n"
          "\n"
          "A process whose main thread stalls in a known way. Each mode prints\n"
          "`ready pid=<pid> tid=<tid> [key=value...]` right before the main thread\n"
          "enters its stall or wait.\n"
          "\nmodes:\n",
          out);
    for (size_t i = 0; i < MODE_COUNT; i++) {
        fprintf(out, "  %s%s%s\n", modes[i].name, modes[i].synopsis[0] ? " " : "", modes[i].synopsis);
        fprintf(out, "      %s\n", modes[i].summary);
    }
    fputs("\n"
          "loop SPEC: comma-separated KIND:SECONDS steps, each preceded by --gap seconds\n"
          "(default 1.0) of idle looping, plus one trailing gap before `done` is printed.\n"
          "KIND and the frame the main thread stalls in (main -> run_loop -> event_loop\n"
          "-> run_step -> ...):\n"
          "  spin    busy_compute      pure CPU: SECONDS of the thread's CPU time (longer\n"
          "                            in wall time on a loaded host, still a hang)\n"
          "  sleep   blocking_sleep    one nanosleep\n"
          "  mutex   lock_contention   mutex held by thread `lockholder` (hold_lock_for)\n"
          "  pipe    wait_on_pipe      read(); thread `writer` writes one byte after SECONDS\n"
          "  io      disk_io           8 MiB write + fsync chunks in $TMPDIR or /tmp\n"
          "  starve  starved_compute   main and threads hog-0..2 pinned to one CPU\n"
          "  short   short_bursts      3 ms of work per 5 ms tick: busy but never stalled\n"
          "  die     dying_compute     spin SECONDS, then abort()\n"
          "  idle    (none)            an extra idle gap\n"
          "  saturate serve_request    turns back to back, an event always ready: 1-3 ms of\n"
          "                            request, then 1 ms in flush_replies (event_loop) before\n"
          "                            the next wait; ~300 turns/s, never asleep (no stall)\n"
          "  nested  nested_wait       epoll_wait on a second epoll set, from inside work\n"
          "  syscalls syscall_heavy_compute  busy, mostly in the kernel: 64 KiB reads of /dev/zero\n"
          "--log FILE appends one JSON line per step when it ends:\n"
          "  {\"kind\":\"spin\",\"start_wall\":S,\"end_wall\":S,\"start_mono\":S,\"end_mono\":S,\"seconds\":S}\n",
          out);
}

static const struct mode *find_mode(const char *name)
{
    for (size_t i = 0; i < MODE_COUNT; i++)
        if (strcmp(modes[i].name, name) == 0)
            return &modes[i];
    return NULL;
}

/* Parses argv[2..] into *args. "--opt VALUE" and "--opt=VALUE" are both accepted. */
static void parse_args(const struct mode *mode, int argc, char **argv, struct fixture_args *args)
{
    static const struct {
        const char *name;
        unsigned flag;
        bool takes_value;
    } options[] = {
        { "--gaps", OPT_GAPS, true },
        { "--log", OPT_LOG, true },
        { "--script", OPT_SCRIPT, true },
        { "--gap", OPT_GAP, true },
        { "--exit-when-done", OPT_EXIT_WHEN_DONE, false },
    };

    for (int i = 2; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            usage(stdout);
            exit(0);
        }
        if (strncmp(arg, "--", 2) != 0) {
            if (args->npos >= mode->max_pos)
                usage_error("unexpected argument: %s", arg);
            args->pos[args->npos++] = arg;
            continue;
        }

        size_t name_len = strcspn(arg, "=");
        const char *value = arg[name_len] == '=' ? arg + name_len + 1 : NULL;
        unsigned flag = 0;
        bool takes_value = false;
        for (size_t k = 0; k < sizeof options / sizeof options[0]; k++) {
            if (strlen(options[k].name) == name_len && strncmp(options[k].name, arg, name_len) == 0) {
                flag = options[k].flag;
                takes_value = options[k].takes_value;
            }
        }
        if (flag == 0 || !(mode->options & flag))
            usage_error("unknown option for this mode: %s", arg);
        if (takes_value && value == NULL) {
            if (i + 1 >= argc)
                usage_error("option needs a value: %s", arg);
            value = argv[++i];
        } else if (!takes_value && value != NULL) {
            usage_error("option takes no value: %s", arg);
        }

        switch (flag) {
        case OPT_GAPS: args->gaps_path = value; break;
        case OPT_LOG: args->log_path = value; break;
        case OPT_SCRIPT: args->script = value; break;
        case OPT_GAP:
            if (!parse_seconds(value, &args->gap_seconds))
                usage_error("--gap: not a number of seconds: %s", value);
            break;
        case OPT_EXIT_WHEN_DONE: args->exit_when_done = true; break;
        }
    }
    if (args->npos < mode->min_pos)
        usage_error("missing argument for mode %s", mode->name);
}

/* Starts every mode from a clean signal state, like a plain C program:
 *  - A parent can hand down blocked signals (Foundation's Process passes on the
 *    spawning thread's mask, which under swift-testing blocks nearly everything,
 *    SIGTERM included) and ignored ones (SIGCHLD ignored would make the kernel
 *    reap the zombie of `zombie-parent`).
 *  - SwiftPM links this executable against the Swift runtime, which installs
 *    handlers for the crash signals that run its backtracer: the `die` step
 *    would then linger in a handler (with a helper process reading its memory)
 *    instead of simply dying of SIGABRT. */
static void reset_signals(void)
{
    static const int defaults[] = {
        SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE, SIGCHLD,
        SIGABRT, SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP,
    };
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++)
        signal(defaults[i], SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    const struct mode *mode = find_mode(argv[1]);
    if (mode == NULL)
        usage_error("unknown mode: %s", argv[1]);

    struct fixture_args args = { .argv0 = argv[0], .gap_seconds = 1.0 };
    parse_args(mode, argc, argv, &args);

    /* Tests read stdout through a pipe: never let a line sit in a buffer. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    reset_signals();

    int status = mode->run(&args);
    KEEP_FRAME();
    return status;
}
