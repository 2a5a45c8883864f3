// Namespaces, a class template and a lambda on the main thread's stack, blocked in read().
#include <cstdio>
#include <unistd.h>

namespace app {
namespace net {
template <typename T> struct Queue {
    T total = 0;
    __attribute__((noinline)) T drain(int fd) {
        auto wait = [&](int f) __attribute__((noinline)) {
            char byte;
            return static_cast<T>(read(f, &byte, 1));
        };
        total += wait(fd);
        return total;
    }
};
} // namespace net
} // namespace app

int main() {
    int fds[2];
    if (pipe(fds) != 0) return 1;
    std::printf("ready pid=%d\n", getpid());
    std::fflush(stdout);
    app::net::Queue<long> queue;
    return static_cast<int>(queue.drain(fds[0]));
}
