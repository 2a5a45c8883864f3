#define _GNU_SOURCE
#include "CPtrace.h"

#include <signal.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>

long sa_ptrace_seize(pid_t tid, unsigned long options) {
  return ptrace(PTRACE_SEIZE, tid, 0, (void *)options);
}

long sa_ptrace_interrupt(pid_t tid) { return ptrace(PTRACE_INTERRUPT, tid, 0, 0); }

long sa_ptrace_getregs(pid_t tid, struct user_regs_struct *regs) {
  return ptrace(PTRACE_GETREGS, tid, 0, regs);
}

long sa_ptrace_cont(pid_t tid, int sig) { return ptrace(PTRACE_CONT, tid, 0, (void *)(long)sig); }

long sa_ptrace_detach(pid_t tid, int sig) {
  return ptrace(PTRACE_DETACH, tid, 0, (void *)(long)sig);
}

pid_t sa_waitpid_nohang(pid_t tid, int *status) { return waitpid(tid, status, __WALL | WNOHANG); }

int sa_wifstopped(int status) { return WIFSTOPPED(status); }
int sa_wifexited(int status) { return WIFEXITED(status); }
int sa_wifsignaled(int status) { return WIFSIGNALED(status); }
int sa_wstopsig(int status) { return WSTOPSIG(status); }
int sa_wexitstatus(int status) { return WEXITSTATUS(status); }
int sa_wtermsig(int status) { return WTERMSIG(status); }
int sa_wptrace_event(int status) { return (status >> 16) & 0xff; }

