import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Ruby calls named from outside (issue 26): Debian's Ruby 3.1, read as rbspy does, compared
/// with what Ruby says itself (`caller(0)` printed by the script). `scripts/setup` installs
/// ruby3.1; without it these tests are skipped.
@Suite(.serialized) struct RubyFrameTests {
    static let ruby = "/usr/bin/ruby3.1"
    static var available: Bool { FileManager.default.isExecutableFile(atPath: ruby) }

    /// Methods, a class, a block run by a C method (`each`, a second VM activation), and a
    /// method long enough that its line is past the line table's first 54 instructions. The
    /// backtrace is printed on the line of the sleep, so every line in it is the one executing.
    static let script = """
        class Cart
          def total
            [1].each { |x| checkout_wait }
          end
        end
        def checkout_wait
          puts "ready " + caller(0).join("|"); STDOUT.flush; sleep 60
        end
        def outer
          a = 0
        \(String(repeating: "  a += 1; a *= 2; a -= 1\n", count: 30))  Cart.new.total
        end
        outer

        """

    /// `dump` of a ruby process asleep four calls deep: every Ruby call, innermost first, with
    /// its label, script and line as Ruby's own backtrace gives them, and the C methods
    /// between them by name.
    @Test(.enabled(if: available, "ruby3.1 is not installed (scripts/setup installs it)"))
    func dumpNamesEveryRubyCallAsRubyDoes() throws {
        let directory = URL(fileURLWithPath: temporaryPath("ruby"))
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("cart.rb")
        try Self.script.write(to: path, atomically: true, encoding: .utf8)
        let target = try FixtureProcess([path.path], executable: URL(fileURLWithPath: Self.ruby))
        defer { target.stop() }
        var ready: Substring?
        for _ in 0..<100 where ready == nil {
            ready = target.output.split(separator: "\n").first { $0.hasPrefix("ready ") }
            if ready == nil { usleep(50_000) }
        }
        let backtrace = try #require(ready, "the script did not start: \(target.output)").dropFirst("ready ".count)
        usleep(100_000)
        let result = try runCommand(FixtureProcess.stallagentURL, ["dump", "--pid", "\(target.pid)"], timeout: 60)
        #expect(result.status == 0, "\(result.stderr)")
        // "/tmp/…/cart.rb:7:in `checkout_wait'" → "checkout_wait (cart.rb:7)".
        var expected = backtrace.split(separator: "|").map { entry -> String in
            let parts = entry.split(separator: ":", maxSplits: 2)
            let label = parts.count == 3 ? parts[2].dropFirst("in `".count).dropLast() : ""
            // A C method: Ruby's backtrace gives it its caller's line, our frame only its name.
            if label == "each" { return "each" }
            return "\(label) (cart.rb:\(parts.count > 1 ? parts[1] : ""))"
        }
        #expect(expected.first == "checkout_wait (cart.rb:7)", "\(backtrace)")
        #expect(expected.contains("outer (cart.rb:41)"), "\(backtrace)")
        #expect(expected.contains("block in total (cart.rb:3)") && expected.contains("each"), "\(backtrace)")
        // The C method the backtrace was printed before.
        expected.insert("sleep", at: 0)
        let ruby = result.stdout.split(separator: "\n").filter { $0.contains(" [ruby] ") }.map(String.init)
        var rest = ruby[...]
        for frame in expected {
            guard let found = rest.firstIndex(where: { $0.hasSuffix(" " + frame) }) else {
                Issue.record("\(frame) missing, or out of order, in:\n\(result.stdout)")
                break
            }
            rest = rest[(found + 1)...]
        }
        // The machine frames stay: both VM activations (the block runs in one of its own).
        #expect(result.stdout.components(separatedBy: "rb_vm_exec").count - 1 == 2, "\(result.stdout)")
        #expect(result.stdout.contains("ppoll"), "\(result.stdout)")
    }
}
