// Built with -rdynamic and stripped: the exported functions stay in .dynsym, the static ones
// vanish. The stack blocks inside static functions called from exported ones, so a
// nearest-symbol lookup would name the static frames after their exported neighbours.
#include <stdio.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

volatile int sink;

NOINLINE void exported_before(void) { sink++; }

NOINLINE static void hidden_blocker(void) {
    int fds[2];
    if (pipe(fds) != 0) return;
    char byte;
    printf("ready pid=%d\n", getpid());
    fflush(stdout);
    for (;;) (void)read(fds[0], &byte, 1);
}

NOINLINE void exported_caller(void) {
    hidden_blocker();
    sink++;
}

NOINLINE static void hidden_outer(void) {
    // Padding so the gap after exported_caller is large, as in real binaries.
    __asm__ volatile(".fill 4096, 1, 0x90");
    exported_caller();
    sink++;
}

int main(void) {
    exported_before();
    hidden_outer();
    return sink;
}
