// Generates a tiny loop at run time in an anonymous executable mapping, writes a perf map
// for it (with garbage lines a sloppy JIT might leave), and runs it forever.
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(void) {
    // pause; jmp back to the pause: a spin that stays inside the generated code.
    static const unsigned char loop[] = {0xf3, 0x90, 0xeb, 0xfc};
    unsigned char *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (code == MAP_FAILED) return 1;
    memset(code, 0xcc, 4096);
    memcpy(code + 64, loop, sizeof loop);
    if (mprotect(code, 4096, PROT_READ | PROT_EXEC) != 0) return 1;
    char path[64];
    snprintf(path, sizeof path, "/tmp/perf-%d.map", getpid());
    FILE *map = fopen(path, "w");
    if (!map) return 1;
    fprintf(map, "this is not a perf map line\n");
    fprintf(map, "%lx 40 LazyCompile:*stale_function app.js:1\n", (unsigned long)(code + 64));
    fprintf(map, "zzzz 10 bad_hex\n\n%lx\n", (unsigned long)code);
    fprintf(map, "%lx 10 LazyCompile:*hotLoop app.js:42\n", (unsigned long)(code + 64));
    fprintf(map, "ffffffffffffffff ffff overflowing_entry\n");
    fclose(map);
    printf("ready pid=%d map=%s\n", getpid(), path);
    fflush(stdout);
    ((void (*)(void))(code + 64))();
    return 0;
}
