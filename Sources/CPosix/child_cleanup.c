#define _GNU_SOURCE
#include "child_cleanup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

// Kills every pid listed in one task's `children` file ("12 34 \n").
static void kill_listed(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char buf[4096];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return;
  long pid = 0;
  int digits = 0;
  for (ssize_t i = 0; i <= n; i++) {
    char c = i < n ? buf[i] : ' ';
    if (c >= '0' && c <= '9') {
      pid = pid * 10 + (c - '0');
      digits = 1;
    } else {
      if (digits && pid > 1) kill((pid_t)pid, SIGKILL);
      pid = 0;
      digits = 0;
    }
  }
}

static void on_termination(int sig) {
  int saved = errno;
  int dir = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    char entries[4096];
    long n;
    while ((n = syscall(SYS_getdents64, dir, entries, sizeof entries)) > 0) {
      for (long at = 0; at < n;) {
        struct dirent64 *entry = (struct dirent64 *)(entries + at);
        at += entry->d_reclen;
        if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
        char path[64] = "/proc/self/task/";
        size_t len = strlen(path);
        size_t name = strlen(entry->d_name);
        if (len + name + sizeof "/children" > sizeof path) continue;
        memcpy(path + len, entry->d_name, name);
        memcpy(path + len + name, "/children", sizeof "/children");
        kill_listed(path);
      }
    }
    close(dir);
  }
  errno = saved;
  signal(sig, SIG_DFL);
  raise(sig);
}

int sa_kill_children_on_termination(void) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = on_termination;
  sigemptyset(&action.sa_mask);
  const int signals[] = {SIGINT, SIGTERM, SIGHUP};
  for (unsigned i = 0; i < sizeof signals / sizeof signals[0]; i++) {
    if (sigaction(signals[i], &action, NULL) != 0) return -1;
  }
  return 0;
}
