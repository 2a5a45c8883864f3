/* A GLib main loop whose timeout handler, on its fifth tick, calls g_usleep for 2 s: the
 * culprit a reader wants is run_sleep (this program's), not g_usleep (GLib's) or
 * clock_nanosleep (libc's). Built against the runtime library alone (no -dev package): the
 * few GLib calls it makes are declared here. */
#include <stdio.h>

typedef struct _GMainLoop GMainLoop;
typedef int (*GSourceFunc)(void *data);
extern GMainLoop *g_main_loop_new(void *context, int is_running);
extern void g_main_loop_run(GMainLoop *loop);
extern void g_main_loop_quit(GMainLoop *loop);
extern unsigned g_timeout_add(unsigned interval, GSourceFunc function, void *data);
extern void g_usleep(unsigned long microseconds);

static int ticks;

__attribute__((noinline)) void run_sleep(void)
{
    g_usleep(2000000); /* the stall */
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static int on_tick(void *data)
{
    ticks++;
    if (ticks == 5)
        run_sleep();
    if (ticks == 30)
        g_main_loop_quit((GMainLoop *)data);
    return 1;
}

int main(void)
{
    GMainLoop *loop = g_main_loop_new(NULL, 0);
    g_timeout_add(100, on_tick, loop);
    printf("ready\n");
    fflush(stdout);
    g_main_loop_run(loop);
    return 0;
}
