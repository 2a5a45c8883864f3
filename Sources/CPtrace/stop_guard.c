#define _GNU_SOURCE
#include "stop_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct shared_state {
    /// Incremented at each window start and end: odd while a window is open. The guardian
    /// futex-waits on it.
    _Atomic uint32_t sequence;
    /// The capturing thread (its /proc state tells whether it is stopped).
    _Atomic pid_t tid;
    /// Set by the guardian when it continued a stopped agent inside a window.
    _Atomic uint32_t rescued;
    _Atomic unsigned long rescues;
};

static struct shared_state *shared;
static struct shared_state local_state;
static pid_t guardian;
/// A job-control stop requested inside a window, delivered at its end.
static _Atomic int deferred_stop;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int install_result;

static long futex(_Atomic uint32_t *word, int op, uint32_t value, const struct timespec *timeout)
{
    return syscall(SYS_futex, (uint32_t *)word, op, value, timeout, NULL, 0);
}

static int window_open(void)
{
    return shared != NULL && (atomic_load(&shared->sequence) & 1u) != 0;
}

static void job_control_handler(int sig)
{
    (void)sig;
    int saved = errno;
    if (window_open())
        atomic_store(&deferred_stop, 1);
    else
        raise(SIGSTOP);
    errno = saved;
}

/// Reads the state letter of /proc/PID/task/TID/stat with async-signal-safe calls only.
static char thread_state(pid_t pid, pid_t tid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)pid, (int)tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return '?';
    char buffer[512];
    ssize_t n = read(fd, buffer, sizeof buffer - 1);
    close(fd);
    if (n <= 0)
        return '?';
    buffer[n] = 0;
    char *paren = strrchr(buffer, ')');
    return paren != NULL && paren[1] == ' ' ? paren[2] : '?';
}

static void guardian_loop(pid_t agent)
{
    for (;;) {
        if (getppid() != agent)
            _exit(0);
        uint32_t sequence = atomic_load(&shared->sequence);
        if ((sequence & 1u) == 0) {
            // Wait for a window to open; wake now and then to notice the agent's death.
            struct timespec timeout = { 1, 0 };
            futex(&shared->sequence, FUTEX_WAIT, sequence, &timeout);
            continue;
        }
        // A window is open: it normally closes within microseconds. Check every 2 ms
        // whether the capturing thread is stopped while it stays open.
        struct timespec pause = { 0, 2000000 };
        nanosleep(&pause, NULL);
        if (atomic_load(&shared->sequence) != sequence)
            continue;
        char state = thread_state(agent, atomic_load(&shared->tid));
        if (state == 'T') {
            atomic_store(&shared->rescued, 1);
            atomic_fetch_add(&shared->rescues, 1);
            kill(agent, SIGCONT);
        }
    }
}

/// At exit the guardian is killed and reaped here: left to die of PR_SET_PDEATHSIG it would
/// be reparented, and an init that does not reap (a container's) would keep a zombie.
static void reap_guardian(void)
{
    if (guardian > 0) {
        kill(guardian, SIGKILL);
        waitpid(guardian, NULL, __WALL);
        guardian = 0;
    }
}

static void install_once(void)
{
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = job_control_handler;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    // Respect an inherited SIG_IGN (nohup-style launches ignore them on purpose).
    int signals[] = { SIGTSTP, SIGTTIN, SIGTTOU };
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++) {
        struct sigaction current;
        if (sigaction(signals[i], NULL, &current) == 0 && current.sa_handler == SIG_IGN)
            continue;
        sigaction(signals[i], &action, NULL);
    }

    void *memory = mmap(NULL, sizeof(struct shared_state), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) {
        shared = &local_state;
        install_result = -1;
        return;
    }
    shared = memory;
    pid_t agent = getpid();
    pid_t child = fork();
    if (child == 0) {
        // Only async-signal-safe calls from here: the parent is multi-threaded.
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        prctl(PR_SET_NAME, "stallagent-stop", 0, 0, 0);
        sigset_t all;
        sigfillset(&all);
        sigdelset(&all, SIGKILL);
        sigprocmask(SIG_SETMASK, &all, NULL);
        // Nothing of the agent's is needed: no open reports or sockets held on its behalf.
        // Not the agent's stdin/stdout/stderr either: a guardian that outlives the agent by
        // a moment (until its next look at getppid) must not hold a caller's pipe open, or
        // whoever reads the agent's output to EOF waits for it.
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 1);
            dup2(null, 2);
        }
        syscall(SYS_close_range, 3u, ~0u, 0u);
        // Not in the agent's process group: Ctrl-Z and Ctrl-C of the terminal are not ours.
        setpgid(0, 0);
        guardian_loop(agent);
        _exit(0);
    }
    if (child < 0) {
        install_result = -1;
        return;
    }
    guardian = child;
    atexit(reap_guardian);
    install_result = 0;
}

int sa_stop_guard_install(void)
{
    pthread_once(&once, install_once);
    return install_result;
}

void sa_capture_window_begin(void)
{
    if (shared == NULL)
        return;
    atomic_store(&shared->tid, (pid_t)syscall(SYS_gettid));
    atomic_fetch_add(&shared->sequence, 1);
    if (guardian > 0)
        futex(&shared->sequence, FUTEX_WAKE, 1, NULL);
}

void sa_capture_window_end(void)
{
    if (shared == NULL)
        return;
    atomic_fetch_add(&shared->sequence, 1);
    int stop = atomic_exchange(&deferred_stop, 0);
    // Stopped by SIGSTOP mid-window and resumed by the guardian: honour the stop now that
    // the target runs again.
    if (atomic_exchange(&shared->rescued, 0) != 0)
        stop = 1;
    if (stop)
        raise(SIGSTOP);
}

unsigned long sa_stop_guard_rescues(void)
{
    return shared == NULL ? 0 : atomic_load(&shared->rescues);
}

pid_t sa_stop_guard_pid(void)
{
    return guardian;
}
