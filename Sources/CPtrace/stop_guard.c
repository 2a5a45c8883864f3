#define _GNU_SOURCE
#include "stop_guard.h"

#include <errno.h>
#include <fcntl.h>
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
#include <sys/timerfd.h>
#include <poll.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct shared_state {
    /// Incremented at each window start and end: odd while a window is open.
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
/// Armed for `window_alarm_ns` when a window opens, disarmed when it closes: the guardian
/// sleeps on it and wakes only for a window that stays open that long (the agent stopped, or
/// a target slow to stop). Waking the guardian at every window instead (a futex wake) cost
/// the target 15-20 us per capture on a 2-CPU machine, a third of the whole stop: the guardian
/// ran on the CPU the stopped target had left and held it when the target was continued.
static int window_timer = -1;
static const long window_alarm_ns = 5000000;
/// A job-control stop requested inside a window, delivered at its end.
static _Atomic int deferred_stop;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int install_result;

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

static void guardian_loop(pid_t agent, int timer)
{
    for (;;) {
        if (getppid() != agent)
            _exit(0);
        // Sleep until a window has been open for window_alarm_ns; wake each second to notice
        // the agent's death.
        struct pollfd wait_for = { .fd = timer, .events = POLLIN };
        if (poll(&wait_for, 1, 1000) <= 0)
            continue;
        uint64_t expirations;
        (void)!read(timer, &expirations, sizeof expirations);
        uint32_t sequence = atomic_load(&shared->sequence);
        // While that window stays open, check every 2 ms whether the capturing thread is
        // stopped.
        while ((sequence & 1u) != 0 && atomic_load(&shared->sequence) == sequence) {
            char state = thread_state(agent, atomic_load(&shared->tid));
            if (state == 'T') {
                atomic_store(&shared->rescued, 1);
                atomic_fetch_add(&shared->rescues, 1);
                kill(agent, SIGCONT);
            }
            if (getppid() != agent)
                _exit(0);
            struct timespec pause = { 0, 2000000 };
            nanosleep(&pause, NULL);
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
    window_timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    if (window_timer < 0) {
        install_result = -1;
        return;
    }
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
        // Out of the way of 0-2 first: an agent started with stdin closed got it as fd 0.
        int timer = fcntl(window_timer, F_DUPFD_CLOEXEC, 10);
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 1);
            dup2(null, 2);
        }
        // The window timer is the one file kept, as fd 3.
        dup2(timer, 3);
        syscall(SYS_close_range, 4u, ~0u, 0u);
        // Not in the agent's process group: Ctrl-Z and Ctrl-C of the terminal are not ours.
        setpgid(0, 0);
        guardian_loop(agent, 3);
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
    // Armed before the window opens: stopped in between, the agent holds no target yet.
    if (guardian > 0) {
        struct itimerspec alarm = { .it_value = { 0, window_alarm_ns } };
        timerfd_settime(window_timer, 0, &alarm, NULL);
    }
    atomic_fetch_add(&shared->sequence, 1);
}

void sa_capture_window_end(void)
{
    if (shared == NULL)
        return;
    atomic_fetch_add(&shared->sequence, 1);
    if (guardian > 0) {
        struct itimerspec off = { 0 };
        timerfd_settime(window_timer, 0, &off, NULL);
    }
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
