/* The agent's perf_event users: the loop-turn counters, the loop waker, the stack sampler,
 * and the tracepoint anchors that make closing them cheap. */
#include "CPosix.h"
#include "perf_stack_sampler.h"
#include "perf_release.h"
#include "perf_waker.h"
#include <dirent.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

// Both events are read through an mmap'd ring: one metadata page plus `data_bytes` (a power
// of two of pages). Opens the event described by `attr` on thread `tid` and maps its ring;
// on failure nothing is left open and errno is perf_event_open's or mmap's.
static int open_mapped(struct perf_event_attr *attr, pid_t tid, size_t data_bytes, void **ring, size_t *ring_bytes) {
  int fd = (int)syscall(SYS_perf_event_open, attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) return -1;
  size_t bytes = (size_t)sysconf(_SC_PAGESIZE) + data_bytes;
  void *map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) {
    int error = errno;
    close(fd);
    errno = error;
    return -1;
  }
  *ring = map;
  *ring_bytes = bytes;
  return fd;
}

static void close_mapped(int fd, void *ring, size_t ring_bytes) {
  if (ring) munmap(ring, ring_bytes);
  if (fd >= 0) close(fd);
}

// ---- tracepoint events ------------------------------------------------------------------

// A per-thread or CPU-wide event on one tracepoint (`config` = its id from tracefs).
static void tracepoint_attr(struct perf_event_attr *attr, uint64_t config) {
  memset(attr, 0, sizeof *attr);
  attr->size = sizeof *attr;
  attr->type = PERF_TYPE_TRACEPOINT;
  attr->config = config;
}

int sa_perf_tracepoint_counter(uint64_t config, pid_t tid, int group_fd) {
  struct perf_event_attr attr;
  tracepoint_attr(&attr, config);
  attr.read_format = PERF_FORMAT_GROUP;
  // Counting only (no sample_period): the kernel keeps a number, never wakes us, and never
  // touches the target beyond an increment at syscall entry.
  return (int)syscall(SYS_perf_event_open, &attr, tid, -1, group_fd, PERF_FLAG_FD_CLOEXEC);
}

// ---- reading a mapped ring (stamps, waker, sampler) -----------------------------------

// Copies `n` bytes at ring offset `at` (which may wrap) into `out`.
static void ring_copy(const uint8_t *data, uint64_t size, uint64_t at, void *out, size_t n) {
  uint64_t start = at % size;
  size_t first = n < size - start ? n : (size_t)(size - start);
  memcpy(out, data + start, first);
  if (n > first) memcpy((uint8_t *)out + first, data, n - first);
}

// One pass over a ring's unread records: the head is read once, so records the kernel adds
// during the pass wait for the next one.
struct ring_view {
  struct perf_event_mmap_page *meta;
  const uint8_t *data;
  uint64_t size, head, tail;
};

static struct ring_view ring_open(const void *ring, size_t ring_bytes) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  struct ring_view view = {.meta = (struct perf_event_mmap_page *)ring,
                           .data = (const uint8_t *)ring + page,
                           .size = ring_bytes - page};
  view.head = __atomic_load_n(&view.meta->data_head, __ATOMIC_ACQUIRE);
  view.tail = view.meta->data_tail;
  return view;
}

// The header of the record at the view's tail: 1 when there is one, 0 at the head, -1 when
// its size cannot be right (a torn ring: the caller stops reading it).
static int ring_header(const struct ring_view *view, struct perf_event_header *header) {
  if (view->tail + sizeof *header > view->head) return 0;
  ring_copy(view->data, view->size, view->tail, header, sizeof *header);
  if (header->size < sizeof *header || view->tail + header->size > view->head) return -1;
  return 1;
}

// Copies `n` bytes from `offset` into the record at the view's tail.
static void ring_body(const struct ring_view *view, uint64_t offset, void *out, size_t n) {
  ring_copy(view->data, view->size, view->tail + offset, out, n);
}

// ---- wait stamps ---------------------------------------------------------------------

// perf_regs.h (x86): SP is bit 7, IP bit 8; a sample lists them in bit order.
enum { STAMP_REGS = (1u << 7) | (1u << 8) };

// A stamp is header, identifier, time, ABI, SP, PC: 48 bytes. Two data pages hold 170, a
// round's worth for any loop (drained every round while the thread turns fast, every third
// round while it sits in its wait with few stamps: StampedTurns.nextGlance); a full ring
// drops records and says so (PERF_RECORD_LOST), and the agent probes as it did without.
static size_t stamp_data_bytes(void) { return 2 * (size_t)sysconf(_SC_PAGESIZE); }

int sa_perf_tracepoint_stamper(uint64_t config, pid_t tid, int group_fd, int ring_fd, void **ring, size_t *ring_bytes,
                               uint64_t *id) {
  struct perf_event_attr attr;
  tracepoint_attr(&attr, config);
  attr.read_format = PERF_FORMAT_GROUP;
  attr.sample_period = 1;
  attr.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TIME | PERF_SAMPLE_REGS_USER;
  attr.sample_regs_user = STAMP_REGS;
  attr.use_clockid = 1;
  attr.clockid = CLOCK_MONOTONIC;
  // Never woken: the agent reads the ring at its own pace.
  attr.watermark = 1;
  attr.wakeup_watermark = 1u << 30;
  int fd;
  if (ring_fd < 0) {
    fd = open_mapped(&attr, tid, stamp_data_bytes(), ring, ring_bytes);
    if (fd < 0) return -1;
    // open_mapped has no group: reopen into it when asked (the leader is always the first).
  } else {
    fd = (int)syscall(SYS_perf_event_open, &attr, tid, -1, group_fd, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) return -1;
    if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, ring_fd) != 0) {
      int error = errno;
      close(fd);
      errno = error;
      return -1;
    }
  }
  if (ioctl(fd, PERF_EVENT_IOC_ID, id) != 0) {
    int error = errno;
    if (ring_fd < 0) close_mapped(fd, *ring, *ring_bytes);
    else close(fd);
    errno = error;
    return -1;
  }
  return fd;
}

// Added up here, not handed to Swift one by one: every awake thread of a family is drained
// every round, most of them several stamps at one site.
void sa_perf_wait_stamps_drain(void *ring, size_t ring_bytes, sa_wait_stamp_summary *summary) {
  struct ring_view view = ring_open(ring, ring_bytes);
  summary->stamps = 0;
  summary->lost = 0;
  summary->other_sites = 0;
  summary->last_home_entry_ns = 0;
  summary->left_home_ns = 0;
  struct perf_event_header header;
  int found;
  while ((found = ring_header(&view, &header)) > 0) {
    if (header.type == PERF_RECORD_LOST) summary->lost = 1;
    if (header.type == PERF_RECORD_SAMPLE) {
      uint64_t fields[5] = {0};  // identifier, time, ABI, SP, IP (no registers: ABI 0)
      size_t body = header.size - sizeof header;
      ring_body(&view, sizeof header, fields, body < sizeof fields ? body : sizeof fields);
      uint64_t sp = fields[2] ? fields[3] : 0, pc = fields[2] ? fields[4] : 0;
      int entered = 0;
      for (int i = 0; i < summary->entry_id_count && i < 8; i++) entered |= fields[0] == summary->entry_ids[i];
      summary->stamps++;
      summary->last_entered = entered;
      summary->last_ns = fields[1];
      if (pc != summary->home_pc || sp != summary->home_sp || pc == 0) {
        if (summary->other_sites++ == 0) {
          summary->other_pc = pc;
          summary->other_sp = sp;
        }
      } else if (entered) {
        summary->last_home_entry_ns = fields[1];
        summary->left_home_ns = 0;
      } else {
        summary->left_home_ns = fields[1];
      }
    }
    view.tail += header.size;
  }
  if (found < 0) {
    summary->lost = 1;
    view.tail = view.head;
  }
  __atomic_store_n(&view.meta->data_tail, view.tail, __ATOMIC_RELEASE);
}

void sa_perf_wait_stamps_unmap(void *ring, size_t ring_bytes) {
  if (ring) munmap(ring, ring_bytes);
}

// ---- the loop waker (perf_waker.h) ---------------------------------------------------

// The waker's records are never read, only their arrival matters: the smallest ring.
static size_t waker_ring_bytes(void) { return 2 * (size_t)sysconf(_SC_PAGESIZE); }

int sa_perf_waker_open(pid_t tid, void **ring) {
  struct perf_event_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  // No tracepoint: an event on a `syscalls:`/`raw_syscalls:` tracepoint sends every system
  // call of every thread on the host down the kernel's slow path while it exists (+50 ns a
  // `getppid` here, docs/measured.md). A dummy event's context-switch records cost only the
  // watched thread's switches: the thread asleep in its wait when armed, its first switch-in
  // is the wait returning.
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_DUMMY;
  attr.context_switch = 1;
  attr.sample_id_all = 1;
  attr.sample_type = PERF_SAMPLE_TIME;
  // The record's time is when the thread left its wait, on the agent's clock: a stall that
  // begins then is dated from it, not from when a loaded agent got round to probing.
  attr.use_clockid = 1;
  attr.clockid = CLOCK_MONOTONIC;
  // Side-band records never count as wakeup_events: a watermark of one byte wakes the poll.
  attr.watermark = 1;
  attr.wakeup_watermark = 1;
  // User-space only, so that perf_event_paranoid 2 allows it on one's own processes.
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  attr.disabled = 1;
  size_t bytes;
  return open_mapped(&attr, tid, (size_t)sysconf(_SC_PAGESIZE), ring, &bytes);
}

int sa_perf_waker_arm(int fd, void *ring) {
  struct perf_event_mmap_page *page = ring;
  // Consume whatever an earlier wake left, so poll() waits for a new exit: the records, and
  // the readiness the exits after the last poll raised while the event was still enabled
  // (a poll takes it; left, the next sleep woke at once for nothing).
  struct pollfd pending = {.fd = fd, .events = POLLIN};
  (void)poll(&pending, 1, 0);
  page->data_tail = __atomic_load_n(&page->data_head, __ATOMIC_ACQUIRE);
  return ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
}

int sa_perf_waker_disarm(int fd) { return ioctl(fd, PERF_EVENT_IOC_DISABLE, 0); }

int sa_perf_waker_first_exit(const void *ring, uint64_t *time_ns) {
  struct ring_view view = ring_open(ring, waker_ring_bytes());
  struct perf_event_header header;
  while (ring_header(&view, &header) > 0) {
    if (header.type == PERF_RECORD_SWITCH) {
      // A switch-out first: the thread was running when armed, so when it left is unknown.
      if (header.misc & PERF_RECORD_MISC_SWITCH_OUT) return -1;
      if (header.size < sizeof header + sizeof(uint64_t)) return -1;
      ring_body(&view, sizeof header, time_ns, sizeof *time_ns);
      return 0;
    }
    view.tail += header.size;
  }
  return -1;
}

void sa_perf_waker_close(int fd, void *ring) { close_mapped(fd, ring, waker_ring_bytes()); }

// ---- the stack sampler (perf_stack_sampler.h) -------------------------------------------

// perf_regs.h (x86): AX BX CX DX SI DI BP SP IP FLAGS CS SS DS ES FS GS R8 … R15.
enum { P_AX = 0, P_BX, P_CX, P_DX, P_SI, P_DI, P_BP, P_SP, P_IP, P_R8 = 16 };
static const uint64_t register_mask = 0x1ffull | (0xffull << P_R8);

int sa_perf_stack_sampler_open(pid_t tid, uint64_t period_ns, uint32_t stack_bytes, int user_only, void **ring,
                               size_t *ring_bytes) {
  struct perf_event_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_TASK_CLOCK;
  attr.sample_period = period_ns;
  attr.sample_type = PERF_SAMPLE_TIME | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
  attr.sample_regs_user = register_mask;
  attr.sample_stack_user = stack_bytes & ~7u;
  attr.use_clockid = 1;
  attr.clockid = CLOCK_MONOTONIC;
  // Counted in the kernel too: with exclude_kernel, a tick that lands in a system call is
  // dropped, and a syscall-heavy loop (Redis under load spends most of its CPU there) gave no
  // sample for seconds, so its samples fell back to ptrace stops (14 of 63). The registers and
  // stack copied are the user-mode ones either way (saved at the kernel's entry). Where the
  // kernel refuses kernel-mode counting (perf_event_paranoid 2 without CAP_PERFMON), user only.
  // (`user_only` is the bench's A/B of what counting kernel time costs a user-mode thread.)
  attr.exclude_kernel = user_only ? 1 : 0;
  attr.exclude_hv = 1;
  attr.disabled = 1;
  // Never woken: the agent reads the ring at its own cadence.
  attr.watermark = 1;
  attr.wakeup_watermark = 1u << 30;
  // Room for a few samples of the largest size.
  size_t data = (size_t)sysconf(_SC_PAGESIZE);
  while (data < 4 * ((size_t)stack_bytes + 512)) data *= 2;
  int fd = open_mapped(&attr, tid, data, ring, ring_bytes);
  if (fd < 0 && !user_only && (errno == EACCES || errno == EPERM)) {
    attr.exclude_kernel = 1;
    fd = open_mapped(&attr, tid, data, ring, ring_bytes);
  }
  return fd;
}

int sa_perf_stack_sampler_enable(int fd) { return ioctl(fd, PERF_EVENT_IOC_ENABLE, 0); }
int sa_perf_stack_sampler_disable(int fd) { return sa_perf_waker_disarm(fd); }

void sa_perf_stack_sampler_close(int fd, void *ring, size_t ring_bytes) { close_mapped(fd, ring, ring_bytes); }

int sa_perf_stack_sampler_pending(const void *ring) {
  const struct perf_event_mmap_page *meta = ring;
  return __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE) != meta->data_tail;
}

int sa_perf_stack_sampler_latest(void *ring, size_t ring_bytes, uint64_t regs[SA_PERF_SAMPLE_REGISTERS],
                                 uint64_t *time_ns, uint8_t *stack, size_t stack_cap, size_t *stack_len,
                                 uint64_t *lost) {
  struct ring_view view = ring_open(ring, ring_bytes);
  const uint8_t *data = view.data;
  uint64_t size = view.size, head = view.head;
  uint64_t newest = UINT64_MAX;
  int result = 0;
  struct perf_event_header header;
  int found;
  while ((found = ring_header(&view, &header)) > 0) {
    if (header.type == PERF_RECORD_SAMPLE) newest = view.tail;
    if (header.type == PERF_RECORD_LOST && lost) {
      uint64_t fields[2];
      ring_body(&view, sizeof header, fields, sizeof fields);
      *lost += fields[1];
    }
    view.tail += header.size;
  }
  if (found < 0) result = -1;
  if (newest != UINT64_MAX && result == 0) {
    uint64_t at = newest + sizeof(struct perf_event_header);
    uint64_t abi = 0, value = 0;
    ring_copy(data, size, at, time_ns, 8);
    at += 8;
    ring_copy(data, size, at, &abi, 8);
    at += 8;
    if (abi == PERF_SAMPLE_REGS_ABI_64) {
      uint64_t perf[24] = {0};
      for (int bit = 0; bit < 24; bit++) {
        if (!(register_mask & (1ull << bit))) continue;
        ring_copy(data, size, at, &perf[bit], 8);
        at += 8;
      }
      // DWARF order.
      const int from[SA_PERF_SAMPLE_REGISTERS] = {P_AX, P_DX, P_CX, P_BX, P_SI, P_DI, P_BP, P_SP,
                                                  P_R8, P_R8 + 1, P_R8 + 2, P_R8 + 3, P_R8 + 4, P_R8 + 5,
                                                  P_R8 + 6, P_R8 + 7, P_IP};
      for (int i = 0; i < SA_PERF_SAMPLE_REGISTERS; i++) regs[i] = perf[from[i]];
      uint64_t copied = 0;
      ring_copy(data, size, at, &copied, 8);
      at += 8;
      uint64_t dynamic = 0;
      if (copied > 0) ring_copy(data, size, at + copied, &dynamic, 8);
      value = dynamic < copied ? dynamic : copied;
      if (value > stack_cap) value = stack_cap;
      ring_copy(data, size, at, stack, (size_t)value);
      *stack_len = (size_t)value;
      result = 1;
    } else {
      // ABI none: the sample hit the thread in the kernel (or a 32-bit task); nothing to use.
      result = 0;
    }
  }
  __atomic_store_n(&view.meta->data_tail, head, __ATOMIC_RELEASE);
  return result;
}

// ---- release without waiting (perf_release.h) -------------------------------------------

int sa_perf_tracepoint_anchor(uint64_t config) {
  struct perf_event_attr attr;
  tracepoint_attr(&attr, config);
  attr.disabled = 1;
  // CPU-wide, so it belongs to no task: one on the agent's own thread made the agent's exit
  // tear it down (~65 ms). Per-thread on ourselves where CPU-wide events are refused.
  int fd = (int)syscall(SYS_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
  return fd >= 0 ? fd : (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

// The descriptors of this process that are perf events, ascending; returns how many.
static size_t perf_descriptors(int *fds, size_t capacity) {
  size_t count = 0;
  DIR *dir = opendir("/proc/self/fd");
  if (dir == NULL) return 0;
  struct dirent *entry;
  while ((entry = readdir(dir)) != NULL && count < capacity) {
    char path[64], target[64];
    snprintf(path, sizeof path, "/proc/self/fd/%s", entry->d_name);
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n <= 0) continue;
    target[n] = 0;
    if (strcmp(target, "anon_inode:[perf_event]") == 0) fds[count++] = atoi(entry->d_name);
  }
  closedir(dir);
  return count;
}

static void insert_sorted(int *fds, size_t count) {
  for (size_t j = count - 1; j > 0 && fds[j - 1] > fds[j]; j--) {
    int t = fds[j];
    fds[j] = fds[j - 1];
    fds[j - 1] = t;
  }
}

void sa_perf_release_in_background(void) {
  enum { capacity = 1024 };
  int keep[capacity];
  size_t count = perf_descriptors(keep, capacity - 1);
  if (count == 0) return;
  for (size_t i = 2; i <= count; i++) insert_sorted(keep, i);
  // The child must outlive us: were its references dropped first, ours would be the last
  // after all. A pidfd polls readable once we have exited, our descriptors released.
  int self = (int)syscall(SYS_pidfd_open, getpid(), 0);
  if (self < 0) return;
  keep[count++] = self;
  insert_sorted(keep, count);
  pid_t child = fork();
  if (child != 0) {
    close(self);
    return;
  }
  // The child: async-signal-safe calls only (the parent may have other threads).
  prctl(PR_SET_NAME, "stallagent-rel", 0, 0, 0);
  unsigned int next = 0;
  for (size_t i = 0; i < count; i++) {
    if ((unsigned int)keep[i] > next) syscall(SYS_close_range, next, (unsigned int)keep[i] - 1, 0u);
    next = (unsigned int)keep[i] + 1;
  }
  syscall(SYS_close_range, next, ~0u, 0u);
  struct pollfd parent = {.fd = self, .events = POLLIN};
  poll(&parent, 1, 10000);
  _exit(0);
}
