import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 27, item 7: a process whose main thread called `pthread_exit` while other threads
/// run on was called a zombie (exit 5, `dump --all-threads` too) and "not running" for ever
/// under `--pidfile`. It is alive; only its main thread is gone.
@Suite struct MainThreadGoneTests {
    let agent = FixtureProcess.stallagentURL

    static let program = """
        #include <pthread.h>
        #include <stdio.h>
        #include <unistd.h>
        static void *worker(void *arg) { (void)arg; for (;;) sleep(1); return NULL; }
        int main(void) {
            pthread_t thread;
            pthread_create(&thread, NULL, worker, NULL);
            printf("ready\\n");
            fflush(stdout);
            pthread_exit(NULL);
        }
        """

    @Test(.tags(.hostile)) func attack17_aMainThreadThatCalledPthreadExitIsSaidAsSuch() throws {
        let scratch = try HostileScratch("pthread-exit")
        let source = scratch.path("main.c")
        try Self.program.write(toFile: source, atomically: true, encoding: .utf8)
        let program = scratch.path("headless")
        try NativeFixture.run("cc", ["-g", "-o", program, source, "-lpthread"])
        let target = try ReadyProgram(program)
        defer { target.stop() }
        let pid = target.pid
        usleep(100_000)

        let said = "process \(pid)'s main thread has exited (pthread_exit) while 1 other thread runs on"
        let watched = try runCommand(agent, ["--pid", "\(pid)", "--duration", "1s"], timeout: 30)
        #expect(watched.status == 5, "\(watched.stderr)")
        #expect(watched.stderr.contains(said), "\(watched.stderr)")
        #expect(!watched.stderr.contains("zombie"), "\(watched.stderr)")
        let dumped = try runCommand(agent, ["dump", "--pid", "\(pid)"], timeout: 30)
        #expect(dumped.status == 5 && dumped.stderr.contains(said), "\(dumped.stderr)")

        // The threads that run on are what --all-threads shows.
        let all = try runCommand(agent, ["dump", "--all-threads", "--pid", "\(pid)"], timeout: 30)
        #expect(all.status == 0, "\(all.stderr)")
        #expect(all.stdout.contains("clock_nanosleep"), "\(all.stdout)")
        // Whole stacks: read through the thread, not the zombie leader (which has no memory).
        #expect(all.stdout.contains("worker") && all.stdout.contains("start_thread"), "\(all.stdout)")
        #expect(!all.stdout.contains("tid \(pid) "), "\(all.stdout)")

        let pidfile = scratch.path("headless.pid")
        try "\(pid)\n".write(toFile: pidfile, atomically: true, encoding: .utf8)
        let byPidfile = try runCommand(agent, ["--pidfile", pidfile, "--duration", "1s"], timeout: 30)
        #expect(byPidfile.stderr.contains("whose main thread has exited (pthread_exit)"), "\(byPidfile.stderr)")
    }

    /// The same exit during a watch ended it as "until it exited".
    @Test(.tags(.hostile)) func attack17_aMainThreadThatExitsDuringAWatchIsSaidAsSuch() throws {
        let scratch = try HostileScratch("pthread-exit-later")
        let source = scratch.path("main.c")
        try Self.program.replacingOccurrences(of: "    pthread_exit(NULL);", with: "    sleep(1);\n    pthread_exit(NULL);")
            .write(toFile: source, atomically: true, encoding: .utf8)
        let program = scratch.path("headless-later")
        try NativeFixture.run("cc", ["-g", "-o", program, source, "-lpthread"])
        let target = try ReadyProgram(program)
        defer { target.stop() }
        let watched = try runCommand(agent, ["--pid", "\(target.pid)", "--duration", "4s", "--report-dir", scratch.path("reports")], timeout: 30)
        #expect(watched.status == 0, "\(watched.stderr)")
        #expect(watched.stderr.contains("main thread has exited (pthread_exit) while 1 other thread runs on"), "\(watched.stderr)")
        #expect(watched.stderr.contains("until its main thread exited (pthread_exit), 1 other thread running on"), "\(watched.stderr)")
        #expect(!watched.stderr.contains("until it exited"), "\(watched.stderr)")
    }
}
