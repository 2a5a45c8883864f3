/* batch: a test runner in C, for the wrapper's batch rule. run_batch calls one
 * "test" after another, printing `test NAME` as each starts and `done` at the
 * end, then exits 1 (as a runner does when a test failed):
 *   fast_test_0 .. fast_test_23  10-40 ms each, CPU or a short sleep
 *   sleepy_test                  one 3 s nanosleep            (blocked)
 *   spinning_test                3 s of pure CPU              (hang)
 *   deadlock_test                lock-order deadlock with thread `partner`, which gives
 *                                up after 4 s (pthread_mutex_timedlock)   (lock)
 * Every test is its own function, called once, like the tests of a real suite.
 *
 * thread-batch: the same runner run as Rust's libtest runs tests, each in a thread
 * of its own named after it while the main thread joins it: fast_test_0 .. 5,
 * sleepy_test, fast_test_6 .. 11, spinning_test, then exit 0. */
#define _GNU_SOURCE
#include "include/stall_fixtures.h"

#include <stdio.h>

static void announce(const char *name)
{
    printf("test %s\n", name);
    fflush(stdout);
}

#define FAST_TEST(n)                                                        \
    FIXTURE_FRAME static uint64_t fast_test_##n(void)                      \
    {                                                                       \
        announce("fast_test_" #n);                                          \
        uint64_t ms = 10 + (n * 7) % 31;                                    \
        if (n % 3 == 0) {                                                   \
            nanosleep_ns(ms * 1000000u);                                    \
            return ms;                                                      \
        }                                                                   \
        uint64_t acc = burn_cpu_until(mono_ns() + ms * 1000000u);           \
        KEEP_FRAME();                                                       \
        return acc;                                                         \
    }

FAST_TEST(0) FAST_TEST(1) FAST_TEST(2) FAST_TEST(3) FAST_TEST(4) FAST_TEST(5)
FAST_TEST(6) FAST_TEST(7) FAST_TEST(8) FAST_TEST(9) FAST_TEST(10) FAST_TEST(11)
FAST_TEST(12) FAST_TEST(13) FAST_TEST(14) FAST_TEST(15) FAST_TEST(16) FAST_TEST(17)
FAST_TEST(18) FAST_TEST(19) FAST_TEST(20) FAST_TEST(21) FAST_TEST(22) FAST_TEST(23)

FIXTURE_FRAME static uint64_t sleepy_test(void)
{
    announce("sleepy_test");
    nanosleep_ns(seconds_to_ns(3));
    KEEP_FRAME();
    return 0;
}

FIXTURE_FRAME static uint64_t spinning_test(void)
{
    announce("spinning_test");
    uint64_t acc = burn_cpu_until(mono_ns() + seconds_to_ns(3));
    KEEP_FRAME();
    return acc;
}

static pthread_mutex_t lock_a = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t lock_b = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t both_locked;

/* Holds lock_b, then wants lock_a (held by main, which wants lock_b): a wait-for
 * cycle, broken after 4 s by the timeout. */
static void *deadlock_partner(void *arg)
{
    (void)arg;
    set_thread_name("partner");
    pthread_mutex_lock(&lock_b);
    pthread_barrier_wait(&both_locked);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 4;
    if (pthread_mutex_timedlock(&lock_a, &until) == 0)
        pthread_mutex_unlock(&lock_a);
    pthread_mutex_unlock(&lock_b);
    return NULL;
}

FIXTURE_FRAME static int deadlock_test(void)
{
    announce("deadlock_test");
    pthread_mutex_lock(&lock_a);
    pthread_barrier_init(&both_locked, NULL, 2);
    pthread_t partner = spawn_thread(deadlock_partner, NULL);
    pthread_barrier_wait(&both_locked);
    pthread_mutex_lock(&lock_b);
    pthread_mutex_unlock(&lock_b);
    pthread_mutex_unlock(&lock_a);
    pthread_join(partner, NULL);
    pthread_barrier_destroy(&both_locked);
    KEEP_FRAME();
    return 0;
}

int run_batch(const struct fixture_args *args)
{
    (void)args;
    uint64_t (*const fast[])(void) = {
        fast_test_0, fast_test_1, fast_test_2, fast_test_3, fast_test_4, fast_test_5,
        fast_test_6, fast_test_7, fast_test_8, fast_test_9, fast_test_10, fast_test_11,
        fast_test_12, fast_test_13, fast_test_14, fast_test_15, fast_test_16, fast_test_17,
        fast_test_18, fast_test_19, fast_test_20, fast_test_21, fast_test_22, fast_test_23,
    };
    uint64_t sink = 0;
    for (int i = 0; i < 6; i++) sink += fast[i]();
    sleepy_test();
    for (int i = 6; i < 12; i++) sink += fast[i]();
    sink += spinning_test();
    for (int i = 12; i < 18; i++) sink += fast[i]();
    deadlock_test();
    for (int i = 18; i < 24; i++) sink += fast[i]();
    printf("done sink=%llu\n", (unsigned long long)(sink & 1));
    fflush(stdout);
    return 1;
}

/* A thread per test, joined by the runner (libtest's shape). */
static void *threaded_test(void *arg)
{
    uint64_t (*test)(void) = (uint64_t (*)(void))arg;  /* a function pointer through void*, as pthread wants */
    char name[16] = "";
    if (test == sleepy_test)
        snprintf(name, sizeof name, "sleepy");
    else if (test == spinning_test)
        snprintf(name, sizeof name, "spinning");
    else
        snprintf(name, sizeof name, "fast");
    set_thread_name(name);
    return (void *)(uintptr_t)test();
}

FIXTURE_FRAME static uint64_t run_in_thread(uint64_t (*test)(void))
{
    void *result = NULL;
    pthread_t thread = spawn_thread(threaded_test, (void *)test);
    pthread_join(thread, &result);
    KEEP_FRAME();
    return (uint64_t)(uintptr_t)result;
}

int run_thread_batch(const struct fixture_args *args)
{
    (void)args;
    uint64_t (*const fast[])(void) = {
        fast_test_0, fast_test_1, fast_test_2, fast_test_3, fast_test_4, fast_test_5,
        fast_test_6, fast_test_7, fast_test_8, fast_test_9, fast_test_10, fast_test_11,
    };
    uint64_t sink = 0;
    for (int i = 0; i < 6; i++) sink += run_in_thread(fast[i]);
    sink += run_in_thread(sleepy_test);
    for (int i = 6; i < 12; i++) sink += run_in_thread(fast[i]);
    sink += run_in_thread(spinning_test);
    printf("done sink=%llu\n", (unsigned long long)(sink & 1));
    fflush(stdout);
    return 0;
}
