#define _GNU_SOURCE
#include "sigbus_guard.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

// Enough for every module of many targets plus their debug files; a full table only means
// the caller falls back to reading the file into memory.
#define SLOTS 8192

struct guarded_range {
    _Atomic uintptr_t start;
    _Atomic uintptr_t end;
    _Atomic unsigned long faults;
};

static struct guarded_range ranges[SLOTS];
static _Atomic unsigned long total_faults;
static struct sigaction previous;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int install_result = -1;
static int install_errno;

static void handler(int sig, siginfo_t *info, void *context)
{
    uintptr_t address = (uintptr_t)info->si_addr;
    for (int i = 0; i < SLOTS; i++) {
        uintptr_t start = atomic_load_explicit(&ranges[i].start, memory_order_acquire);
        if (start == 0 || address < start)
            continue;
        if (address >= atomic_load_explicit(&ranges[i].end, memory_order_acquire))
            continue;
        long page = sysconf(_SC_PAGESIZE);
        void *base = (void *)(address & ~((uintptr_t)page - 1));
        // mmap is async-signal-safe in practice (a plain syscall); MAP_FIXED replaces the
        // file page in place, so returning retries the load and it reads zeros.
        if (mmap(base, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0)
            != MAP_FAILED) {
            atomic_fetch_add(&ranges[i].faults, 1);
            atomic_fetch_add(&total_faults, 1);
            return;
        }
        break;
    }
    // Not ours: behave as if this handler were not there.
    if (previous.sa_flags & SA_SIGINFO) {
        if (previous.sa_sigaction != NULL) {
            previous.sa_sigaction(sig, info, context);
            return;
        }
    } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
        previous.sa_handler(sig);
        return;
    }
    // Default action: restore it and return; the faulting instruction runs again and the
    // kernel delivers SIGBUS with its usual (fatal) effect.
    signal(sig, SIG_DFL);
}

static void install_once(void)
{
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = handler;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&action.sa_mask);
    install_result = sigaction(SIGBUS, &action, &previous);
    install_errno = errno;
}

int sa_sigbus_guard_install(void)
{
    pthread_once(&once, install_once);
    if (install_result != 0)
        errno = install_errno;
    return install_result;
}

int sa_sigbus_guard_add(void *start, size_t length)
{
    if (start == NULL || length == 0)
        return -1;
    for (int i = 0; i < SLOTS; i++) {
        uintptr_t expected = 0;
        // Claim the slot with a placeholder start, publish the end, then the real start:
        // the handler never sees a start without its end.
        if (atomic_load_explicit(&ranges[i].start, memory_order_relaxed) != 0)
            continue;
        if (!atomic_compare_exchange_strong(&ranges[i].start, &expected, UINTPTR_MAX))
            continue;
        atomic_store(&ranges[i].faults, 0);
        atomic_store_explicit(&ranges[i].end, (uintptr_t)start + length, memory_order_release);
        atomic_store_explicit(&ranges[i].start, (uintptr_t)start, memory_order_release);
        return i;
    }
    return -1;
}

void sa_sigbus_guard_remove(int slot)
{
    if (slot < 0 || slot >= SLOTS)
        return;
    atomic_store_explicit(&ranges[slot].start, UINTPTR_MAX, memory_order_release);
    atomic_store_explicit(&ranges[slot].end, 0, memory_order_release);
    atomic_store_explicit(&ranges[slot].start, 0, memory_order_release);
}

unsigned long sa_sigbus_guard_slot_faults(int slot)
{
    if (slot < 0 || slot >= SLOTS)
        return 0;
    return atomic_load(&ranges[slot].faults);
}

unsigned long sa_sigbus_guard_total_faults(void)
{
    return atomic_load(&total_faults);
}
