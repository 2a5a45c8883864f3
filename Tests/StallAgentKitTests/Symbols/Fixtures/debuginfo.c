// Built at test time with -g -O1, then stripped in several ways. The main thread blocks in
// read() under a static (not exported) function with an inlined helper, so names must come
// from a debug file and the inlined frame from DWARF.
#include <stdio.h>
#include <unistd.h>

static volatile int sink;

static inline __attribute__((always_inline)) int wait_for_input(int fd) {
    char byte;
    sink++;
    return (int)read(fd, &byte, 1); // LINE_READ
}

__attribute__((noinline)) static int process_requests(int fd) {
    int total = 0;
    for (int i = 0; i < 3; i++) {
        total += wait_for_input(fd); // LINE_CALL
        sink += total;
    }
    return total;
}

int main(void) {
    int fds[2];
    if (pipe(fds) != 0) return 1;
    printf("ready pid=%d\n", getpid());
    fflush(stdout);
    return process_requests(fds[0]) + sink;
}
