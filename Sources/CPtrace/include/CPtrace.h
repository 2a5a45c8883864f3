#ifndef CPTRACE_H
#define CPTRACE_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "stop_guard.h"

// glibc's ptrace is variadic and waitpid's status accessors are macros; Swift can call
// neither, so every ptrace-family call the agent makes goes through these wrappers.
// Each returns the raw libc result; errno is left for the caller.

/// PTRACE_SEIZE one thread (no stop, no signal), with the given PTRACE_O_* options.
long sa_ptrace_seize(pid_t tid, unsigned long options);
/// PTRACE_INTERRUPT: ask a seized thread to enter a ptrace-stop.
long sa_ptrace_interrupt(pid_t tid);
/// PTRACE_GETREGS into a user_regs_struct.
long sa_ptrace_getregs(pid_t tid, struct user_regs_struct *regs);
/// PTRACE_CONT, re-injecting `sig` (0 for none).
long sa_ptrace_cont(pid_t tid, int sig);
/// PTRACE_DETACH, re-injecting `sig` (0 for none).
long sa_ptrace_detach(pid_t tid, int sig);

/// waitpid(tid, &status, __WALL | WNOHANG): never blocks.
pid_t sa_waitpid_nohang(pid_t tid, int *status);

int sa_wifstopped(int status);
int sa_wifexited(int status);
int sa_wifsignaled(int status);
int sa_wstopsig(int status);
int sa_wexitstatus(int status);
int sa_wtermsig(int status);
/// The PTRACE_EVENT_* in a stop status (status >> 16), 0 for a plain stop.
int sa_wptrace_event(int status);

#endif
