// libstallprobe.so: the Linux twin of a RunLoop observer. Injected with LD_PRELOAD, it wraps
// the calls an event loop idles in (epoll_wait and friends, poll, select) and, on the main
// thread only, records "about to wait" and "woke up" times and counts loop iterations.
// stallagent reads them from outside, so loop boundaries are exact and idle gaps shorter
// than its probe interval are not missed. No locks, no allocation, no syscalls beyond the
// wrapped call and two vDSO clock reads.
#define _GNU_SOURCE
#include "stallprobe.h"

#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

__attribute__((visibility("default"))) struct stallprobe_state stallprobe_state = {
    .magic = "STALLPROBE v1",
};

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

// The main thread is the one that loaded us (constructors run there); after fork, the
// forking thread is the child's only — so main — thread. pthread_self is a register read.
static pthread_t main_thread;

static void remember_main_thread(void) { main_thread = pthread_self(); }

__attribute__((constructor)) static void stallprobe_init(void) {
  remember_main_thread();
  pthread_atfork(NULL, NULL, remember_main_thread);
}

static int on_main_thread(void) { return pthread_equal(pthread_self(), main_thread); }

static void before_wait(void) {
  if (!on_main_thread()) return;
  stallprobe_state.main_tid = (uint32_t)getpid();
  uint64_t t = now_ns();
  uint64_t n = stallprobe_state.iterations + 1;
  stallprobe_state.ring[n % STALLPROBE_RING].wait_ns = t;
  stallprobe_state.ring[n % STALLPROBE_RING].woke_ns = 0;
  __atomic_store_n(&stallprobe_state.about_to_wait_ns, t, __ATOMIC_RELAXED);
  __atomic_store_n(&stallprobe_state.iterations, n, __ATOMIC_RELEASE);
  __atomic_store_n(&stallprobe_state.in_wait, 1, __ATOMIC_RELEASE);
}

static void after_wait(void) {
  if (!on_main_thread()) return;
  uint64_t t = now_ns();
  stallprobe_state.ring[stallprobe_state.iterations % STALLPROBE_RING].woke_ns = t;
  __atomic_store_n(&stallprobe_state.woke_ns, t, __ATOMIC_RELAXED);
  __atomic_store_n(&stallprobe_state.in_wait, 0, __ATOMIC_RELEASE);
}

#define NEXT(name) \
  static __typeof__(&name) real; \
  if (!real) real = (__typeof__(&name))dlsym(RTLD_NEXT, #name)

int epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout) {
  NEXT(epoll_wait);
  before_wait();
  int rc = real(epfd, events, maxevents, timeout);
  after_wait();
  return rc;
}

int epoll_pwait(int epfd, struct epoll_event *events, int maxevents, int timeout, const sigset_t *sigmask) {
  NEXT(epoll_pwait);
  before_wait();
  int rc = real(epfd, events, maxevents, timeout, sigmask);
  after_wait();
  return rc;
}

int epoll_pwait2(int epfd, struct epoll_event *events, int maxevents, const struct timespec *timeout,
                 const sigset_t *sigmask) {
  NEXT(epoll_pwait2);
  before_wait();
  int rc = real(epfd, events, maxevents, timeout, sigmask);
  after_wait();
  return rc;
}

int poll(struct pollfd *fds, nfds_t nfds, int timeout) {
  NEXT(poll);
  before_wait();
  int rc = real(fds, nfds, timeout);
  after_wait();
  return rc;
}

int ppoll(struct pollfd *fds, nfds_t nfds, const struct timespec *timeout, const sigset_t *sigmask) {
  NEXT(ppoll);
  before_wait();
  int rc = real(fds, nfds, timeout, sigmask);
  after_wait();
  return rc;
}

int select(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds, struct timeval *timeout) {
  NEXT(select);
  before_wait();
  int rc = real(nfds, readfds, writefds, exceptfds, timeout);
  after_wait();
  return rc;
}

int pselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds, const struct timespec *timeout,
            const sigset_t *sigmask) {
  NEXT(pselect);
  before_wait();
  int rc = real(nfds, readfds, writefds, exceptfds, timeout, sigmask);
  after_wait();
  return rc;
}
