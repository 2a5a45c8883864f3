#ifndef SA_PERF_STACK_SAMPLER_H
#define SA_PERF_STACK_SAMPLER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/// Registers in a sample, in libunwind/DWARF x86-64 order: rax rdx rcx rbx rsi rdi rbp rsp
/// r8-r15 rip (17 values).
#define SA_PERF_SAMPLE_REGISTERS 17

/// A disabled per-thread task-clock sampling event that copies the thread's user registers
/// and the top `stack_bytes` of its user stack at each sample interrupt (every `period_ns` of
/// the thread's on-CPU time), into a ring mapped at `*ring` (`*ring_bytes` long). The thread is
/// never stopped. Ticks in the kernel count too unless `user_only` (or the kernel refuses it).
/// Returns the fd, or -1 with errno.
int sa_perf_stack_sampler_open(pid_t tid, uint64_t period_ns, uint32_t stack_bytes, int user_only, void **ring,
                               size_t *ring_bytes);
int sa_perf_stack_sampler_enable(int fd);
int sa_perf_stack_sampler_disable(int fd);
void sa_perf_stack_sampler_close(int fd, void *ring, size_t ring_bytes);

/// Whether records arrived since the last `sa_perf_stack_sampler_latest` (without consuming them).
int sa_perf_stack_sampler_pending(const void *ring);

/// Consumes every record in the ring and copies the newest sample: registers into `regs`,
/// its time (CLOCK_MONOTONIC ns) into `*time_ns`, up to `stack_cap` stack bytes into `stack`
/// with their count in `*stack_len`. Returns 1 with a sample, 0 when none arrived since the
/// last call, -1 when the ring held something unreadable.
int sa_perf_stack_sampler_latest(void *ring, size_t ring_bytes, uint64_t regs[SA_PERF_SAMPLE_REGISTERS],
                                 uint64_t *time_ns, uint8_t *stack, size_t stack_cap, size_t *stack_len,
                                 uint64_t *lost);

#endif
