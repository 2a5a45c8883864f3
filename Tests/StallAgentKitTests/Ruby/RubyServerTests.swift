import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The Ruby case (issue 26): a one-thread Ruby 3.1 HTTP server on `IO.select` (an
/// event loop: one request is one turn), watched under `ab -c 20`: no report while healthy; a
/// handler calling `sleep 2` is one `blocked` report and a 2 s CPU loop one `hang`, each named
/// by its Ruby method with its script and line — the line Ruby's own `caller` gives.
@Suite(.serialized) struct RubyServerTests {
    static var available: Bool {
        [RubyFrameTests.ruby, "/usr/bin/ab", "/usr/bin/curl"].allSatisfy { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static let server = """
        require "socket"
        STDOUT.sync = true

        def slow_handler
          puts("slow " + caller(0)[0]); sleep 2
          "slept"
        end

        def burn_cpu
          deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 2
          n = 0
          n += 1 while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
          n.to_s
        end

        def respond(client)
          path = client.readpartial(4096)[/\\A\\S+ (\\S+)/, 1]
          body = case path
                 when "/slow" then slow_handler
                 when "/spin" then burn_cpu
                 else "ok"
                 end
          client.write("HTTP/1.0 200 OK\\r\\nContent-Length: #{body.bytesize}\\r\\nConnection: close\\r\\n\\r\\n#{body}")
        rescue EOFError, Errno::ECONNRESET
        ensure
          client.close
        end

        server = TCPServer.new("127.0.0.1", Integer(ARGV[0]))
        puts "ready"
        loop do
          ready, = IO.select([server])
          ready.each do |s|
            client = s.accept_nonblock(exception: false)
            respond(client) unless client == :wait_readable
          end
        end

        """

    @Test(.enabled(if: available, "needs ruby3.1, ab and curl (scripts/setup installs them)"))
    func rubyServerStallsAreNamedByTheirRubyMethod() throws {
        let dir = temporaryPath("rubyserver")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.server.write(toFile: dir + "/server.rb", atomically: true, encoding: .utf8)
        let port = 35_000 + Int(getpid() % 5000)
        let server = try FixtureProcess([dir + "/server.rb", "\(port)"], executable: URL(fileURLWithPath: RubyFrameTests.ruby))
        defer { server.stop() }
        let url = "http://127.0.0.1:\(port)/"
        let curl = URL(fileURLWithPath: "/usr/bin/curl")
        var up = false
        for _ in 0..<100 where !up {
            up = (try? runCommand(curl, ["-s", "--max-time", "2", url], timeout: 5))?.stdout == "ok"
            if !up { usleep(100_000) }
        }
        try #require(up, "the Ruby server did not answer: \(server.output)")

        let reports = dir + "/reports"
        let watch = try BackgroundAgent(
            ["--pid", "\(server.pid)", "--threshold", "1s", "--report-dir", reports], stderrPath: dir + "/agent.stderr")
        #expect(watch.waitFor("watching ruby"), "\(watch.stderr)")
        #expect(watch.waitUntilIdle(), "\(watch.stderr)")
        usleep(500_000)
        try watch.drillServer(url: url, slowPath: "slow", spinPath: "spin")
        let (exit, stderr, texts) = watch.finish(reports: reports)
        #expect(exit?.status == 0, "\(stderr)")
        #expect(stderr.contains("0xbaadca11 blocked") && stderr.contains(" in slow_handler"), "\(stderr)")
        #expect(stderr.contains("0x8badf00d hang") && stderr.contains(" in burn_cpu"), "\(stderr)")
        #expect(texts.count == 2, "\(texts)\n\(stderr)")
        let all = try texts.map { try String(contentsOfFile: reports + "/" + $0, encoding: .utf8) }
        #expect(all.contains { $0.contains("Stall Frame:         slow_handler (ruby) [server.rb:5]") }, "\(all)")
        #expect(all.contains { $0.contains("Stall Frame:         burn_cpu (ruby) [server.rb:12]") }, "\(all)")
        // Ruby's own backtrace says the same line for the sleep.
        #expect(server.output.contains("/server.rb:5:in `slow_handler'"), "\(server.output)")
        // The healthy load and the two stalls were sampled without stopping the server.
        #expect(stderr.contains(" 0 with a ptrace stop") || stderr.contains(" 1 with a ptrace stop"), "\(stderr)")
    }
}
