/* Utilities shared by all modes: errors, the ready line, argument parsing,
 * thread helpers, I/O helpers, the gap recorder and the stall log. */
#define _GNU_SOURCE
#include "include/stall_fixtures.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

volatile sig_atomic_t stop_requested;

static void on_stop_signal(int signo)
{
    (void)signo;
    stop_requested = 1;
}

void install_stop_handler(int signo)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    /* SA_RESTART: a write() or nanosleep() in progress should finish; the loops
     * look at the flag right after. */
    sa.sa_flags = SA_RESTART;
    if (sigaction(signo, &sa, NULL) != 0)
        fatal_errno("sigaction");
}

void fatal(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("stall-fixtures: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

void usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("stall-fixtures: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\nrun `stall-fixtures --help` for the modes\n", stderr);
    exit(2);
}

void fatal_errno(const char *what)
{
    fatal("%s: %s", what, strerror(errno));
}

pid_t current_tid(void)
{
    return (pid_t)syscall(SYS_gettid);
}

void set_thread_name(const char *name)
{
    /* Names longer than 15 bytes are rejected by the kernel (ERANGE). */
    int err = pthread_setname_np(pthread_self(), name);
    if (err != 0)
        fatal("pthread_setname_np(%s): %s", name, strerror(err));
}

pthread_t spawn_thread(void *(*fn)(void *), void *arg)
{
    pthread_t thread;
    int err = pthread_create(&thread, NULL, fn, arg);
    if (err != 0)
        fatal("pthread_create: %s", strerror(err));
    return thread;
}

void print_ready(void)
{
    printf("ready pid=%d tid=%d\n", (int)getpid(), (int)current_tid());
    fflush(stdout);
}

void print_ready_with(const char *extra_fmt, ...)
{
    va_list ap;
    printf("ready pid=%d tid=%d ", (int)getpid(), (int)current_tid());
    va_start(ap, extra_fmt);
    vprintf(extra_fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

bool parse_seconds(const char *text, double *out)
{
    char *end;
    errno = 0;
    double value = strtod(text, &end);
    /* `value == value` rejects NaN; the upper bound keeps seconds_to_ns in range. */
    if (errno != 0 || end == text || *end != '\0' || !(value >= 0 && value <= 1e6))
        return false;
    *out = value;
    return true;
}

bool parse_long(const char *text, long min, long max, long *out)
{
    char *end;
    errno = 0;
    long value = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || value < min || value > max)
        return false;
    *out = value;
    return true;
}

sigset_t block_signals(const int *signos, size_t count)
{
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < count; i++)
        sigaddset(&set, signos[i]);
    int err = pthread_sigmask(SIG_BLOCK, &set, NULL);
    if (err != 0)
        fatal("pthread_sigmask: %s", strerror(err));
    return set;
}

/* /proc/self/task/TID/syscall starts with the syscall number while the thread is
 * blocked in one, and reads "running" (or "-1 ...") otherwise. */
static long blocked_syscall(pid_t tid)
{
    char path[64], buf[128];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    char *end;
    long nr = strtol(buf, &end, 10);
    return end == buf ? -1 : nr;
}

bool wait_until_blocked(pid_t tid, long nr, long alt_nr)
{
    for (int i = 0; i < 5000; i++) {
        long current = blocked_syscall(tid);
        if (current == nr || current == alt_nr)
            return true;
        usleep(1000);
    }
    fprintf(stderr, "stall-fixtures: warning: thread %d not blocked in syscall %ld after 5 s\n",
            (int)tid, nr);
    return false;
}

const void *io_chunk(void)
{
    static unsigned char *chunk;
    if (chunk == NULL) {
        chunk = malloc(IO_CHUNK_BYTES);
        if (chunk == NULL)
            fatal("out of memory");
        /* Non-zero, non-repeating-page data, so no filesystem can skip or dedupe it. */
        for (size_t i = 0; i < IO_CHUNK_BYTES; i++)
            chunk[i] = (unsigned char)(i * 31 + (i >> 12) + 1);
    }
    return chunk;
}

const char *temp_dir(void)
{
    const char *dir = getenv("TMPDIR");
    return dir != NULL && dir[0] != '\0' ? dir : "/tmp";
}

int create_temp_file(const char *dir, char *path, size_t path_size)
{
    int n = snprintf(path, path_size, "%s/stall-fixtures-io-XXXXXX", dir);
    if (n < 0 || (size_t)n >= path_size)
        fatal("directory name too long: %s", dir);
    int fd = mkostemp(path, O_CLOEXEC);
    if (fd < 0)
        fatal("mkstemp in %s: %s", dir, strerror(errno));
    return fd;
}

void pwrite_all(int fd, const void *buf, size_t len, off_t offset)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = pwrite(fd, p, len, offset);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            fatal_errno("pwrite");
        }
        p += n;
        len -= (size_t)n;
        offset += n;
    }
}

/* ---- gap recorder ---------------------------------------------------------------- */

void gap_recorder_init(struct gap_recorder *rec)
{
    memset(rec, 0, sizeof *rec);
    rec->start_ns = calloc(GAP_CAPACITY, sizeof *rec->start_ns);
    rec->gap_ns = calloc(GAP_CAPACITY, sizeof *rec->gap_ns);
    if (rec->start_ns == NULL || rec->gap_ns == NULL)
        fatal("out of memory");
    /* Fault every page in now: a first-touch page fault inside the timed loop
     * would itself be recorded as a gap. */
    memset(rec->start_ns, 0xff, GAP_CAPACITY * sizeof *rec->start_ns);
    memset(rec->gap_ns, 0xff, GAP_CAPACITY * sizeof *rec->gap_ns);
    rec->first_ns = rec->prev_ns = mono_ns();
}

void gap_recorder_write(const struct gap_recorder *rec, const char *path)
{
    /* Write beside the target and rename, so a reader never sees half a file. */
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
        fatal("path too long: %s", path);
    FILE *f = fopen(tmp, "w");
    if (f == NULL)
        fatal("%s: %s", tmp, strerror(errno));
    uint64_t elapsed = rec->prev_ns - rec->first_ns;
    fprintf(f, "iterations=%llu seconds=%llu.%06llu gaps=%zu\n",
            (unsigned long long)rec->iterations,
            (unsigned long long)(elapsed / 1000000000u),
            (unsigned long long)(elapsed % 1000000000u / 1000u), rec->count);
    for (size_t i = 0; i < rec->count; i++)
        fprintf(f, "%llu %llu\n", (unsigned long long)rec->start_ns[i],
                (unsigned long long)rec->gap_ns[i]);
    if (fclose(f) != 0)
        fatal("%s: %s", tmp, strerror(errno));
    if (rename(tmp, path) != 0)
        fatal("rename %s: %s", path, strerror(errno));
    if (rec->dropped > 0)
        fprintf(stderr, "stall-fixtures: %llu gaps beyond the first %u were not recorded\n",
                (unsigned long long)rec->dropped, GAP_CAPACITY);
}

/* ---- stall log ------------------------------------------------------------------- */

void stamp_now(struct stamp *s)
{
    clock_gettime(CLOCK_MONOTONIC, &s->mono);
    clock_gettime(CLOCK_REALTIME, &s->wall);
}

int stall_log_open(const char *path)
{
    if (path == NULL)
        return -1;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        fatal("%s: %s", path, strerror(errno));
    return fd;
}

static long long micros(const struct timespec *ts)
{
    return (long long)ts->tv_sec * 1000000 + ts->tv_nsec / 1000;
}

void stall_log_append(int fd, const char *kind, const struct stamp *start, const struct stamp *end)
{
    if (fd < 0)
        return;
    /* All values are truncated to whole microseconds first, and `seconds` is the
     * difference of the printed monotonic values, so the line is self-consistent. */
    long long sw = micros(&start->wall), ew = micros(&end->wall);
    long long sm = micros(&start->mono), em = micros(&end->mono);
    long long d = em - sm;
    char line[512];
    int n = snprintf(line, sizeof line,
                     "{\"kind\":\"%s\",\"start_wall\":%lld.%06lld,\"end_wall\":%lld.%06lld,"
                     "\"start_mono\":%lld.%06lld,\"end_mono\":%lld.%06lld,\"seconds\":%lld.%06lld}\n",
                     kind, sw / 1000000, sw % 1000000, ew / 1000000, ew % 1000000,
                     sm / 1000000, sm % 1000000, em / 1000000, em % 1000000,
                     d / 1000000, d % 1000000);
    /* One write() on an O_APPEND descriptor: lines never interleave or tear. */
    if (write(fd, line, (size_t)n) != n)
        fatal_errno("write stall log");
}
