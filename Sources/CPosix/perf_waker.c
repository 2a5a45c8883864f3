#include "perf_waker.h"
#include <linux/perf_event.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

// One metadata page and one data page: the records are never read, only their arrival
// matters, so the smallest ring the kernel accepts is enough.
static size_t ring_size(void) { return 2 * (size_t)sysconf(_SC_PAGESIZE); }

int sa_perf_waker_open(uint64_t config, pid_t tid, void **ring) {
  struct perf_event_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_TRACEPOINT;
  attr.config = config;
  attr.sample_period = 1;
  attr.sample_type = PERF_SAMPLE_TIME;
  attr.wakeup_events = 1;
  attr.disabled = 1;
  int fd = (int)syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) return -1;
  void *map = mmap(NULL, ring_size(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) {
    close(fd);
    return -1;
  }
  *ring = map;
  return fd;
}

int sa_perf_waker_arm(int fd, void *ring) {
  struct perf_event_mmap_page *page = ring;
  // Consume whatever an earlier wake left, so poll() waits for a new exit.
  page->data_tail = __atomic_load_n(&page->data_head, __ATOMIC_ACQUIRE);
  return ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
}

int sa_perf_waker_disarm(int fd) { return ioctl(fd, PERF_EVENT_IOC_DISABLE, 0); }

void sa_perf_waker_close(int fd, void *ring) {
  if (ring) munmap(ring, ring_size());
  if (fd >= 0) close(fd);
}
