/* One function that stalls on one of two lines: `two_sites a` sleeps at the first, `two_sites
 * b` at the second. The same line must give the same fingerprint in every run and from any
 * path; the other line another one. */
#include <unistd.h>

__attribute__((noinline)) void handle(int which)
{
    if (which == 0)
        usleep(1500000); /* site a */
    else
        usleep(1600000); /* site b */
    __asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
    usleep(400000); /* main alone first: a batch process's first sample must not land in handle */
    handle(argc > 1 && argv[1][0] == 'b');
    return 0;
}
