import Testing

@testable import StallMonitoring
import StallDetection

/// Time per state, turn lengths and loop health lines, from observations the test makes up.
@Suite struct LoopHealthRecorderTests {
    /// Each stretch between observations counts as what the thread was at its start; an
    /// observation out of order counts nothing.
    @Test func timeCountsAsTheStateItWasSeenIn() {
        var recorder = LoopHealthRecorder()
        recorder.observe(at: 10, .idle)
        recorder.observe(at: 12, .running)
        recorder.observe(at: 12.5, .blockedCall)
        recorder.observe(at: 13, .idle)
        recorder.observe(at: 12.9, .running)  // earlier than the last: nothing counted
        #expect(recorder.stateSeconds[.idle] == 2)
        #expect(recorder.stateSeconds[.running] == 0.5)
        #expect(recorder.stateSeconds[.blockedCall] == 0.5)
        #expect(recorder.busySeconds == 1)
        #expect(recorder.lastObservation?.time == 12.9)
        #expect(recorder.lastObservation?.activity == .running)
    }

    /// A thread asleep in its wait is idle up to now without a probe; a busy one is not
    /// counted until it is seen again.
    @Test func idleTimeIsAccountedWithoutAProbe() {
        var recorder = LoopHealthRecorder()
        recorder.accountIdleTime(until: 5)
        #expect(recorder.stateSeconds.isEmpty)
        recorder.observe(at: 10, .idle)
        recorder.accountIdleTime(until: 14)
        #expect(recorder.stateSeconds[.idle] == 4)
        #expect(recorder.lastObservation?.time == 14)
        recorder.accountIdleTime(until: 13)
        #expect(recorder.stateSeconds[.idle] == 4)
        recorder.observe(at: 15, .running)
        recorder.accountIdleTime(until: 20)
        #expect(recorder.stateSeconds[.idle] == 5)
        #expect(recorder.stateSeconds[.running] == nil)
    }

    /// Turn lengths go to the histogram and, until the metrics take them, to the pending list.
    @Test func turnsAreKeptForTheMetricsUntilDrained() {
        var recorder = LoopHealthRecorder()
        recorder.noteTurn(0.2)
        recorder.noteTurn(0.7)
        #expect(recorder.drainTurnLengths() == [0.2, 0.7])
        #expect(recorder.drainTurnLengths().isEmpty)
        #expect(recorder.turnLengths.longest == 0.7)
    }

    /// The first point only starts the count; then each line gives the turns, busy seconds
    /// and longest turn since the one before. A process with no loop gets no line, but its
    /// stretch still ends.
    @Test func aLineSaysWhatHappenedSinceTheLastOne() {
        var recorder = LoopHealthRecorder()
        #expect(recorder.isDue(at: 0))
        recorder.observe(at: 0, .idle)
        #expect(recorder.close(at: 0, turns: 3, isLoop: { true }) == nil)
        #expect(!recorder.isDue(at: LoopHealthRecorder.interval - 0.1))
        #expect(recorder.isDue(at: LoopHealthRecorder.interval))
        recorder.observe(at: 1, .running)
        recorder.observe(at: 2.5, .idle)
        recorder.noteTurn(1.5)
        recorder.noteTurn(0.1)
        let line = recorder.close(at: 5, turns: 503, isLoop: { true })
        #expect(line == .init(seconds: 5, turns: 500, busySeconds: 1.5, longestTurnSeconds: 1.5))
        #expect(recorder.lastLineTime == 5)

        // Not a loop: no line, and the longest turn starts again.
        recorder.noteTurn(0.9)
        #expect(recorder.close(at: 10, turns: 600, isLoop: { false }) == nil)
        #expect(recorder.lastLineTime == 10)
        let next = recorder.close(at: 15, turns: 700, isLoop: { true })
        #expect(next == .init(seconds: 5, turns: 100, busySeconds: 0, longestTurnSeconds: 0))
        // Asked twice at the same time: nothing to say, and whether it is a loop is not asked.
        var asked = false
        let again = recorder.close(
            at: 15, turns: 700,
            isLoop: {
                asked = true
                return true
            })
        #expect(again == nil)
        #expect(!asked)
    }
}
