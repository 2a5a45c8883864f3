/* Mode `syscall-loop SECONDS WAITMS`: what a watch costs a system call (issue 23). An epoll
 * event loop whose every turn waits up to WAITMS ms in epoll_wait (0: never blocks, a
 * saturated loop such as Redis under load) and then makes 4000 getppid calls, timed by the
 * thread's own CPU clock. After SECONDS it prints
 * `syscalls=N cpu_ns_per_call=X turns=T`: the CPU cost of one call as the target pays it,
 * over the second half of the run only (an agent attached after the start has settled by
 * then), to compare watched and unwatched. */
#define _GNU_SOURCE
#include "include/stall_fixtures.h"

#include <stdio.h>
#include <sys/epoll.h>
#include <unistd.h>

#define CALLS_PER_TURN 4000

FIXTURE_FRAME static uint64_t syscall_batch(void)
{
    uint64_t sum = 0;
    for (int i = 0; i < CALLS_PER_TURN; i++)
        sum += (uint64_t)getppid();
    KEEP_FRAME();
    return sum;
}

int run_syscall_loop(const struct fixture_args *args)
{
    long seconds = 0, wait_ms = 0;
    if (!parse_long(args->pos[0], 1, 3600, &seconds) || !parse_long(args->pos[1], 0, 1000, &wait_ms))
        usage_error("syscall-loop: SECONDS (1-3600) and WAITMS (0-1000) must be integers");
    int epfd = epoll_create1(EPOLL_CLOEXEC);
    if (epfd < 0)
        fatal_errno("epoll_create1");
    print_ready();
    uint64_t start = mono_ns(), deadline = start + (uint64_t)seconds * 1000000000u;
    uint64_t half = start + (uint64_t)seconds * 500000000u, calls = 0, cpu = 0, turns = 0, sink = 0;
    struct epoll_event event;
    for (uint64_t now = start; now < deadline; now = mono_ns()) {
        epoll_wait(epfd, &event, 1, (int)wait_ms);
        uint64_t before = thread_cpu_ns();
        sink += syscall_batch();
        if (now >= half) {
            cpu += thread_cpu_ns() - before;
            calls += CALLS_PER_TURN;
        }
        turns++;
    }
    printf("syscalls=%llu cpu_ns_per_call=%.1f turns=%llu sink=%llu\n", (unsigned long long)calls,
           calls ? (double)cpu / (double)calls : 0.0, (unsigned long long)turns, (unsigned long long)(sink & 1));
    fflush(stdout);
    return 0;
}
