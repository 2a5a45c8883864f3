#pragma once
#include <sys/types.h>

// The receiving ends the tests need (sd_notify, the journal), whose cmsg macros Swift cannot
// call: test support, not part of the agent.

/// A bound AF_UNIX datagram socket at `path` ('@' prefix: abstract), close-on-exec, with a
/// 16 MiB receive buffer. Returns the fd or -1 with errno.
int sa_bind_unix_datagram(const char *path);

/// Receives one datagram into `buffer`; a descriptor passed with it (SCM_RIGHTS) goes to
/// *passed_fd (else -1). Returns the byte count or -1 with errno.
ssize_t sa_recv_with_fd(int fd, void *buffer, size_t length, int *passed_fd);
