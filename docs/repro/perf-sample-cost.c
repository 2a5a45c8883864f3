// What one perf_event sample of a running thread costs it (docs/measured.md).
//
//   cc -O2 -o /tmp/perf-sample-cost docs/repro/perf-sample-cost.c && /tmp/perf-sample-cost
//
// Needs perf events on another process (root, CAP_PERFMON, or perf_event_paranoid <= 1).
// A forked child spins reading CLOCK_MONOTONIC at a recursion depth of 200 frames and logs
// every gap over 2 µs into shared memory. For each setting the parent samples it for 2.5 s
// with a task-clock event (period 50 ms, as the agent's 20 Hz sampling), registers and
// user stack copied by the kernel as the agent asks, and matches each sample's timestamp
// (CLOCK_MONOTONIC) to the longest gap within 20 µs of it: the pause that sample caused.
// Settings: stack bytes copied (0 = registers only) × all general registers or ip/sp/bp.
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static unsigned long long now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000ull + t.tv_nsec;
}

enum { MAX_GAPS = 400000, MAX_SAMPLES = 200 };
struct gap { unsigned long long at, length; };
struct gaps { volatile long count; struct gap gap[MAX_GAPS]; };
static struct gaps *log_;
static volatile char sink;
static volatile int spinning = 1;

static void spin_at_depth(int depth) {
  char frame[64];
  frame[0] = (char)depth;
  if (depth > 0) {
    spin_at_depth(depth - 1);
  } else {
    for (unsigned long long previous = now(); spinning;) {
      unsigned long long t = now();
      if (t - previous > 2000 && log_->count < MAX_GAPS) {
        log_->gap[log_->count] = (struct gap){previous, t - previous};
        log_->count++;
      }
      previous = t;
    }
  }
  sink = frame[0];
}

static unsigned long long gap_at(unsigned long long t) {
  unsigned long long longest = 0;
  for (long i = 0; i < log_->count; i++) {
    const struct gap *g = &log_->gap[i];
    if (g->at <= t + 20000 && g->at + g->length + 20000 >= t && g->length > longest) longest = g->length;
  }
  return longest;
}

static int ascending(const void *a, const void *b) {
  unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
  return x < y ? -1 : x > y;
}

int main(void) {
  log_ = mmap(NULL, sizeof *log_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (log_ == MAP_FAILED) return perror("mmap"), 1;
  pid_t child = fork();
  if (child == 0) {
    spin_at_depth(200);
    _exit(0);
  }
  usleep(100000);
  const unsigned stacks[] = {0, 1024, 4096, 8192};
  // perf_regs.h (x86): AX BX CX DX SI DI BP SP IP, R8-R15 from bit 16; or only BP SP IP.
  const unsigned long long masks[] = {0x1ffull | (0xffull << 16), (1ull << 6) | (1ull << 7) | (1ull << 8)};
  printf("registers     stack B   samples   pause p50   p90 (µs)\n");
  for (int m = 0; m < 2; m++) {
    for (int s = 0; s < 4; s++) {
      struct perf_event_attr attr;
      memset(&attr, 0, sizeof attr);
      attr.size = sizeof attr;
      attr.type = PERF_TYPE_SOFTWARE;
      attr.config = PERF_COUNT_SW_TASK_CLOCK;
      attr.sample_period = 50000000;
      attr.sample_type = PERF_SAMPLE_TIME | PERF_SAMPLE_REGS_USER | (stacks[s] ? PERF_SAMPLE_STACK_USER : 0);
      attr.sample_regs_user = masks[m];
      attr.sample_stack_user = stacks[s];
      attr.use_clockid = 1;
      attr.clockid = CLOCK_MONOTONIC;
      attr.exclude_kernel = 1;
      attr.exclude_hv = 1;
      attr.disabled = 1;
      attr.watermark = 1;
      attr.wakeup_watermark = 1u << 30;
      int fd = (int)syscall(SYS_perf_event_open, &attr, child, -1, -1, 0);
      if (fd < 0) {
        perror("perf_event_open");
        kill(child, SIGKILL);
        return 1;
      }
      size_t data = 4096 * 256;  // room for every sample of the 2.5 s at 8 KiB each
      void *ring = mmap(NULL, 4096 + data, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (ring == MAP_FAILED) return perror("mmap ring"), 1;
      log_->count = 0;
      ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
      usleep(2500000);
      ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
      struct perf_event_mmap_page *meta = ring;
      unsigned long long head = meta->data_head;
      __sync_synchronize();
      const unsigned char *bytes = (const unsigned char *)ring + 4096;
      unsigned long long pause[MAX_SAMPLES];
      int n = 0;
      for (unsigned long long at = meta->data_tail; at < head && n < MAX_SAMPLES;) {
        const struct perf_event_header *header = (const void *)(bytes + at % data);
        if (header->type == PERF_RECORD_SAMPLE) pause[n++] = gap_at(*(const unsigned long long *)(bytes + (at + 8) % data));
        at += header->size;
      }
      qsort(pause, n, sizeof pause[0], ascending);
      if (n > 0)
        printf("%-12s  %7u   %7d   %9.1f %6.1f\n", m ? "ip/sp/bp" : "all", stacks[s], n, pause[n / 2] / 1000.0,
               pause[n * 9 / 10] / 1000.0);
      munmap(ring, 4096 + data);
      close(fd);
    }
  }
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  return 0;
}
