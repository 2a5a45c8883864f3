/* Modes whose main thread is an idle event loop: idle, and slow-start (a long
 * start-up, then the same loop). */
#define _GNU_SOURCE
#include "include/stall_fixtures.h"

#include <errno.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
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
