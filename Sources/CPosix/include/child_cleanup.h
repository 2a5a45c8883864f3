#ifndef SA_CHILD_CLEANUP_H
#define SA_CHILD_CLEANUP_H

// For the benchmark: on SIGINT, SIGTERM or SIGHUP, SIGKILL every child of this process (read
// from /proc/self/task/*/children inside the handler, with async-signal-safe calls only), then
// die of the signal. A benchmark stopped by `timeout` or Ctrl-C otherwise leaves its targets
// running, and they disturb every later measurement on the machine.
int sa_kill_children_on_termination(void);

#endif
