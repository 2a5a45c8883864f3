// What keeping a thread stopped costs it, beyond the bare ptrace floor (docs/measured.md).
//
//   cc -O2 -o /tmp/stop-cost docs/repro/stop-cost.c && /tmp/stop-cost [rounds]
//
// A forked child spins reading CLOCK_MONOTONIC at a recursion depth of 200 frames and logs
// every gap over 3 µs (its own pauses) into shared memory. The parent seizes it once and,
// in turn, stops it with PTRACE_INTERRUPT, waits, reads its registers, does one of the
// variants below and continues it, at ~200 stops per second; each variant's pause is the
// longest gap the child saw during that stop. Printed per variant: the pause p50/p90 and
// what the variant itself took on the parent's clock (p50).
//
//   floor         nothing more
//   spin 5 us     a 5 µs busy wait: the stop made longer, nothing touched
//   peek x4       four PTRACE_PEEKDATA words at the stack pointer
//   readv 256 B   process_vm_readv of 256 bytes at the stack pointer
//   readv 4 KiB   the same, 4 KiB
//   mem 4 KiB     pread of 4 KiB from /proc/PID/mem (opened once)
//   warm 4 KiB    readv 4 KiB, the same range having been read just before the stop
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static unsigned long long now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000ull + t.tv_nsec;
}

enum { MAX_GAPS = 400000, VARIANTS = 7 };
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
      if (t - previous > 3000 && log_->count < MAX_GAPS) {
        log_->gap[log_->count] = (struct gap){previous, t - previous};
        log_->count++;
      }
      previous = t;
    }
  }
  sink = frame[0];
}

static long scan_from;
static unsigned long long longest_gap(unsigned long long start, unsigned long long end) {
  unsigned long long longest = 0;
  for (long i = scan_from; i < log_->count; i++) {
    const struct gap *g = &log_->gap[i];
    if (g->at <= end && g->at + g->length >= start && g->length > longest) longest = g->length;
  }
  return longest;
}

static int ascending(const void *a, const void *b) {
  unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 300;
  if (rounds < 10 || rounds > 5000) rounds = 300;
  log_ = mmap(NULL, sizeof *log_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (log_ == MAP_FAILED) return perror("mmap"), 1;
  static char buffer[1 << 16], warm[1 << 16];
  memset(buffer, 1, sizeof buffer);
  memset(warm, 1, sizeof warm);
  pid_t child = fork();
  if (child == 0) {
    spin_at_depth(200);
    _exit(0);
  }
  usleep(100000);
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/mem", child);
  int mem = open(path, O_RDONLY);
  if (mem < 0 || ptrace(PTRACE_SEIZE, child, 0, 0) != 0) {
    perror("open /proc/PID/mem or PTRACE_SEIZE");
    kill(child, SIGKILL);
    return 1;
  }
  static const char *names[VARIANTS] = {"floor", "spin 5 us", "peek x4", "readv 256 B", "readv 4 KiB", "mem 4 KiB", "warm 4 KiB"};
  static unsigned long long pause[VARIANTS][5000], cost[VARIANTS][5000];
  unsigned long long last_sp = 0;
  for (int round = 0; round < rounds; round++) {
    for (int v = 0; v < VARIANTS; v++) {
      usleep(4000);
      if (v == 6 && last_sp) {
        struct iovec local = {warm, 4096}, remote = {(void *)last_sp, 4096};
        process_vm_readv(child, &local, 1, &remote, 1, 0);
      }
      unsigned long long start = now();
      ptrace(PTRACE_INTERRUPT, child, 0, 0);
      int status;
      while (waitpid(child, &status, WNOHANG | __WALL) != child) sched_yield();
      struct user_regs_struct regs;
      ptrace(PTRACE_GETREGS, child, 0, &regs);
      last_sp = regs.rsp;
      unsigned long long before = now();
      if (v == 1) {
        while (now() < before + 5000) {}
      } else if (v == 2) {
        for (int k = 0; k < 4; k++) ((long *)buffer)[k] = ptrace(PTRACE_PEEKDATA, child, (void *)(regs.rsp + 8 * k), 0);
      } else if (v == 3 || v == 4 || v == 6) {
        size_t n = v == 3 ? 256 : 4096;
        struct iovec local = {buffer, n}, remote = {(void *)regs.rsp, n};
        process_vm_readv(child, &local, 1, &remote, 1, 0);
      } else if (v == 5) {
        if (pread(mem, buffer, 4096, (off_t)regs.rsp) < 0) perror("pread");
      }
      cost[v][round] = now() - before;
      ptrace(PTRACE_CONT, child, 0, 0);
      unsigned long long end = now();
      usleep(1000);
      pause[v][round] = longest_gap(start, end);
      if (log_->count > 1000) scan_from = log_->count - 1000;
    }
  }
  printf("%-12s  pause p50   p90 (µs)   variant's own time p50 (µs)\n", "");
  for (int v = 0; v < VARIANTS; v++) {
    qsort(pause[v], rounds, sizeof pause[v][0], ascending);
    qsort(cost[v], rounds, sizeof cost[v][0], ascending);
    printf("%-12s  %7.1f %7.1f            %7.1f\n", names[v], pause[v][rounds / 2] / 1000.0, pause[v][rounds * 9 / 10] / 1000.0,
           cost[v][rounds / 2] / 1000.0);
  }
  kill(child, SIGKILL);
  waitpid(child, NULL, __WALL);
  return 0;
}
