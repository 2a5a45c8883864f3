import Foundation
import Testing

extension BatchStallTests {
    static let parametrizedSuite = """
        import time, pytest

        @pytest.mark.parametrize("n", [1, 2])
        def test_slow(n):
            time.sleep(2.0)

        def spin(n):
            end = time.monotonic() + 2.5
            while n and time.monotonic() < end:
                n -= 1

        def test_spin():
            spin(10**12)

        def test_fast(): pass
        """

    /// pytest calls a parametrized test once per parameter set from the same place, and CPython
    /// puts both calls' frames at the same address: without the caller's slot in the frame's
    /// identity the two calls were one 4 s stall. A function that rebinds its own argument
    /// (`spin`) must keep its identity while it runs: it is one report, not none.
    @Test(.tags(.timed)) func eachParametrizedCallIsItsOwnStall() throws {
        let probe = try runCommand(
            URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", "import pytest, sys; assert (3, 11) <= sys.version_info[:2] <= (3, 13)"], timeout: 60)
        guard probe.status == 0 else {
            try Test.cancel("python3 is not CPython 3.11–3.13 with pytest (scripts/setup installs it)")
        }
        let (result, written) = try wrappedPytest(Self.parametrizedSuite, file: "test_param.py")
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        let all = "\(written.map { ($0.reason, $0.duration, $0.functions.prefix(3)) })"
        let slow = written.filter { $0.functions.contains("test_slow") && !$0.functions.contains("spin") }
        #expect(slow.count == 2, "one report per parametrized call: \(all)")
        #expect(slow.allSatisfy { $0.reason == "blocked" && $0.duration >= 1.0 && $0.duration < 3.5 }, "\(all)")
        let spins = written.filter { $0.functions.contains("spin") }
        #expect(spins.count == 1, "\(all)")
        #expect(spins.allSatisfy { ["hang", "starved"].contains($0.reason) }, "\(all)")
        #expect(written.count == 3, "\(all)")
    }
}
