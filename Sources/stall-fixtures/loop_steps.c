/* The scripted stalls of mode `loop`. Each step function is what the main thread
 * is inside while stalled; helper threads (lockholder, writer, hog-N) are created
 * and joined within the step, so nothing outlives it. */
#define _GNU_SOURCE
#include "include/stall_fixtures.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- spin, sleep, short, die ------------------------------------------------------- */

FIXTURE_FRAME uint64_t busy_compute(double seconds)
{
    uint64_t acc = burn_cpu_for(seconds_to_ns(seconds));
    KEEP_FRAME();
    return acc;
}

FIXTURE_FRAME int blocking_sleep(double seconds)
{
    nanosleep_ns(seconds_to_ns(seconds));
    KEEP_FRAME();
    return 0;
}

/* Busy like a server under load: most of its time in system calls (reads of 64 KiB
 * from /dev/zero, the kernel clearing the buffer), a little in user code between them.
 * A sampler that counts only user time sees almost nothing of it. */
FIXTURE_FRAME uint64_t syscall_heavy_compute(double seconds)
{
    static char buffer[65536];
    int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
    volatile uint64_t acc = 1;
    uint64_t end = mono_ns() + seconds_to_ns(seconds);
    while (mono_ns() < end && !stop_requested) {
        if (fd >= 0 && read(fd, buffer, sizeof buffer) > 0)
            acc += (unsigned char)buffer[acc % sizeof buffer];
        for (int i = 0; i < 256; i++)
            spin_arith(&acc);
    }
    if (fd >= 0)
        close(fd);
    KEEP_FRAME();
    return acc;
}

#define SHORT_BURST_NS 3000000u

FIXTURE_FRAME uint64_t short_bursts(void)
{
    uint64_t acc = burn_cpu_until(mono_ns() + SHORT_BURST_NS);
    KEEP_FRAME();
    return acc;
}

FIXTURE_FRAME uint64_t dying_compute(double seconds, int log_fd, const struct stamp *start)
{
    uint64_t acc = burn_cpu_until(mono_ns() + seconds_to_ns(seconds));
    struct stamp end;
    stamp_now(&end);
    stall_log_append(log_fd, "die", start, &end);
    /* Always true in `loop` (it never sets the flag); the test only keeps the
     * compiler from treating this function as noreturn. */
    if (!stop_requested)
        abort();
    return acc;
}

/* A saturated server's turn: work that varies from request to request and never
 * comes near a stall on its own. */
FIXTURE_FRAME uint64_t serve_request(unsigned n)
{
    uint64_t acc = burn_cpu_until(mono_ns() + 1000000u + (n % 3u) * 1000000u);
    KEEP_FRAME();
    return acc;
}

/* The other half of a saturated server's turn, run by the loop itself before it
 * waits again (redis's beforeSleep, libuv's check phase): write the replies. */
FIXTURE_FRAME uint64_t flush_replies(void)
{
    uint64_t acc = burn_cpu_until(mono_ns() + 1000000u);
    KEEP_FRAME();
    return acc;
}

/* The loop's own wait, nested inside work: PostgreSQL's pg_sleep -> WaitLatch ->
 * epoll_wait, Node's execSync. Same syscall as the idle wait, deeper call site. */
FIXTURE_FRAME int nested_wait(double seconds)
{
    int epfd = epoll_create1(EPOLL_CLOEXEC);
    if (epfd < 0)
        fatal_errno("epoll_create1");
    uint64_t deadline = mono_ns() + seconds_to_ns(seconds);
    for (uint64_t now = mono_ns(); now < deadline; now = mono_ns()) {
        struct epoll_event ev;
        int timeout_ms = (int)((deadline - now + 999999u) / 1000000u);
        if (epoll_wait(epfd, &ev, 1, timeout_ms) < 0 && errno != EINTR)
            fatal_errno("epoll_wait (nested)");
    }
    KEEP_FRAME();
    close(epfd);
    return 0;
}

/* ---- mutex -------------------------------------------------------------------------- */

static pthread_mutex_t contended_lock = PTHREAD_MUTEX_INITIALIZER;

struct lockholder {
    sem_t locked;
    double seconds;
};

FIXTURE_FRAME int hold_lock_for(double seconds)
{
    nanosleep_ns(seconds_to_ns(seconds));
    KEEP_FRAME();
    return 0;
}

FIXTURE_FRAME void *lockholder_thread(void *arg)
{
    struct lockholder *holder = arg;
    set_thread_name("lockholder");
    pthread_mutex_lock(&contended_lock);
    sem_post(&holder->locked);
    hold_lock_for(holder->seconds);
    KEEP_FRAME();
    pthread_mutex_unlock(&contended_lock);
    return NULL;
}

FIXTURE_FRAME int lock_contention(double seconds)
{
    struct lockholder holder = { .seconds = seconds };
    sem_init(&holder.locked, 0, 0);
    pthread_t thread = spawn_thread(lockholder_thread, &holder);
    /* Main must only reach for the lock once the helper has it. */
    while (sem_wait(&holder.locked) != 0)
        ;
    pthread_mutex_lock(&contended_lock);
    KEEP_FRAME();
    pthread_mutex_unlock(&contended_lock);
    pthread_join(thread, NULL);
    sem_destroy(&holder.locked);
    return 0;
}

/* ---- pipe ----------------------------------------------------------------------------- */

struct writer {
    int fd;
    double seconds;
};

FIXTURE_FRAME int write_after_delay(const struct writer *writer)
{
    nanosleep_ns(seconds_to_ns(writer->seconds));
    ssize_t n = write(writer->fd, "x", 1);
    KEEP_FRAME();
    return n == 1 ? 0 : -1;
}

FIXTURE_FRAME void *writer_thread(void *arg)
{
    set_thread_name("writer");
    write_after_delay(arg);
    KEEP_FRAME();
    return NULL;
}

FIXTURE_FRAME int wait_on_pipe(double seconds)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        fatal_errno("pipe2");
    struct writer writer = { .fd = fds[1], .seconds = seconds };
    pthread_t thread = spawn_thread(writer_thread, &writer);
    char byte;
    ssize_t n;
    do {
        n = read(fds[0], &byte, 1);
    } while (n < 0 && errno == EINTR);
    KEEP_FRAME();
    pthread_join(thread, NULL);
    close(fds[0]);
    close(fds[1]);
    return n == 1 ? 0 : -1;
}

/* ---- io --------------------------------------------------------------------------------- */

/* Same pattern as mode `io`: rewrite 8 MiB and fsync, until the time is up. The
 * last round may end a little after `seconds`; the log records the real end. */
FIXTURE_FRAME uint64_t disk_io(double seconds)
{
    uint64_t deadline = mono_ns() + seconds_to_ns(seconds);
    char path[4096];
    int fd = create_temp_file(temp_dir(), path, sizeof path);
    const void *chunk = io_chunk();
    uint64_t rounds = 0;
    do {
        pwrite_all(fd, chunk, IO_CHUNK_BYTES, 0);
        if (fsync(fd) != 0)
            fatal_errno("fsync");
        rounds++;
    } while (mono_ns() < deadline);
    KEEP_FRAME();
    close(fd);
    unlink(path);
    return rounds;
}

/* ---- starve ------------------------------------------------------------------------------ */

#define HOG_COUNT 3

struct hog {
    int index;
    atomic_bool *stop;
};

FIXTURE_FRAME uint64_t hog_spin(atomic_bool *stop)
{
    volatile uint64_t acc = 1;
    while (!atomic_load_explicit(stop, memory_order_relaxed)) {
        for (int i = 0; i < 1024; i++)
            spin_arith(&acc);
    }
    return acc;
}

FIXTURE_FRAME void *hog_thread(void *arg)
{
    struct hog *hog = arg;
    char name[16];
    snprintf(name, sizeof name, "hog-%d", hog->index);
    set_thread_name(name);
    hog_spin(hog->stop);
    KEEP_FRAME();
    return NULL;
}

/* Main and three CPU hogs share one CPU, so main is runnable ~3/4 of the time
 * but not running: run-queue wait, the signature of starvation. The CPU is the
 * lowest one main may run on (CPU 0 unless started under a narrower affinity),
 * and main gets back exactly the affinity it had. */
FIXTURE_FRAME uint64_t starved_compute(double seconds)
{
    uint64_t deadline = mono_ns() + seconds_to_ns(seconds);
    cpu_set_t saved, one;
    if (sched_getaffinity(0, sizeof saved, &saved) != 0)
        fatal_errno("sched_getaffinity");
    int cpu = 0;
    while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &saved))
        cpu++;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0)
        fatal_errno("sched_setaffinity");

    atomic_bool stop = false;
    struct hog hogs[HOG_COUNT];
    pthread_t threads[HOG_COUNT];
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setaffinity_np(&attr, sizeof one, &one);
    for (int i = 0; i < HOG_COUNT; i++) {
        hogs[i] = (struct hog){ .index = i, .stop = &stop };
        int err = pthread_create(&threads[i], &attr, hog_thread, &hogs[i]);
        if (err != 0)
            fatal("pthread_create: %s", strerror(err));
    }
    pthread_attr_destroy(&attr);

    uint64_t acc = burn_cpu_until(deadline);
    KEEP_FRAME();

    atomic_store(&stop, true);
    for (int i = 0; i < HOG_COUNT; i++)
        pthread_join(threads[i], NULL);
    if (sched_setaffinity(0, sizeof saved, &saved) != 0)
        fatal_errno("sched_setaffinity");
    return acc;
}
