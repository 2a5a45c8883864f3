#define _GNU_SOURCE
#include "CTestSupport.h"
#include "CPosix.h"
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int sa_bind_unix_datagram(const char *path) {
  struct sockaddr_un address;
  socklen_t address_length = sa_unix_address(path, &address);
  if (address_length == 0) {
    errno = ENAMETOOLONG;
    return -1;
  }
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int size = 16 * 1024 * 1024;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size);
  if (bind(fd, (struct sockaddr *)&address, address_length) != 0) {
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

ssize_t sa_recv_with_fd(int fd, void *buffer, size_t length, int *passed_fd) {
  struct iovec iov = {.iov_base = buffer, .iov_len = length};
  union {
    struct cmsghdr header;
    char bytes[CMSG_SPACE(sizeof(int))];
  } control;
  struct msghdr message;
  memset(&message, 0, sizeof message);
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  message.msg_control = control.bytes;
  message.msg_controllen = sizeof control.bytes;
  *passed_fd = -1;
  ssize_t n = recvmsg(fd, &message, MSG_CMSG_CLOEXEC);
  if (n < 0) return -1;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(&message); c != NULL; c = CMSG_NXTHDR(&message, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) memcpy(passed_fd, CMSG_DATA(c), sizeof(int));
  }
  return n;
}

