#ifndef STALLPROBE_H
#define STALLPROBE_H
#include <stdint.h>

/// What libstallprobe.so publishes about the main thread's event loop, read by stallagent
/// with process_vm_readv through the `stallprobe_state` symbol. Layout is ABI: versioned by
/// `magic`; fields are only ever appended.
struct stallprobe_state {
  char magic[16];               /* "STALLPROBE v1" */
  uint64_t iterations;          /* idle waits entered by the main thread */
  uint64_t about_to_wait_ns;    /* CLOCK_MONOTONIC when the last wait began ("BeforeWaiting") */
  uint64_t woke_ns;             /* CLOCK_MONOTONIC when the last wait returned ("AfterWaiting") */
  uint32_t in_wait;             /* 1 while the main thread is inside an idle wait */
  uint32_t main_tid;
  /* The last STALLPROBE_RING idle waits: entry (n % STALLPROBE_RING) is wait number n (1-based
     iterations). The busy period between waits n and n+1 is [ring[n].woke_ns, ring[n+1].wait_ns],
     so a reader polling every few ms sees every loop turn, not just the last. */
  struct {
    uint64_t wait_ns;
    uint64_t woke_ns;
  } ring[32];
};
#define STALLPROBE_RING 32

extern struct stallprobe_state stallprobe_state;

#endif
