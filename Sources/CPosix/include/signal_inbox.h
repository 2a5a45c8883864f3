#ifndef SIGNAL_INBOX_H
#define SIGNAL_INBOX_H

#include <stddef.h>
#include <stdint.h>
#include <poll.h>
#include <sys/types.h>

// The agent's own signals are taken synchronously: blocked in every thread and read from a
// signalfd by the loop, so no Swift code runs in a handler and a loop asleep in poll wakes
// as soon as one is queued (a handler's flag could be set between the loop's check and its
// sleep). glibc's signalfd and ppoll are not in Swift's Glibc module.

/// Blocks `signals` in the calling thread (threads it starts afterwards inherit the mask)
/// and returns a close-on-exec, non-blocking signalfd that receives them, or -1 with errno.
int sa_signal_inbox_open(const int *signals, size_t count);

/// Takes one queued signal from `fd`: 1 with its number and si_code (SI_KERNEL, 0x80, when a
/// terminal generated it); 0 when none is queued; -1 with errno.
int sa_signal_inbox_take(int fd, int *signal_number, int *code);

#endif
