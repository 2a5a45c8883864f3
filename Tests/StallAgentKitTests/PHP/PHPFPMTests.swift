import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The issue's php-fpm case (issue 26): Debian's php-fpm 8.2 behind nginx, watched as a family
/// from its master, under `ab -c 20`: no report while healthy; a handler calling `sleep(2)` is
/// one `blocked` report and a 2 s CPU loop one `hang`, each named by its PHP function with
/// its script and line — the function and line php-fpm's own slowlog gives.
@Suite(.serialized) struct PHPFPMTests {
    static let fpm = "/usr/sbin/php-fpm8.2"
    static let nginx = "/usr/sbin/nginx"
    static var available: Bool {
        [fpm, nginx, "/usr/bin/ab", "/usr/bin/curl"].allSatisfy { FileManager.default.isExecutableFile(atPath: $0) } && geteuid() == 0
    }

    static let slow = """
        <?php
        function slow_handler() {
            sleep(2);
            return "slept";
        }
        echo slow_handler();

        """

    static let spin = """
        <?php
        function burn_cpu($seconds) {
            $end = microtime(true) + $seconds;
            $n = 0;
            while (microtime(true) < $end) {
                $n++;
            }
            return $n;
        }
        echo burn_cpu(2);

        """

    static let index = """
        <?php
        function render_home() {
            return "hello " . array_sum(range(1, 200));
        }
        echo render_home();

        """

    func start(_ executable: String, _ arguments: [String], log: String) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        process.standardError = process.standardOutput
        try process.run()
        return process
    }

    @Test(.enabled(if: available, "needs root, php8.2-fpm, nginx, ab and curl (scripts/setup installs them)"))
    func phpFPMWorkersAreNamedByTheirPHPFunction() throws {
        let dir = temporaryPath("phpfpm")
        let www = dir + "/www"
        try FileManager.default.createDirectory(atPath: www, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for (name, text) in ["slow.php": Self.slow, "spin.php": Self.spin, "index.php": Self.index] {
            try text.write(toFile: www + "/" + name, atomically: true, encoding: .utf8)
        }
        let port = 30_000 + Int(getpid() % 5000)
        try """
        [global]
        pid = \(dir)/fpm.pid
        error_log = \(dir)/fpm.log
        daemonize = no
        [www]
        listen = \(dir)/fpm.sock
        listen.mode = 0666
        pm = static
        pm.max_children = 2
        user = root
        group = root
        request_slowlog_timeout = 1s
        slowlog = \(dir)/slow.log
        """.write(toFile: dir + "/fpm.conf", atomically: true, encoding: .utf8)
        try """
        worker_processes 1;
        pid \(dir)/nginx.pid;
        error_log \(dir)/nginx.err;
        daemon off;
        events { worker_connections 256; }
        http {
          access_log off;
          client_body_temp_path \(dir)/nb; proxy_temp_path \(dir)/np; fastcgi_temp_path \(dir)/nf;
          uwsgi_temp_path \(dir)/nu; scgi_temp_path \(dir)/ns;
          server {
            listen 127.0.0.1:\(port);
            root \(www);
            location ~ \\.php$ {
              include /etc/nginx/fastcgi_params;
              fastcgi_param SCRIPT_FILENAME $document_root$fastcgi_script_name;
              fastcgi_pass unix:\(dir)/fpm.sock;
            }
          }
        }
        """.write(toFile: dir + "/nginx.conf", atomically: true, encoding: .utf8)
        let fpm = try start(Self.fpm, ["-R", "-F", "-y", dir + "/fpm.conf"], log: dir + "/fpm.out")
        defer {
            fpm.terminate()
            fpm.waitUntilExit()
        }
        let nginx = try start(Self.nginx, ["-c", dir + "/nginx.conf"], log: dir + "/nginx.out")
        defer {
            nginx.terminate()
            nginx.waitUntilExit()
        }
        let url = "http://127.0.0.1:\(port)/"
        let curl = URL(fileURLWithPath: "/usr/bin/curl")
        var up = false
        for _ in 0..<100 where !up {
            up = (try? runCommand(curl, ["-s", "--max-time", "2", url + "index.php"], timeout: 5))?.stdout == "hello 20100"
            if !up { usleep(100_000) }
        }
        try #require(up, "php-fpm behind nginx did not answer")

        let reports = dir + "/reports"
        let watch = try BackgroundAgent(
            ["--pid", "\(fpm.processIdentifier)", "--follow-children", "--threshold", "1s", "--report-dir", reports],
            stderrPath: dir + "/agent.stderr")
        // The master and its two workers.
        #expect(watch.waitFor("watching php-fpm8.2"), "\(watch.stderr)")
        #expect(watch.waitUntilIdle(), "\(watch.stderr)")
        usleep(1_000_000)
        try watch.drillServer(url: url, loadPath: "index.php", slowPath: "slow.php", spinPath: "spin.php")
        let (exit, stderr, texts) = watch.finish(reports: reports)
        #expect(exit?.status == 0, "\(stderr)")
        #expect(stderr.contains("0xbaadca11 blocked") && stderr.contains(" in slow_handler"), "\(stderr)")
        #expect(stderr.contains(" in burn_cpu"), "\(stderr)")
        #expect(texts.count == 2, "\(texts)\n\(stderr)")
        let all = try texts.map { try String(contentsOfFile: reports + "/" + $0, encoding: .utf8) }
        #expect(all.contains { $0.contains("Stall Frame:         slow_handler (php) [slow.php:3]") }, "\(all)")
        #expect(all.contains { $0.contains("Stall Frame:         burn_cpu (php) [spin.php:5]") }, "\(all)")
        // php-fpm's own slowlog, written from its own ptrace of the worker, says the same: the
        // sleep called from slow.php's line 3.
        let slowlog = (try? String(contentsOfFile: dir + "/slow.log", encoding: .utf8)) ?? ""
        #expect(slowlog.contains("sleep() \(www)/slow.php:3"), "\(slowlog)")
        // The healthy load and the two stalls were sampled without stopping the workers.
        #expect(stderr.contains(" 0 with a ptrace stop") || stderr.contains(" 1 with a ptrace stop"), "\(stderr)")
    }
}
