#ifndef STOP_GUARD_H
#define STOP_GUARD_H

#include <sys/types.h>

// While the agent holds a target thread in a ptrace stop (a "capture window", tens of
// microseconds), the agent itself being stopped would leave the target frozen in `t` until
// the agent is continued. Two defences:
// - SIGTSTP/SIGTTIN/SIGTTOU (Ctrl-Z, background terminal I/O) get a handler that stops the
//   agent at once outside a window, and only when the window closes inside one.
// - SIGSTOP cannot be caught: a small guardian process (forked once, in C, doing nothing but
//   syscalls) wakes when a window has stayed open 5 ms (a timerfd the agent arms when a
//   window opens and disarms when it closes, so an ordinary capture wakes nobody) and, if it
//   finds the capturing thread stopped while the window is still open, sends SIGCONT; the
//   agent finishes the capture, releases the target, and stops itself again at the window's
//   end.

/// Installs the job-control handlers and starts the guardian (idempotent). 0 or -1 (errno);
/// without a guardian the handlers still work.
int sa_stop_guard_install(void);
/// Marks the start of a capture window on the calling thread.
void sa_capture_window_begin(void);
/// Marks its end; stops the agent now if a stop was requested during the window.
void sa_capture_window_end(void);
/// Times the guardian resumed a stopped agent to finish a window.
unsigned long sa_stop_guard_rescues(void);
/// The guardian's pid, or 0.
pid_t sa_stop_guard_pid(void);

#endif
