#define _GNU_SOURCE
#include "CPosix.h"
#include <fcntl.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/uio.h>

#include <errno.h>
#include <spawn.h>
#include <string.h>
#include <sys/prctl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>



int sa_spawn(const char *path, char *const argv[], char *const envp[], int new_group, pid_t *pid) {
  const int inherit[3] = {-1, -1, -1};
  return sa_spawn_stdio(path, argv, envp, new_group, inherit, NULL, pid);
}

int sa_spawn_stdio(const char *path, char *const argv[], char *const envp[], int new_group,
                   const int stdio[3], const char *directory, pid_t *pid) {
  posix_spawn_file_actions_t actions;
  int rc = posix_spawn_file_actions_init(&actions);
  if (rc != 0) return rc;
  for (int target = 0; target < 3 && rc == 0; target++) {
    if (stdio[target] >= 0) rc = posix_spawn_file_actions_adddup2(&actions, stdio[target], target);
  }
  if (rc == 0 && directory != NULL) rc = posix_spawn_file_actions_addchdir_np(&actions, directory);
  posix_spawnattr_t attr;
  if (rc == 0) rc = posix_spawnattr_init(&attr);
  if (rc != 0) {
    posix_spawn_file_actions_destroy(&actions);
    return rc;
  }
  // Not the agent's mask or actions: it blocks the signals it reads from a signalfd and
  // ignores SIGPIPE; a child with SIGTERM blocked could not be stopped by it.
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  if (new_group) {
    posix_spawnattr_setpgroup(&attr, 0);
    flags |= POSIX_SPAWN_SETPGROUP;
  }
  posix_spawnattr_setflags(&attr, flags);
  if (strchr(path, '/') != NULL) {
    rc = posix_spawn(pid, path, &actions, &attr, argv, envp);
  } else {
    rc = posix_spawnp(pid, path, &actions, &attr, argv, envp);
  }
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  return rc;
}

int sa_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

int sa_set_child_subreaper(void) { return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); }

pid_t sa_reap_one(int *status, int *signaled) {
  siginfo_t info;
  memset(&info, 0, sizeof info);
  if (waitid(P_ALL, 0, &info, WEXITED | WNOHANG) != 0) return -1;
  if (info.si_pid == 0) return 0;
  if (info.si_code == CLD_EXITED) {
    *status = info.si_status;
    *signaled = 0;
  } else {
    *status = 128 + info.si_status;
    *signaled = info.si_status;
  }
  return info.si_pid;
}

socklen_t sa_unix_address(const char *path, struct sockaddr_un *address) {
  memset(address, 0, sizeof *address);
  address->sun_family = AF_UNIX;
  size_t path_length = strlen(path);
  if (path_length == 0 || path_length >= sizeof address->sun_path) return 0;
  memcpy(address->sun_path, path, path_length);
  socklen_t length = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + path_length);
  if (path[0] == '@') {
    address->sun_path[0] = '\0';
    return length;
  }
  return length + 1;
}

int sa_send_unix_datagram(int fd, const char *path, const void *payload, size_t length, int pass_fd) {
  struct sockaddr_un address;
  socklen_t address_length = sa_unix_address(path, &address);
  if (address_length == 0) return ENAMETOOLONG;
  struct iovec iov = {.iov_base = (void *)payload, .iov_len = length};
  struct msghdr message;
  memset(&message, 0, sizeof message);
  message.msg_name = &address;
  message.msg_namelen = address_length;
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  union {
    struct cmsghdr header;
    char bytes[CMSG_SPACE(sizeof(int))];
  } control;
  if (pass_fd >= 0) {
    memset(&control, 0, sizeof control);
    message.msg_control = control.bytes;
    message.msg_controllen = sizeof control.bytes;
    struct cmsghdr *c = CMSG_FIRSTHDR(&message);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
  }
  for (;;) {
    if (sendmsg(fd, &message, MSG_NOSIGNAL | MSG_DONTWAIT) >= 0) return 0;
    if (errno != EINTR) return errno;
  }
}

int sa_sealed_memfd(const char *name, const void *bytes, size_t length) {
  int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -1;
  const char *cursor = bytes;
  size_t left = length;
  while (left > 0) {
    ssize_t n = write(fd, cursor, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      int saved = errno;
      close(fd);
      errno = saved;
      return -1;
    }
    cursor += n;
    left -= (size_t)n;
  }
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

int sa_pidfd_open(pid_t pid) {
  // PIDFD_NONBLOCK is not needed: the descriptor is only ever signalled through.
  return (int)syscall(SYS_pidfd_open, pid, 0);
}

int sa_pidfd_send_signal(int pidfd, int sig) {
  return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

ssize_t sa_read_memory(pid_t pid, uint64_t address, void *buffer, size_t length) {
  struct iovec local = {.iov_base = buffer, .iov_len = length};
  struct iovec remote = {.iov_base = (void *)(uintptr_t)address, .iov_len = length};
  return process_vm_readv(pid, &local, 1, &remote, 1, 0);
}
