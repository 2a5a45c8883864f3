/* Modes whose main thread is an idle event loop: idle, and slow-start (a long
 * start-up, then the same loop). */
#define _GNU_SOURCE
#include "include/stall_fixtures.h"

#include <errno.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void epoll_add(int epfd, int fd)
{
    struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
        fatal_errno("epoll_ctl");
}

/* The signals are blocked and only ever read from the signalfd: no handler runs,
 * so a signal never interrupts epoll_wait by itself. Every EINTR counted then
 * comes from something stopping the thread from outside (ptrace, SIGSTOP). */
void idle_loop_open(struct idle_loop *loop)
{
    static const int signals[] = { SIGUSR1, SIGTERM, SIGINT };
    sigset_t set = block_signals(signals, sizeof signals / sizeof signals[0]);

    loop->eintr = loop->wakeups = 0;
    loop->epfd = epoll_create1(EPOLL_CLOEXEC);
    loop->eventfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    loop->signalfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (loop->epfd < 0 || loop->eventfd < 0 || loop->signalfd < 0)
        fatal_errno("idle loop set-up");
    epoll_add(loop->epfd, loop->eventfd);
    epoll_add(loop->epfd, loop->signalfd);
}

static void print_counts(const struct idle_loop *loop)
{
    printf("eintr=%lu wakeups=%lu\n", loop->eintr, loop->wakeups);
    fflush(stdout);
}

/* Returns the exit status once SIGTERM or SIGINT arrives. */
FIXTURE_FRAME int idle_wait_loop(struct idle_loop *loop)
{
    for (;;) {
        struct epoll_event events[4];
        int n = epoll_wait(loop->epfd, events, 4, -1);
        if (n < 0) {
            if (errno != EINTR)
                fatal_errno("epoll_wait");
            loop->eintr++;
            continue;
        }
        loop->wakeups++;
        for (int i = 0; i < n; i++) {
            if (events[i].data.fd == loop->eventfd) {
                uint64_t value;
                (void)!read(loop->eventfd, &value, sizeof value);
                continue;
            }
            struct signalfd_siginfo si;
            while (read(loop->signalfd, &si, sizeof si) == (ssize_t)sizeof si) {
                print_counts(loop);
                if (si.ssi_signo != SIGUSR1)
                    return 0;
            }
        }
    }
}

FIXTURE_FRAME int run_idle(const struct fixture_args *args)
{
    (void)args;
    struct idle_loop loop;
    idle_loop_open(&loop);
    print_ready();
    int status = idle_wait_loop(&loop);
    KEEP_FRAME();
    return status;
}

/* ---- slow-start ---------------------------------------------------------------------- */

FIXTURE_FRAME uint64_t slow_startup_init(double seconds)
{
    uint64_t acc = burn_cpu_until(mono_ns() + seconds_to_ns(seconds));
    KEEP_FRAME();
    return acc;
}

/* SIGTERM keeps its default action during start-up (so a test can kill a slow
 * start at once); the idle loop blocks it afterwards and exits cleanly on it. */
FIXTURE_FRAME int run_slow_start(const struct fixture_args *args)
{
    double seconds;
    if (!parse_seconds(args->pos[0], &seconds))
        usage_error("slow-start: not a number of seconds: %s", args->pos[0]);
    int log_fd = stall_log_open(args->log_path);

    struct stamp start, end;
    print_ready();
    stamp_now(&start);
    slow_startup_init(seconds);
    KEEP_FRAME();
    stamp_now(&end);
    stall_log_append(log_fd, "launch", &start, &end);

    struct idle_loop loop;
    idle_loop_open(&loop);
    puts("init-done");
    fflush(stdout);
    int status = idle_wait_loop(&loop);
    KEEP_FRAME();
    return status;
}

/* park: a process with no event loop that waits for signals, like nginx's master or
 * a supervisor: sigsuspend until SIGTERM/SIGINT. */
static volatile sig_atomic_t park_done;

static void park_handler(int signo)
{
    (void)signo;
    park_done = 1;
}

FIXTURE_FRAME int park_for_signals(void)
{
    static const int signals[] = { SIGTERM, SIGINT };
    block_signals(signals, sizeof signals / sizeof signals[0]);
    struct sigaction sa = { .sa_handler = park_handler };
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigset_t none;
    sigemptyset(&none);
    while (!park_done)
        sigsuspend(&none);
    KEEP_FRAME();
    return 0;
}

int run_park(const struct fixture_args *args)
{
    (void)args;
    print_ready();
    return park_for_signals();
}

/* ---- spawner ------------------------------------------------------------------------- */

/* spawner N [EVERY]: a supervisor with N idle workers (forked, not exec'd: each runs
 * run_idle's loop), forking one more every EVERY seconds. Between forks it waits in
 * sigtimedwait, a parking call, so it is asleep like the family it heads. Each fork is
 * announced as `forked pid=P mono=SECONDS` (CLOCK_MONOTONIC, taken just before the fork):
 * the bench times how soon the agent attaches to a new worker from it. SIGTERM or SIGINT
 * ends the workers and then the spawner. */

static pid_t spawner_children[4096];
static int spawner_count;

static FIXTURE_FRAME pid_t spawn_idle_worker(void)
{
    double mono = (double)mono_ns() / 1e9;
    pid_t child = fork();
    if (child < 0)
        fatal_errno("fork");
    if (child == 0) {
        /* A spawner killed outright (SIGKILL) takes its workers with it. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() == 1)
            _exit(0);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        struct idle_loop loop;
        idle_loop_open(&loop);
        _exit(idle_wait_loop(&loop));
    }
    if (spawner_count < (int)(sizeof spawner_children / sizeof spawner_children[0]))
        spawner_children[spawner_count++] = child;
    printf("forked pid=%d mono=%.6f\n", (int)child, mono);
    fflush(stdout);
    return child;
}

FIXTURE_FRAME int run_spawner(const struct fixture_args *args)
{
    long count = strtol(args->pos[0], NULL, 10);
    if (count < 0 || count > 4000)
        usage_error("spawner: N must be 0..4000: %s", args->pos[0]);
    double every = 0;
    if (args->npos > 1 && (!parse_seconds(args->pos[1], &every) || every <= 0))
        usage_error("spawner: not a number of seconds: %s", args->pos[1]);
    static const int signals[] = { SIGTERM, SIGINT, SIGCHLD };
    sigset_t set = block_signals(signals, sizeof signals / sizeof signals[0]);
    for (long i = 0; i < count; i++)
        spawn_idle_worker();
    print_ready();
    uint64_t next = mono_ns() + seconds_to_ns(every);
    for (;;) {
        struct timespec timeout = { 3600, 0 };
        if (every > 0) {
            uint64_t now = mono_ns();
            uint64_t left = next > now ? next - now : 0;
            timeout.tv_sec = (time_t)(left / 1000000000u);
            timeout.tv_nsec = (long)(left % 1000000000u);
        }
        int sig = sigtimedwait(&set, NULL, &timeout);
        if (sig == SIGTERM || sig == SIGINT)
            break;
        if (sig == SIGCHLD) {
            while (waitpid(-1, NULL, WNOHANG) > 0) {}
            continue;
        }
        if (every > 0 && mono_ns() >= next) {
            spawn_idle_worker();
            next += seconds_to_ns(every);
        }
    }
    for (int i = 0; i < spawner_count; i++)
        kill(spawner_children[i], SIGTERM);
    while (waitpid(-1, NULL, 0) > 0) {}
    KEEP_FRAME();
    return 0;
}
