/*
 * stall-fixtures: small programs whose main thread stalls in known ways.
 *
 * Tests capture the main thread's stack from outside (ptrace, /proc, libunwind)
 * and compare it with the function names below, so those names and the call
 * chains between them are a contract. Two things protect it:
 *
 *   FIXTURE_FRAME  keeps a function out of line and un-cloned, so it exists
 *                  under its own symbol (no "foo.isra.0", no identical-code
 *                  folding into a twin); under clang it also forbids tail calls
 *                  out of the function.
 *   KEEP_FRAME()   placed after a call, makes the caller do something once the
 *                  callee returns, so the call cannot become a tail jump that
 *                  would drop the caller's frame from the stack.
 *
 * Loop bodies that must run *inside* a named frame are always_inline helpers:
 * the build uses -fno-inline, which would otherwise turn each into one more
 * frame on top of the stack.
 */
#ifndef STALL_FIXTURES_H
#define STALL_FIXTURES_H

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#if defined(__clang__)
#define FIXTURE_FRAME __attribute__((noinline, disable_tail_calls))
#else
#define FIXTURE_FRAME __attribute__((noipa))
#endif
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")
#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* ---- command line ---------------------------------------------------------- */

struct fixture_args {
    const char *argv0;
    int npos;                /* positional arguments after MODE */
    const char *pos[2];
    const char *gaps_path;   /* --gaps FILE */
    const char *log_path;    /* --log FILE */
    const char *script;      /* --script SPEC */
    double gap_seconds;      /* --gap SECONDS (loop), default 1.0 */
    bool exit_when_done;     /* --exit-when-done */
};

/* Mode entry points, called directly from main (so each is frame #1 under main).
 * Each returns the process exit status. */
int run_idle(const struct fixture_args *args);
int run_spin(const struct fixture_args *args);
int run_spin_timed(const struct fixture_args *args);
int run_deep(const struct fixture_args *args);
int run_churn(const struct fixture_args *args);
int run_sleep(const struct fixture_args *args);
int run_mutex(const struct fixture_args *args);
int run_deadlock(const struct fixture_args *args);
int run_pipe(const struct fixture_args *args);
int run_io(const struct fixture_args *args);
int run_exit_soon(const struct fixture_args *args);
int run_exec_soon(const struct fixture_args *args);
int run_threads(const struct fixture_args *args);
int run_zombie_parent(const struct fixture_args *args);
int run_slow_start(const struct fixture_args *args);
int run_loop(const struct fixture_args *args);
int run_park(const struct fixture_args *args);
int run_spawner(const struct fixture_args *args);
int run_batch(const struct fixture_args *args);
int run_thread_batch(const struct fixture_args *args);
int run_probe_loop(const struct fixture_args *args);
int run_syscall_loop(const struct fixture_args *args);

/* ---- frames shared between modes -------------------------------------------- */

/* spin: run_spin -> spin_outer -> spin_hot_loop (also used by `threads`). */
uint64_t spin_outer(void);
uint64_t spin_hot_loop(void);

/* sleep: nanosleep(3600 s) until stop_requested (also used by `zombie-parent`). */
int sleep_forever(void);

/* The idle event loop of `idle`, also entered by `slow-start` after its init. */
struct idle_loop {
    int epfd, eventfd, signalfd;
    unsigned long eintr;     /* epoll_wait returns of -1/EINTR: each ptrace stop makes one */
    unsigned long wakeups;   /* epoll_wait returns that delivered at least one event */
};
void idle_loop_open(struct idle_loop *loop);
int idle_wait_loop(struct idle_loop *loop);

/* ---- utilities (common.c) ----------------------------------------------------- */

/* Set by the SIGTERM handler of modes that exit via a flag; every loop checks it,
 * which also keeps compilers from treating the loops as infinite (noreturn). */
extern volatile sig_atomic_t stop_requested;
void install_stop_handler(int signo);

__attribute__((noreturn, format(printf, 1, 2))) void fatal(const char *fmt, ...);
__attribute__((noreturn)) void fatal_errno(const char *what);
/* For bad command lines: message plus a pointer to --help, exit status 2. */
__attribute__((noreturn, format(printf, 1, 2))) void usage_error(const char *fmt, ...);

pid_t current_tid(void);
void set_thread_name(const char *name);   /* of the calling thread */
pthread_t spawn_thread(void *(*fn)(void *), void *arg);

/* The line tests wait for: "ready pid=<pid> tid=<tid>[ <extra>]". */
void print_ready(void);
__attribute__((format(printf, 1, 2))) void print_ready_with(const char *extra_fmt, ...);

bool parse_seconds(const char *text, double *out);
bool parse_long(const char *text, long min, long max, long *out);

/* Blocks the signals in the calling thread (threads created later inherit the
 * mask) and returns them as a set, ready for signalfd. */
sigset_t block_signals(const int *signos, size_t count);

/* Waits (up to a few seconds) until thread `tid` of this process is blocked in
 * syscall `nr` or `alt_nr`, so a ready line is only printed once helper threads
 * really sit where tests expect them. Returns false (and warns) on timeout. */
bool wait_until_blocked(pid_t tid, long nr, long alt_nr);

/* I/O helpers for `io` and the loop's `io` step. */
#define IO_CHUNK_BYTES (8u << 20)
const void *io_chunk(void);                          /* 8 MiB of non-zero bytes */
int create_temp_file(const char *dir, char *path, size_t path_size);
void pwrite_all(int fd, const void *buf, size_t len, off_t offset);
const char *temp_dir(void);                          /* $TMPDIR or /tmp */

/* ---- time ----------------------------------------------------------------------- */

ALWAYS_INLINE uint64_t timespec_ns(const struct timespec *ts)
{
    return (uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec;
}

ALWAYS_INLINE uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return timespec_ns(&ts);
}

ALWAYS_INLINE uint64_t seconds_to_ns(double seconds)
{
    return (uint64_t)(seconds * 1e9 + 0.5);
}

/* Sleeps ns nanoseconds in the calling frame (one nanosleep, resumed after EINTR). */
ALWAYS_INLINE void nanosleep_ns(uint64_t ns)
{
    struct timespec req = { .tv_sec = (time_t)(ns / 1000000000u), .tv_nsec = (long)(ns % 1000000000u) };
    while (nanosleep(&req, &req) != 0 && errno == EINTR)
        ;
}

/* One step of the pure arithmetic all spinning frames do (an LCG on a volatile,
 * so it is neither folded nor vectorised away). */
ALWAYS_INLINE void spin_arith(volatile uint64_t *acc)
{
    *acc = *acc * 6364136223846793005u + 1442695040888963407u;
}

/* Burns CPU in the *calling* frame until CLOCK_MONOTONIC reaches deadline_ns.
 * The clock is read every 1024 steps (a few µs) so the vDSO shows up on top of
 * the stack in well under 1 % of samples. */
ALWAYS_INLINE uint64_t burn_cpu_until(uint64_t deadline_ns)
{
    volatile uint64_t acc = 1;
    do {
        for (int i = 0; i < 1024; i++)
            spin_arith(&acc);
    } while (mono_ns() < deadline_ns && !stop_requested);
    return acc;
}

/* The calling thread's CPU time (a real system call, unlike CLOCK_MONOTONIC). */
ALWAYS_INLINE uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Burns cpu_ns of the thread's own CPU time in the *calling* frame: a fixed amount
 * of work, which takes longer on a loaded host — a hang stays a hang there, the
 * way real work does. The CPU clock is a real system call, read only every 2 ms of
 * wall time: a ptrace interrupt takes effect at the next return to user space, and
 * in a VM a frequent syscall exit beats the IPI, which would put the syscall on top
 * of most samples. In between, the vDSO's monotonic clock bounds each slice. */
ALWAYS_INLINE uint64_t burn_cpu_for(uint64_t cpu_ns)
{
    volatile uint64_t acc = 1;
    uint64_t end = thread_cpu_ns() + cpu_ns;
    do {
        uint64_t slice_end = mono_ns() + 2000000u;
        do {
            for (int i = 0; i < 1024; i++)
                spin_arith(&acc);
        } while (mono_ns() < slice_end && !stop_requested);
    } while (thread_cpu_ns() < end && !stop_requested);
    return acc;
}

/* ---- gap recorder (spin-timed, deep --gaps) ------------------------------------ */

/* Records every pause of the spinning thread longer than GAP_THRESHOLD_NS, as seen
 * between two consecutive clock reads: that is how long a capture froze it. */
#define GAP_THRESHOLD_NS 5000u
#define GAP_CAPACITY 1000000u

struct gap_recorder {
    uint64_t *start_ns;      /* CLOCK_MONOTONIC of the read before the gap */
    uint64_t *gap_ns;
    size_t count;
    uint64_t dropped;        /* gaps beyond GAP_CAPACITY */
    uint64_t iterations;
    uint64_t first_ns, prev_ns;
};

void gap_recorder_init(struct gap_recorder *rec);
void gap_recorder_write(const struct gap_recorder *rec, const char *path);

ALWAYS_INLINE void gap_recorder_tick(struct gap_recorder *rec)
{
    uint64_t now = mono_ns();
    uint64_t gap = now - rec->prev_ns;
    if (gap > GAP_THRESHOLD_NS) {
        if (rec->count < GAP_CAPACITY) {
            rec->start_ns[rec->count] = rec->prev_ns;
            rec->gap_ns[rec->count] = gap;
            rec->count++;
        } else {
            rec->dropped++;
        }
    }
    rec->prev_ns = now;
    rec->iterations++;
}

/* ---- stall log (the oracle for stall reports) ------------------------------------ */

struct stamp {
    struct timespec mono, wall;
};
void stamp_now(struct stamp *s);
int stall_log_open(const char *path);   /* -1 when path is NULL */
/* Appends {"kind":...,"start_wall":...,...,"seconds":...} as one write(); no-op on fd -1. */
void stall_log_append(int fd, const char *kind, const struct stamp *start, const struct stamp *end);

/* ---- loop steps (loop_steps.c) ----------------------------------------------------
 * The frames the main thread stalls in, under main -> run_loop -> event_loop -> run_step. */
uint64_t busy_compute(double seconds);
int blocking_sleep(double seconds);
int lock_contention(double seconds);   /* helper thread `lockholder`, in hold_lock_for */
int wait_on_pipe(double seconds);      /* helper thread `writer`, in write_after_delay */
uint64_t disk_io(double seconds);
uint64_t starved_compute(double seconds); /* helper threads `hog-0..2`, in hog_spin */
uint64_t short_bursts(void);           /* one ~3 ms burst per call */
uint64_t serve_request(unsigned n);    /* 1-3 ms: the request half of a saturated turn */
uint64_t flush_replies(void);          /* 1 ms: the loop's write phase before it waits */
int nested_wait(double seconds);       /* epoll_wait on a second epoll set, from inside work */
uint64_t syscall_heavy_compute(double seconds); /* busy, most of it in the kernel (reads of /dev/zero) */
/* Spins `seconds`, appends the "die" log line ending now, then abort()s. */
uint64_t dying_compute(double seconds, int log_fd, const struct stamp *start);

#endif
