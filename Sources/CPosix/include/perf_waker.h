#ifndef SA_PERF_WAKER_H
#define SA_PERF_WAKER_H

#include <stdint.h>
#include <sys/types.h>

/// A disabled event recording one thread's context switches, with a one-page ring mapped so
/// that poll(2) on the returned fd reports POLLIN once the thread is switched in or out while
/// armed (POLLHUP once it exits). Returns the fd, or -1 with errno; `*ring` receives the
/// mapping (unmap with sa_perf_waker_close).
int sa_perf_waker_open(pid_t tid, void **ring);
/// Forgets any pending record and enables the event. 0, or -1 with errno.
int sa_perf_waker_arm(int fd, void *ring);
/// Disables the event. 0, or -1 with errno.
int sa_perf_waker_disarm(int fd);
/// The CLOCK_MONOTONIC time the thread was first switched in since the last arm (armed asleep
/// in its wait: the wait returning). 0, or -1 when none is recorded or the first record is a
/// switch-out (the thread was running when armed).
int sa_perf_waker_first_exit(const void *ring, uint64_t *time_ns);
void sa_perf_waker_close(int fd, void *ring);

#endif
