#ifndef SIGBUS_GUARD_H
#define SIGBUS_GUARD_H

#include <stddef.h>

// Files the agent maps can be truncated by whoever owns them (the watched process's user):
// touching a page past the new end raises SIGBUS, which would kill the agent. Registered
// ranges are made fault-proof instead: the handler maps a zero page over the faulting page
// and returns, so the read sees zeros, and the range's fault count tells its owner that the
// file changed under it. Faults outside every range go to the previous handler (or kill).

/// Installs the handler once (idempotent). 0 on success, -1 with errno.
int sa_sigbus_guard_install(void);
/// Registers [start, start+length); returns a slot for the calls below, or -1 when full.
int sa_sigbus_guard_add(void *start, size_t length);
/// Unregisters a slot (before the range is unmapped).
void sa_sigbus_guard_remove(int slot);
/// Pages of this slot replaced after a fault since it was added.
unsigned long sa_sigbus_guard_slot_faults(int slot);
/// Pages replaced in all ranges since the process started.
unsigned long sa_sigbus_guard_total_faults(void);

#endif
