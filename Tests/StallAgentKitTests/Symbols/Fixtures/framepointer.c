// Frame-pointer code that blocks in a libc call, for the stop-free unwind: built with
// -fno-omit-frame-pointer so every fp_* function's CFI needs RBP, which /proc/…/syscall does
// not give. Before it blocks, deep calls leave stale frame records in the memory the blocking
// frame's uninitialised locals then occupy, so the first plausible record above its stack
// pointer is the wrong one.
//
//   framepointer epoll   idle in epoll_wait
//   framepointer read    blocked in read on a pipe nobody writes
//   framepointer jit     spins in C code called from generated code (no CFI, frame record)
//   framepointer jitread blocks in read, called from generated code
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static int mode_read;
static volatile uint64_t sink;

NOINLINE static uint64_t fp_scribble(int depth) {
    volatile char pad[96];
    pad[0] = (char)depth;
    if (depth == 0) return pad[0];
    return fp_scribble(depth - 1) + pad[0];
}

NOINLINE static void fp_block(void) {
    // Never written: it holds the frame records fp_scribble's calls left there.
    char stale[2048];
    __asm__ volatile("" : : "r"(stale) : "memory");
    if (mode_read) {
        int fds[2];
        if (pipe(fds) != 0) exit(1);
        char byte;
        printf("ready pid=%d\n", getpid());
        fflush(stdout);
        for (;;) (void)read(fds[0], &byte, 1);
    }
    int ep = epoll_create1(0);
    struct epoll_event event;
    printf("ready pid=%d\n", getpid());
    fflush(stdout);
    for (;;) epoll_wait(ep, &event, 1, -1);
}

NOINLINE static void fp_waiter(void) {
    sink += fp_scribble(12);
    // libc (no frame pointers) pushes RBP as a callee-saved register: record-shaped pairs
    // behind a call through the PLT, which no call-site check can refute.
    char text[256];
    snprintf(text, sizeof text, "%d %s %f %p", (int)sink, "stale", 1.5, (void *)text);
    __asm__ volatile("" : : "r"(text) : "memory");
    fp_block();
    sink++;
}

NOINLINE static void fp_middle(void) {
    fp_waiter();
    sink++;
}

static void (*volatile middle_pointer)(void) = fp_middle;

NOINLINE static void fp_outer(void) {
    middle_pointer();
    sink++;
}

// Called from the generated code.
NOINLINE static void jit_callee_spin(void) {
    printf("ready pid=%d\n", getpid());
    fflush(stdout);
    for (;;) sink++;
}

NOINLINE static void jit_callee_read(void) {
    int fds[2];
    if (pipe(fds) != 0) exit(1);
    char byte;
    printf("ready pid=%d\n", getpid());
    fflush(stdout);
    for (;;) (void)read(fds[0], &byte, 1);
}

// push rbp; mov rbp, rsp; movabs rax, CALLEE; call rax; pop rbp; ret — a JIT function with a
// frame record and no CFI, named in the perf map like V8 names its code.
NOINLINE static void run_jit(void (*callee)(void)) {
    unsigned char *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (code == MAP_FAILED) exit(1);
    unsigned char stub[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xd0, 0x5d, 0xc3};
    uint64_t target = (uint64_t)callee;
    memcpy(stub + 6, &target, 8);
    memcpy(code + 256, stub, sizeof stub);
    if (mprotect(code, 4096, PROT_READ | PROT_EXEC) != 0) exit(1);
    char path[64];
    snprintf(path, sizeof path, "/tmp/perf-%d.map", getpid());
    FILE *map = fopen(path, "w");
    if (!map) exit(1);
    fprintf(map, "%lx %zx JS:*generatedTrampoline app.js:7\n", (unsigned long)(code + 256), sizeof stub);
    fclose(map);
    ((void (*)(void))(code + 256))();
    sink++;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "epoll";
    if (strcmp(mode, "jit") == 0) run_jit(jit_callee_spin);
    if (strcmp(mode, "jitread") == 0) run_jit(jit_callee_read);
    mode_read = strcmp(mode, "read") == 0;
    fp_outer();
    return (int)sink;
}
