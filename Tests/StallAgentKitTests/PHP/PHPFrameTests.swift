import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// PHP calls named from outside (issue 26): Debian's PHP 8.2, read as phpspy does, compared
/// with what PHP says itself (`debug_backtrace()` printed by the script). `scripts/setup`
/// installs php8.2-cli and php8.2-fpm; without them these tests are skipped.
@Suite(.serialized) struct PHPFrameTests {
    static let php = "/usr/bin/php8.2"
    static var available: Bool { FileManager.default.isExecutableFile(atPath: php) }

    static let script = """
        <?php
        class Cart {
            public function total() {
                return checkout_wait();
            }
        }
        function checkout_wait() {
            $trace = array_map(fn($f) => ($f['class'] ?? '') . ($f['type'] ?? '') . $f['function'] . ':' . ($f['line'] ?? 0), debug_backtrace());
            echo "ready " . implode(',', $trace) . "\\n";
            sleep(60);
        }
        function outer() {
            $cart = new Cart();
            return $cart->total();
        }
        outer();

        """

    /// `dump` of a php CLI process asleep three calls deep: every PHP call, innermost first,
    /// with its class, script and the line executing, as PHP's own backtrace gives them.
    @Test(.enabled(if: available, "php8.2 is not installed (scripts/setup installs php8.2-cli)"))
    func dumpNamesEveryPHPCallAsPHPDoes() throws {
        let directory = URL(fileURLWithPath: temporaryPath("php"))
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("cart.php")
        try Self.script.write(to: path, atomically: true, encoding: .utf8)
        let target = try FixtureProcess([path.path], executable: URL(fileURLWithPath: Self.php))
        defer { target.stop() }
        usleep(200_000)
        let result = try runCommand(FixtureProcess.stallagentURL, ["dump", "--pid", "\(target.pid)"], timeout: 60)
        #expect(result.status == 0, "\(result.stderr)")
        let php = result.stdout.split(separator: "\n").filter { $0.contains(" [php] ") }.map(String.init)
        // PHP's own backtrace gives each call with the line it was made from: checkout_wait
        // from line 4 (in Cart::total), Cart::total from 14 (in outer), outer from 16.
        #expect(target.output.contains("ready checkout_wait:4,Cart->total:14,outer:16"), "\(target.output)")
        let expected = ["sleep", "checkout_wait (cart.php:10)", "Cart::total (cart.php:4)", "outer (cart.php:14)", "{main} (cart.php:16)"]
        var rest = php[...]
        for frame in expected {
            guard let found = rest.firstIndex(where: { $0.hasSuffix(" " + frame) || $0.contains(" \(frame) ") }) else {
                Issue.record("\(frame) missing, or out of order, in:\n\(result.stdout)")
                break
            }
            rest = rest[(found + 1)...]
        }
        // The machine frames stay: the VM, and the sleep's system call.
        #expect(result.stdout.contains("execute_ex"), "\(result.stdout)")
        #expect(result.stdout.contains("nanosleep"), "\(result.stdout)")
    }
}
