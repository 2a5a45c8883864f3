/* Mode `loop`: a 5 ms timer event loop that runs a script of stalls.
 *
 *   main -> run_loop -> event_loop -> epoll_wait            (idle)
 *                                  -> handle_tick           (~50 µs per tick)
 *                                  -> run_step -> <step>    (scripted stall)
 *
 * Between steps the loop idles for --gap seconds, as a real event loop would,
 * so the agent sees each stall end before the next begins. With --log, one JSON
 * line per step records when the main thread entered and left the step
 * function: the oracle tests compare stall reports with. */
#define _GNU_SOURCE
#include "include/stall_fixtures.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#define TICK_NS 5000000u
#define TICK_WORK_NS 50000u

enum step_kind { STEP_SPIN, STEP_SLEEP, STEP_MUTEX, STEP_PIPE, STEP_IO, STEP_STARVE, STEP_SHORT, STEP_DIE, STEP_IDLE,
                 STEP_SATURATE, STEP_NESTED, STEP_SYSCALLS };

static const char *const step_names[] = {
    [STEP_SPIN] = "spin", [STEP_SLEEP] = "sleep", [STEP_MUTEX] = "mutex",
    [STEP_PIPE] = "pipe", [STEP_IO] = "io", [STEP_STARVE] = "starve",
    [STEP_SHORT] = "short", [STEP_DIE] = "die", [STEP_IDLE] = "idle",
    [STEP_SATURATE] = "saturate", [STEP_NESTED] = "nested", [STEP_SYSCALLS] = "syscalls",
};

struct step {
    enum step_kind kind;
    double seconds;
};

enum phase {
    PHASE_GAP,         /* idling until phase_end_ns, then the next step (or `done`) */
    PHASE_IDLE_STEP,   /* an `idle` step: idling until phase_end_ns */
    PHASE_SHORT_STEP,  /* a `short` step: one burst per tick until phase_end_ns */
    PHASE_SATURATED_STEP, /* a `saturate` step: back-to-back 1-3 ms turns, never asleep */
    PHASE_FINISHED,
};

struct loop_state {
    struct step *steps;
    size_t step_count, current;
    enum phase phase;
    uint64_t phase_end_ns;
    struct stamp step_start, last_burst_end;  /* for `idle` and `short` steps */
    double gap_seconds;
    bool exit_when_done;
    int log_fd, epfd, timerfd, signalfd;
    int busyfd;        /* eventfd kept readable during `saturate`: epoll_wait never sleeps */
    unsigned requests;
    bool replies_pending;
};

/* ---- script ------------------------------------------------------------------------------ */

/* Parses "KIND:SECONDS,KIND:SECONDS,..." or exits with status 2. */
static void parse_script(const char *spec, struct loop_state *st)
{
    char *copy = strdup(spec);
    size_t capacity = 1;
    for (const char *p = spec; *p; p++)
        capacity += *p == ',';
    st->steps = calloc(capacity, sizeof *st->steps);
    if (copy == NULL || st->steps == NULL)
        fatal("out of memory");

    char *save = NULL;
    for (char *item = strtok_r(copy, ",", &save); item != NULL; item = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(item, ':');
        struct step step;
        bool known = false;
        if (colon != NULL) {
            *colon = '\0';
            for (size_t k = 0; k < sizeof step_names / sizeof step_names[0]; k++) {
                if (strcmp(item, step_names[k]) == 0) {
                    step.kind = (enum step_kind)k;
                    known = true;
                }
            }
        }
        if (!known || !parse_seconds(colon + 1, &step.seconds))
            usage_error("bad --script step `%s%s%s` (want KIND:SECONDS, KIND one of"
                        " spin sleep mutex pipe io starve short die idle saturate nested syscalls)",
                        item, colon ? ":" : "", colon ? colon + 1 : "");
        st->steps[st->step_count++] = step;
    }
    free(copy);
}

static void finish_step(struct loop_state *st, const struct stamp *end)
{
    stall_log_append(st->log_fd, step_names[st->steps[st->current].kind], &st->step_start, end);
    st->current++;
    st->phase = PHASE_GAP;
    st->phase_end_ns = mono_ns() + seconds_to_ns(st->gap_seconds);
}

/* Advances the script on a timer tick; returns true when run_step must run now. */
static bool script_step_due(struct loop_state *st)
{
    uint64_t now = mono_ns();
    struct stamp end;

    switch (st->phase) {
    case PHASE_GAP:
        if (now < st->phase_end_ns)
            return false;
        if (st->current == st->step_count) {
            puts("done");
            fflush(stdout);
            st->phase = PHASE_FINISHED;
            return false;
        }
        switch (st->steps[st->current].kind) {
        case STEP_IDLE:
            stamp_now(&st->step_start);
            st->phase = PHASE_IDLE_STEP;
            st->phase_end_ns = timespec_ns(&st->step_start.mono) + seconds_to_ns(st->steps[st->current].seconds);
            return false;
        case STEP_SHORT:
            st->phase = PHASE_SHORT_STEP;
            st->phase_end_ns = 0; /* set by the first burst */
            return true;
        case STEP_SATURATE: {
            stamp_now(&st->step_start);
            st->phase = PHASE_SATURATED_STEP;
            st->phase_end_ns = timespec_ns(&st->step_start.mono) + seconds_to_ns(st->steps[st->current].seconds);
            uint64_t one = 1;
            if (write(st->busyfd, &one, sizeof one) != (ssize_t)sizeof one)
                fatal_errno("write eventfd");
            return false;
        }
        default:
            return true;
        }
    case PHASE_IDLE_STEP:
        if (now < st->phase_end_ns)
            return false;
        stamp_now(&end);
        finish_step(st, &end);
        return false;
    case PHASE_SHORT_STEP:
        if (st->phase_end_ns == 0 || now < st->phase_end_ns)
            return true;
        finish_step(st, &st->last_burst_end);
        return false;
    case PHASE_SATURATED_STEP: /* the busyfd handler runs it */
    case PHASE_FINISHED:
        return false;
    }
    return false;
}

/* One turn of a `saturate` step: serve a request and keep an event pending, so the
 * next epoll_wait returns at once; at the end, let the loop sleep again. */
static void saturated_turn(struct loop_state *st)
{
    uint64_t value;
    (void)!read(st->busyfd, &value, sizeof value);
    if (st->phase != PHASE_SATURATED_STEP)
        return;
    if (mono_ns() >= st->phase_end_ns) {
        struct stamp end;
        stamp_now(&end);
        /* The throughput benchmarks compare: requests served in the step. */
        printf("saturated requests=%u seconds=%.6f\n", st->requests,
               (double)(timespec_ns(&end.mono) - timespec_ns(&st->step_start.mono)) / 1e9);
        fflush(stdout);
        st->requests = 0;
        finish_step(st, &end);
        return;
    }
    serve_request(st->requests++);
    KEEP_FRAME();
    st->replies_pending = true;
    uint64_t one = 1;
    if (write(st->busyfd, &one, sizeof one) != (ssize_t)sizeof one)
        fatal_errno("write eventfd");
}

/* ---- the loop --------------------------------------------------------------------------- */

/* The work of an ordinary tick: well below any stall threshold. */
FIXTURE_FRAME uint64_t handle_tick(void)
{
    uint64_t acc = burn_cpu_until(mono_ns() + TICK_WORK_NS);
    KEEP_FRAME();
    return acc;
}

/* Runs the current step to its end (or, for `short`, one burst of it). The log
 * stamps sit right around the call of the step function. */
FIXTURE_FRAME void run_step(struct loop_state *st)
{
    const struct step *step = &st->steps[st->current];

    if (step->kind == STEP_SHORT) {
        struct stamp start;
        stamp_now(&start);
        if (st->phase_end_ns == 0) {
            st->step_start = start;
            st->phase_end_ns = timespec_ns(&start.mono) + seconds_to_ns(step->seconds);
        }
        short_bursts();
        KEEP_FRAME();
        stamp_now(&st->last_burst_end);
        return;
    }

    struct stamp end;
    stamp_now(&st->step_start);
    switch (step->kind) {
    case STEP_SPIN: busy_compute(step->seconds); break;
    case STEP_SLEEP: blocking_sleep(step->seconds); break;
    case STEP_MUTEX: lock_contention(step->seconds); break;
    case STEP_PIPE: wait_on_pipe(step->seconds); break;
    case STEP_IO: disk_io(step->seconds); break;
    case STEP_STARVE: starved_compute(step->seconds); break;
    case STEP_DIE: dying_compute(step->seconds, st->log_fd, &st->step_start); break;
    case STEP_NESTED: nested_wait(step->seconds); break;
    case STEP_SYSCALLS: syscall_heavy_compute(step->seconds); break;
    case STEP_SATURATE:
    case STEP_SHORT:
    case STEP_IDLE: break; /* handled by script_step_due / above */
    }
    KEEP_FRAME();
    stamp_now(&end);
    finish_step(st, &end);
}

/* Returns the exit status: 0 on SIGTERM/SIGINT, or when done with --exit-when-done. */
FIXTURE_FRAME int event_loop(struct loop_state *st)
{
    print_ready_with("steps=%zu", st->step_count);
    st->phase = PHASE_GAP;
    st->phase_end_ns = mono_ns() + seconds_to_ns(st->gap_seconds);

    for (;;) {
        if (st->replies_pending) {
            flush_replies();
            st->replies_pending = false;
        }
        struct epoll_event events[4];
        int n = epoll_wait(st->epfd, events, 4, -1);
        if (n < 0) {
            if (errno != EINTR)
                fatal_errno("epoll_wait");
            continue;
        }
        for (int i = 0; i < n; i++) {
            if (events[i].data.fd == st->signalfd)
                return 0;
            if (events[i].data.fd == st->busyfd) {
                saturated_turn(st);
                if (st->phase == PHASE_FINISHED && st->exit_when_done)
                    return 0;
                continue;
            }
            /* After a long step several expirations are pending; they collapse
             * into one tick, as in any timerfd loop. */
            uint64_t expirations;
            if (read(st->timerfd, &expirations, sizeof expirations) != (ssize_t)sizeof expirations)
                continue;
            if (script_step_due(st)) {
                run_step(st);
                KEEP_FRAME();
            } else {
                handle_tick();
                KEEP_FRAME();
            }
            if (st->phase == PHASE_FINISHED && st->exit_when_done)
                return 0;
        }
    }
}

static void epoll_add(int epfd, int fd)
{
    struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
        fatal_errno("epoll_ctl");
}

FIXTURE_FRAME int run_loop(const struct fixture_args *args)
{
    if (args->script == NULL)
        usage_error("loop needs --script SPEC");
    static struct loop_state st;
    parse_script(args->script, &st);
    st.gap_seconds = args->gap_seconds;
    st.exit_when_done = args->exit_when_done;
    st.log_fd = stall_log_open(args->log_path);
    for (size_t i = 0; i < st.step_count; i++) {
        if (st.steps[i].kind == STEP_IO)
            io_chunk(); /* fill the 8 MiB buffer now, not inside the first io step */
    }

    /* Before any helper thread exists, so they all inherit the blocked mask and the
     * signals can only ever be read from the signalfd by the loop. */
    static const int signals[] = { SIGTERM, SIGINT };
    sigset_t set = block_signals(signals, sizeof signals / sizeof signals[0]);

    st.epfd = epoll_create1(EPOLL_CLOEXEC);
    st.signalfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    st.timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    st.busyfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (st.epfd < 0 || st.signalfd < 0 || st.timerfd < 0 || st.busyfd < 0)
        fatal_errno("loop set-up");
    struct itimerspec tick = {
        .it_interval = { .tv_nsec = TICK_NS },
        .it_value = { .tv_nsec = TICK_NS },
    };
    if (timerfd_settime(st.timerfd, 0, &tick, NULL) != 0)
        fatal_errno("timerfd_settime");
    epoll_add(st.epfd, st.timerfd);
    epoll_add(st.epfd, st.signalfd);
    epoll_add(st.epfd, st.busyfd);

    int status = event_loop(&st);
    KEEP_FRAME();
    close(st.timerfd);
    close(st.busyfd);
    close(st.signalfd);
    close(st.epfd);
    if (st.log_fd >= 0)
        close(st.log_fd);
    return status;
}
