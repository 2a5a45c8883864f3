#ifndef SA_PERF_WAKER_H
#define SA_PERF_WAKER_H

#include <stdint.h>
#include <sys/types.h>

/// A disabled sampling event on the `raw_syscalls:sys_exit` tracepoint (`config` = its id
/// from tracefs) of one thread, with a one-page ring mapped so that poll(2) on the returned fd
/// reports POLLIN once the thread leaves a system call while armed. Returns the fd, or -1 with
/// errno; `*ring` receives the mapping (unmap with sa_perf_waker_close).
int sa_perf_waker_open(uint64_t config, pid_t tid, void **ring);
/// Forgets any pending record and enables the event. 0, or -1 with errno.
int sa_perf_waker_arm(int fd, void *ring);
/// Disables the event. 0, or -1 with errno.
int sa_perf_waker_disarm(int fd);
/// The CLOCK_MONOTONIC time of the first system-call exit recorded since the last arm (the
/// thread leaving its wait). 0, or -1 when none is recorded.
int sa_perf_waker_first_exit(const void *ring, uint64_t *time_ns);
void sa_perf_waker_close(int fd, void *ring);

#endif
