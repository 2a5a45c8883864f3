#ifndef SA_PERF_RELEASE_H
#define SA_PERF_RELEASE_H

#include <stdint.h>

/// A disabled per-thread event on tracepoint `config`, on the calling thread. It counts
/// nothing; while it is open the kernel keeps the tracepoint registered for perf, so closing
/// other events on it does not wait for an RCU grace period (~40 ms each on this machine).
/// Returns the fd, or -1 with errno.
int sa_perf_tracepoint_anchor(uint64_t config);

/// At exit: forks a child that holds this process's perf_event descriptors (and nothing
/// else: no standard streams, sockets or files) and exits, so the kernel's slow release of
/// tracepoint events (an RCU grace period per tracepoint, ~0.3 s for the loop counters)
/// happens in the child after this process is gone. Returns at once; does nothing when no
/// perf_event descriptor is open or fork fails.
void sa_perf_release_in_background(void);

#endif
