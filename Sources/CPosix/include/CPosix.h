#ifndef CPOSIX_H
#define CPOSIX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "safe_file.h"
#include "sigbus_guard.h"
#include "signal_inbox.h"
#include "perf_waker.h"
#include "perf_release.h"
#include "perf_stack_sampler.h"
#include "child_cleanup.h"

// POSIX and Linux calls Swift cannot make directly (variadic, macro-only or missing from the
// Glibc module) that have nothing to do with ptrace: spawning and reaping, AF_UNIX datagrams,
// sealed memfds, perf counters, fstatfs, the SIGBUS guard for mapped files. Each returns the
// raw libc result or an errno as documented.

/// Spawns `path` (searched in PATH when it has no slash) with `argv`/`envp`, with every
/// signal unblocked and at its default action in the child, whatever the agent inherited.
/// With `new_group` nonzero the child leads a process group of its own (POSIX_SPAWN_SETPGROUP).
/// Returns 0 and sets *pid, or an errno (ENOENT: not found; EACCES/ENOEXEC: not executable).
int sa_spawn(const char *path, char *const argv[], char *const envp[], int new_group, pid_t *pid);

/// process_vm_readv of one contiguous range; returns bytes read or -1. No stop: the same
/// permission check as ptrace, but the target runs on.
ssize_t sa_read_memory(pid_t pid, uint64_t address, void *buffer, size_t length);

/// sa_spawn with the child's stdin, stdout and stderr taken from `stdio[0..2]` (dup2'd in
/// the child; -1 leaves that one inherited), started in `directory` (NULL: this process's).
int sa_spawn_stdio(const char *path, char *const argv[], char *const envp[], int new_group,
                   const int stdio[3], const char *directory, pid_t *pid);

/// pipe2(O_CLOEXEC): a child spawned by another thread meanwhile does not inherit it.
int sa_pipe_cloexec(int fds[2]);

/// prctl(PR_SET_CHILD_SUBREAPER, 1): orphaned descendants are re-parented to us, not init,
/// so a wrapper can watch and reap them.
int sa_set_child_subreaper(void);

/// waitid(P_ALL, WEXITED | WNOHANG): reaps one exited child without consuming ptrace stops
/// of threads being captured. Returns the pid, 0 if none, -1 with errno (ECHILD: no children).
/// *status is the exit code, or 128 + signal for a signal death (the shell convention).
pid_t sa_reap_one(int *status, int *signaled);

/// Sends one datagram, never blocking (EAGAIN when the reader is behind), on an unconnected
/// AF_UNIX socket `fd` to `path` (a leading "@" names
/// an abstract socket). With `pass_fd` >= 0 the payload may be empty and `pass_fd` travels
/// as SCM_RIGHTS (the journal's way to take an entry too big for one datagram).
/// Returns 0 or an errno.
int sa_send_unix_datagram(int fd, const char *path, const void *payload, size_t length, int pass_fd);

struct sockaddr_un;
/// Fills an AF_UNIX address for `path` ('@' prefix: abstract namespace, no trailing NUL
/// counted); returns its length, or 0 when the path is empty or too long. The tests' receiving
/// ends bind with it.
unsigned int sa_unix_address(const char *path, struct sockaddr_un *address);  // a socklen_t

/// memfd_create + write + F_SEAL_*: an immutable in-memory file holding `bytes`.
/// Returns the fd or -1 with errno.
int sa_sealed_memfd(const char *name, const void *bytes, size_t length);

/// perf_event_open(2) of a counting event on a tracepoint (`config` = the id from tracefs's
/// events/<group>/<name>/id) for one thread on any CPU. Members of a group (`group_fd` ≥ 0)
/// are read together with the leader (PERF_FORMAT_GROUP). Returns the fd or -1 with errno.
int sa_perf_tracepoint_counter(uint64_t config, pid_t tid, int group_fd);

/// What the wait stamps written since the last drain add up to (sa_perf_wait_stamps_drain).
typedef struct {
  // In: the thread's home wait site as the user PC and SP of the system call (what
  // /proc/TID/syscall shows; 0, 0 when none is known), and the ids of the entry events
  // (PERF_EVENT_IOC_ID; the others are exits).
  uint64_t home_pc, home_sp;
  uint64_t entry_ids[8];
  int entry_id_count;
  // Out. Times are CLOCK_MONOTONIC ns, 0 for none.
  int stamps;
  int lost;             // the kernel dropped some (a full ring): the rest is not the whole story
  int other_sites;      // stamps at another site; the first one's PC and SP:
  uint64_t other_pc, other_sp;
  int last_entered;     // the last stamp: an entry (1) or an exit, and when
  uint64_t last_ns;
  uint64_t last_home_entry_ns;  // the last entry at home
  uint64_t left_home_ns;        // an exit from home after it (0: none since)
} sa_wait_stamp_summary;

/// Like sa_perf_tracepoint_counter, but every hit also writes a stamp (time, user SP and PC)
/// into a ring: the first event opened with `ring_fd` < 0 maps one (`*ring`, `*ring_bytes`);
/// later ones send theirs to it (`ring_fd`). Events with `group_fd` < 0 and `counted` 0 are
/// outside the group (the exits: stamps only). `*id` is the event's id. Returns the fd or -1
/// with errno; nothing is left open on failure.
int sa_perf_tracepoint_stamper(uint64_t config, pid_t tid, int group_fd, int ring_fd, void **ring, size_t *ring_bytes,
                               uint64_t *id);

/// Consumes the stamps written since the last call and adds them up into `summary`'s out
/// fields.
void sa_perf_wait_stamps_drain(void *ring, size_t ring_bytes, sa_wait_stamp_summary *summary);

/// Unmaps what sa_perf_tracepoint_stamper mapped.
void sa_perf_wait_stamps_unmap(void *ring, size_t ring_bytes);

/// pidfd_open(2), close-on-exec: a descriptor that names this process, never a later one that
/// reuses its pid. Returns the fd or -1 with errno.
int sa_pidfd_open(pid_t pid);

/// pidfd_send_signal(2): signals the process `pidfd` names, or fails with ESRCH once it is
/// gone (even if its pid now names another). Returns 0 or -1 with errno.
int sa_pidfd_send_signal(int pidfd, int sig);

#endif
