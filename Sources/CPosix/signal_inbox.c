#define _GNU_SOURCE
#include "signal_inbox.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

int sa_signal_inbox_open(const int *signals, size_t count)
{
    sigset_t mask;
    sigemptyset(&mask);
    for (size_t i = 0; i < count; i++)
        sigaddset(&mask, signals[i]);
    int rc = pthread_sigmask(SIG_BLOCK, &mask, NULL);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    return signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
}

int sa_signal_inbox_take(int fd, int *signal_number, int *code)
{
    struct signalfd_siginfo info;
    for (;;) {
        ssize_t n = read(fd, &info, sizeof info);
        if (n == (ssize_t)sizeof info)
            break;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return 0;
        if (n >= 0)
            errno = EIO;
        return -1;
    }
    *signal_number = (int)info.ssi_signo;
    *code = info.ssi_code;
    return 1;
}
