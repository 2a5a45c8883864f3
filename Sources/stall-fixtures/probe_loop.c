/* Mode `probe-loop PID SECONDS`: the floor an idle watch is measured against (issue 14): a
 * bare C loop that does only what the agent's probe must do, pread
 * /proc/PID/task/PID/syscall from a kept-open fd every 10 ms (jittered ±20 % like the
 * agent), for SECONDS, then prints `cpu_seconds=S rounds=N`. */
#define _GNU_SOURCE
#include "include/stall_fixtures.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

int run_probe_loop(const struct fixture_args *args)
{
    long pid = 0, seconds = 0;
    if (!parse_long(args->pos[0], 1, 4194304, &pid) || !parse_long(args->pos[1], 1, 86400, &seconds))
        usage_error("probe-loop: PID and SECONDS must be positive integers");
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/task/%ld/syscall", pid, pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        fatal_errno("open syscall file");
    char buffer[256];
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double start = now.tv_sec + now.tv_nsec / 1e9, next = start;
    unsigned long rounds = 0;
    unsigned int seed = (unsigned int)pid;
    for (;;) {
        if (pread(fd, buffer, sizeof buffer, 0) <= 0)
            break;
        rounds++;
        next += 0.010 * (0.8 + 0.4 * rand_r(&seed) / (double)RAND_MAX);
        struct timespec at = { (time_t)next, (long)((next - (time_t)next) * 1e9) };
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL);
        if (next - start >= seconds)
            break;
    }
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    printf("cpu_seconds=%.6f rounds=%lu\n",
           usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6,
           rounds);
    return 0;
}
