// A generic type in a namespace enum and a closure on the main thread's stack, blocked in read().
#if canImport(Glibc)
import Glibc
#endif

enum Server {
    struct Worker<Element> {
        var items: [Element]

        @inline(never)
        func drain(fd: Int32) -> Int {
            let wait: (Int32) -> Int = { descriptor in
                var byte: UInt8 = 0
                return read(descriptor, &byte, 1)
            }
            return wait(fd) + items.count
        }
    }
}

var fds: [Int32] = [0, 0]
guard pipe(&fds) == 0 else { exit(1) }
print("ready pid=\(getpid())")
fflush(stdout)
let worker = Server.Worker(items: [1, 2, 3])
exit(Int32(truncatingIfNeeded: worker.drain(fd: fds[0])))
