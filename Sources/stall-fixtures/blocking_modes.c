/* Modes whose main thread is blocked in the kernel: sleep, mutex, deadlock,
 * pipe, io, zombie-parent. */
#define _GNU_SOURCE
#include "include/stall_fixtures.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* glibc's nanosleep() enters the kernel as clock_nanosleep; older ones used nanosleep. */
#define SLEEP_SYSCALLS SYS_clock_nanosleep, SYS_nanosleep

/* ---- sleep -------------------------------------------------------------------------- */

FIXTURE_FRAME int sleep_forever(void)
{
    struct timespec hour = { .tv_sec = 3600 };
    while (!stop_requested)
        nanosleep(&hour, NULL);
    KEEP_FRAME();
    return 0;
}

FIXTURE_FRAME int run_sleep(const struct fixture_args *args)
{
    (void)args;
    print_ready();
    sleep_forever();
    KEEP_FRAME();
    return 0;
}

/* ---- mutex ---------------------------------------------------------------------------- */

/* A default (PTHREAD_MUTEX_NORMAL) mutex: glibc stores the owner's TID in it,
 * which is how the agent names the thread that holds the lock. */
static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;

struct holder {
    sem_t locked;
    pid_t tid;
};

FIXTURE_FRAME int hold_lock_forever(void)
{
    struct timespec hour = { .tv_sec = 3600 };
    while (!stop_requested)
        nanosleep(&hour, NULL);
    KEEP_FRAME();
    return 0;
}

FIXTURE_FRAME void *holder_thread(void *arg)
{
    struct holder *holder = arg;
    set_thread_name("holder");
    pthread_mutex_lock(&held_lock);
    holder->tid = current_tid();
    sem_post(&holder->locked);
    hold_lock_forever();
    KEEP_FRAME();
    pthread_mutex_unlock(&held_lock);
    return NULL;
}

FIXTURE_FRAME int wait_for_lock(pthread_mutex_t *lock)
{
    int err = pthread_mutex_lock(lock);
    KEEP_FRAME();
    if (err == 0)
        pthread_mutex_unlock(lock);
    return err;
}

FIXTURE_FRAME int run_mutex(const struct fixture_args *args)
{
    (void)args;
    static struct holder holder;
    sem_init(&holder.locked, 0, 0);
    pthread_detach(spawn_thread(holder_thread, &holder));
    while (sem_wait(&holder.locked) != 0)
        ;
    wait_until_blocked(holder.tid, SLEEP_SYSCALLS);
    print_ready_with("holder_tid=%d", (int)holder.tid);
    wait_for_lock(&held_lock);
    KEEP_FRAME();
    return 0;
}

/* ---- deadlock ------------------------------------------------------------------------- */

/* Main holds A and wants B; `worker` holds B and wants A. */
static pthread_mutex_t lock_a = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t lock_b = PTHREAD_MUTEX_INITIALIZER;

struct deadlock_worker {
    pthread_barrier_t both_held;
    pid_t tid;
};

FIXTURE_FRAME int deadlock_worker_side(void)
{
    int err = pthread_mutex_lock(&lock_a);
    KEEP_FRAME();
    return err;
}

FIXTURE_FRAME void *deadlock_worker_thread(void *arg)
{
    struct deadlock_worker *worker = arg;
    set_thread_name("worker");
    pthread_mutex_lock(&lock_b);
    worker->tid = current_tid();
    pthread_barrier_wait(&worker->both_held);
    deadlock_worker_side();
    KEEP_FRAME();
    return NULL;
}

FIXTURE_FRAME int deadlock_main_side(void)
{
    int err = pthread_mutex_lock(&lock_b);
    KEEP_FRAME();
    return err;
}

FIXTURE_FRAME int run_deadlock(const struct fixture_args *args)
{
    (void)args;
    static struct deadlock_worker worker;
    pthread_barrier_init(&worker.both_held, NULL, 2);
    pthread_mutex_lock(&lock_a);
    pthread_detach(spawn_thread(deadlock_worker_thread, &worker));
    pthread_barrier_wait(&worker.both_held);
    /* Only announce once the worker really waits for A: then the wait-for cycle
     * is complete the moment main blocks on B. */
    wait_until_blocked(worker.tid, SYS_futex, SYS_futex);
    print_ready_with("worker_tid=%d", (int)worker.tid);
    deadlock_main_side();
    KEEP_FRAME();
    return 0;
}

/* ---- pipe ------------------------------------------------------------------------------- */

FIXTURE_FRAME ssize_t read_from_pipe(int fd)
{
    char byte;
    ssize_t n;
    do {
        n = read(fd, &byte, 1);
    } while (n < 0 && errno == EINTR);
    KEEP_FRAME();
    return n;
}

FIXTURE_FRAME int run_pipe(const struct fixture_args *args)
{
    (void)args;
    int fds[2];
    /* The write end stays open (and unused) in this process, so read() never
     * sees end-of-file. */
    if (pipe2(fds, O_CLOEXEC) != 0)
        fatal_errno("pipe2");
    print_ready();
    read_from_pipe(fds[0]);
    KEEP_FRAME();
    return 0;
}

/* ---- io ----------------------------------------------------------------------------------- */

/* Rewrites the same 8 MiB and fsyncs it: every round is real device I/O (the
 * pages are dirtied again), while the file never grows. */
FIXTURE_FRAME uint64_t fsync_loop(int fd)
{
    const void *chunk = io_chunk();
    uint64_t rounds = 0;
    while (!stop_requested) {
        pwrite_all(fd, chunk, IO_CHUNK_BYTES, 0);
        if (fsync(fd) != 0)
            fatal_errno("fsync");
        rounds++;
    }
    KEEP_FRAME();
    return rounds;
}

FIXTURE_FRAME int run_io(const struct fixture_args *args)
{
    const char *dir = args->npos > 0 ? args->pos[0] : temp_dir();
    char path[4096];
    int fd = create_temp_file(dir, path, sizeof path);
    io_chunk(); /* fill the buffer before announcing ready */
    install_stop_handler(SIGTERM);
    install_stop_handler(SIGINT);
    print_ready_with("file=%s", path);
    fsync_loop(fd);
    KEEP_FRAME();
    close(fd);
    unlink(path);
    return 0;
}

/* ---- zombie-parent ------------------------------------------------------------------------ */

FIXTURE_FRAME int run_zombie_parent(const struct fixture_args *args)
{
    (void)args;
    pid_t child = fork();
    if (child < 0)
        fatal_errno("fork");
    if (child == 0)
        _exit(0);
    /* WNOWAIT waits for the child to exit without reaping it, so the zombie
     * exists by the time the ready line is printed. */
    siginfo_t info;
    while (waitid(P_PID, (id_t)child, &info, WEXITED | WNOWAIT) != 0) {
        if (errno != EINTR)
            fatal_errno("waitid");
    }
    print_ready_with("zombie=%d", (int)child);
    sleep_forever();
    KEEP_FRAME();
    return 0;
}
