/// The episode state machine of docs/architecture.md, "Detection model": turns a stream of probes of the main thread into
/// busy episodes, stalls, and snapshots of them. Pure: it reads no clock, file or process; every
/// call carries its time (monotonic seconds), so tests drive it with made-up streams.
///
/// How the agent drives it, every probe:
/// ```
/// events += detector.observe(observation)
/// if detector.wantsSample(at: now) { events += detector.record(captureStack()) }
/// ```
/// and `finish(at:targetGone:)` when it stops watching or the target exits.
///
/// Episode boundaries and time accounting:
/// - A busy episode starts at the first busy probe (running, lockWait, ioWait, blockedCall)
///   after idle, and ends at the first idle probe; those probes' times are its start and end.
///   The real transitions happened somewhere in the probe interval before each of those probes.
///   Both edges lag by the same distribution, so the measured duration is unbiased and within
///   one probe interval of the truth (a midpoint estimate would narrow the error only for the
///   edges, at the cost of dating the report before anything was observed).
/// - Each interval between probes counts as the activity seen at its start (sample-and-hold).
/// - `stopped` neither starts an episode nor ages one: time held in `stopped` is excluded from
///   the stall age, so SIGSTOP / a debugger stop alone never produces a stall, and a stop in the
///   middle of a busy episode pauses its clock instead of resetting it.
/// - Phase: `launch` until the process is first seen idle (`launchThreshold`), `loop` after
///   (`threshold`). An episode keeps the phase it started in.
/// - `gone` ends everything like `finish(at:targetGone: true)`.
/// - Loop turns: a saturated loop is never caught asleep, so the agent also passes
///   `loopTurned` (kernel counter or loop probe): the open episode ends at that probe and, if
///   the thread is busy, a new one starts there. Without such evidence (`usesStackRule`) the
///   samples decide: the loop turned when no frame outside the loop's own frames (see
///   `setLoopFrames`) has been in every sample since the episode began, and a stall needs
///   such a held frame.
/// - Batch processes (`batchThreshold` set; phase `batch` until the process is first seen idle):
///   a test runner never waits in an event loop, so the design card's rule applies directly —
///   a frame held in every sample past the threshold is a stall — with the runner's own frames
///   excluded: those of the first sample (taken at once after start or exec, when the stack
///   holds only start-up frames), frames that outlived a held piece of work beneath them
///   (the caller of a slow test that just ended), and frames under which many different frames
///   ran in one episode (a dispatcher calling test after test). An episode ends, and the next
///   begins, at the sample where none of its held frames is left. Frame-generic: interpreter
///   frames spliced into the stack count like any other.
public struct StallDetector: Sendable {
    public private(set) var configuration: DetectorConfiguration
    /// False while the process has not yet been seen idle (start-up).
    public private(set) var hasSeenIdle: Bool
    /// The current episode's retained samples (cleared when the next episode starts).
    public private(set) var ring: SampleRing

    private var lastObservation: ThreadObservation?
    private var episode: Episode?
    private var nextStallID = 1
    /// The event loop's own activations (function + CFA), from its home wait's stack.
    private var loopFrames: Set<StallFrameTracker.Key> = []
    /// Loop turns counted by the stack rule (episodes it ended).
    public private(set) var stackRuleTurns = 0
    /// The latest `record` call of any episode, for the sample cadence across loop turns.
    private var lastSampleAttemptAnyEpisode: Double?
    /// Batch rule: the runner's own frames (nil until the first batch sample since start/exec).
    private var outerFrames: Set<StallFrameTracker.Key>?
    /// Batch rule: the runner's own frames are known (or, joined after start, not needed):
    /// samples of a thread other than the one the runner started on can be taken now.
    public var knowsRunnerFrames: Bool { outerFrames != nil || joinedAfterStart }
    /// Batch rule: the first sample since the watch began is not start-up (see
    /// `DetectorConfiguration.batchJoinedAfterStart`); false after an exec.
    private var joinedAfterStart: Bool
    /// When the watched program started (its process's birth, or the exec that began it), on
    /// the observations' clock; nil when not told (see `noteProgramStart`).
    private var programStart: Double?
    /// Batch rule: frames promoted to the runner's since start (for tests and reports).
    public private(set) var runnerFramesLearned = 0
    /// The process is known to have ended by its own exit (see `noteExit`).
    private var exitedNormally = false
    /// The process is known to have been killed by a signal (see `noteKilled`).
    private var killed = false
    /// When the probes last saw the activity change (running to blocked, say): where new work
    /// found by a batch sample most likely began.
    private var lastActivityChange: Double?
    /// Changes of activity since the last batch sample (see `boundary`).
    private var activityChangesSinceSample = 0
    /// The probe the latest batch sample followed: its schedstat counters bound when a wait
    /// seen by the next sample began (`waitBegan`).
    private var observationAtBatchSample: ThreadObservation?

    /// Tolerance for comparing ages and times built by summing intervals.
    private static let epsilon = 1e-9

    private struct OpenStall: Sendable {
        var id: Int
        var revision = 0
        var schedule: StallAnnealingSchedule
        /// The heaviest group the last emitted snapshot showed; a different leader that
        /// outnumbers it triggers a `stackChanged` update.
        var reportedLeader: HeaviestStackTracker.GroupKey?
        /// Time of the last emitted snapshot, for `minimumUpdateSpacing`.
        var lastEmitTime: Double
    }

    private struct Episode: Sendable {
        var phase: StallPhase
        var startTime: Double
        /// Time of the latest probe accounted.
        var lastTime: Double
        var stoppedSeconds: Double = 0
        var states = StallStateAccumulator()
        var heaviest = HeaviestStackTracker()
        var stallFrame = StallFrameTracker()
        /// Samples stored during the episode (the ring may hold fewer).
        var sampleCount = 0
        var firstSampleTime: Double?
        var lastSampleTime: Double?
        /// Time of the last `record` call, stored or not, for the sample interval.
        var lastSampleAttempt: Double?
        var deadlock = false
        var stall: OpenStall?
        /// Stack rule: the non-loop frames present in every sample since the episode began
        /// (nil before its first sample).
        var anchors: Set<StallFrameTracker.Key>?
        /// Stack rule: stored samples since the anchors were set.
        var anchoredSamples = 0
        /// Batch rule: the time of the last sample that showed the work held.
        var heldUntil: Double?
        /// Batch rule: frames seen beneath the held ones during the episode.
        var beneath: Set<StallFrameTracker.Key> = []
        /// Batch rule: the sample from which a held test was first missing (set aside).
        var testMissed: MissedTest?
        /// The sample being recorded is not to be stored (see `testMissed`).
        var setAside = false
        /// Batch rule: torn samples were set aside since the last whole one, taken after
        /// `attemptBeforeTorn`: a boundary found next lies between whole samples.
        var tornPending = false
        var attemptBeforeTorn: Double?
        /// Batch rule: the innermost held frame and the different frames it called directly.
        var innermostHeld: StallFrameTracker.Key?
        var children: Set<StallFrameTracker.Key> = []

        init(phase: StallPhase, startTime: Double) {
            self.phase = phase
            self.startTime = startTime
            self.lastTime = startTime
        }

        /// Stall age: time since the start less the time spent stopped.
        var age: Double { max(0, lastTime - startTime - stoppedSeconds) }
    }

    public init(configuration: DetectorConfiguration = DetectorConfiguration()) {
        self.configuration = configuration
        self.hasSeenIdle = !configuration.startsInLaunchPhase
        self.joinedAfterStart = configuration.batchJoinedAfterStart
        self.ring = SampleRing(capacity: configuration.ringCapacity)
    }

    // MARK: - State the agent may read

    /// The phase a busy episode starting now would have.
    public var phase: StallPhase {
        hasSeenIdle ? .loop : configuration.batchThreshold == nil ? .launch : .batch
    }
    /// True while a busy episode is open (including while it is stopped).
    public var isInEpisode: Bool { episode != nil }
    /// True while the open episode has become a stall.
    public var isStalled: Bool { episode?.stall != nil }
    /// The open stall's id.
    public var currentStallID: Int? { episode?.stall?.id }
    public var episodeStartTime: Double? { episode?.startTime }
    /// The open episode's age (stopped time excluded) as of the latest probe.
    public var episodeAge: Double? { episode?.age }
    /// The open episode's phase.
    public var episodePhase: StallPhase? { episode?.phase }
    /// The activity of the latest probe.
    public var lastActivity: ThreadActivity? { lastObservation?.activity }

    /// When the next sample is due while the thread is busy (nil when it should not be sampled),
    /// so the agent can plan its capture rather than ask every probe.
    public var nextSampleTime: Double? {
        guard let episode, let last = lastObservation, last.activity.isBusy else { return nil }
        if episode.phase == .batch {
            let slow = configuration.batchSlowSampleInterval
            // The first sample of a process (or of a new program after exec) is taken at once:
            // it defines the runner's own frames, and at start-up the stack holds nothing else
            // (the loader, main, the interpreter's start-up), never a test yet.
            guard let previous = episode.lastSampleAttempt ?? lastSampleAttemptAnyEpisode else { return last.time }
            let candidate =
                episode.anchors?.isEmpty == false
                && episode.age * 2 >= configuration.threshold(for: .batch)
            return max(last.time, previous + (candidate ? configuration.sampleInterval : slow))
        }
        guard let previous = episode.lastSampleAttempt else {
            // A new episode after a loop turn samples on the same cadence as the last one: with
            // turn evidence a saturated loop starts an episode at every probe, and sampling each
            // at once would stop the thread at the probe rate instead of the sample rate.
            guard let any = lastSampleAttemptAnyEpisode else { return last.time }
            return max(last.time, any + configuration.sampleInterval)
        }
        // Stack rule: a frame held for half the threshold is a candidate; sample it twice as
        // often to confirm it (or see the loop turn) with more samples.
        if configuration.usesStackRule, episode.anchors?.isEmpty == false,
            episode.age * 2 >= configuration.threshold(for: episode.phase)
        {
            return previous + configuration.sampleInterval / 2
        }
        return previous + configuration.sampleInterval
    }

    // MARK: - Driving

    /// Feeds one probe. Observations older than the previous one are ignored (a clock that went
    /// backwards would otherwise produce negative intervals).
    /// `loopTurned`: the loop entered its wait at least once since the previous probe.
    public mutating func observe(_ observation: ThreadObservation, loopTurned: Bool = false) -> [DetectorEvent] {
        var events: [DetectorEvent] = []
        let previousTime = lastObservation?.time
        if let previous = lastObservation {
            guard observation.time >= previous.time else { return [] }
            let ends = loopTurned || observation.activity == .idle || observation.activity == .gone
            if ends, observation.time - previous.time > configuration.maximumProbeGap {
                events += endEpisode(at: previous.time, ending: observation.activity == .gone ? goneEnding : .returnedToIdle)
            }
            if episode != nil { account(from: previous, to: observation) }
        }
        if observation.activity != lastObservation?.activity {
            lastActivityChange = observation.time
            activityChangesSinceSample += 1
        }
        lastObservation = observation
        if loopTurned, observation.activity.isBusy || observation.activity == .stopped {
            events += endEpisode(at: observation.time, ending: .returnedToIdle)
            // A loop that turns has finished starting up, asleep or not.
            events += reachLoop(at: observation.time)
        }
        switch observation.activity {
        case .gone:
            // It ended between the last probe that saw it and this one: on a loaded host the
            // two can be a good part of a second apart, all of which was counted to the stall
            // (a script's 1.6 s sleep before its exit measured 1.84 s and more).
            if let seen = previousTime, let open = episode, exitedNormally || configuration.batchThreshold != nil {
                episode?.lastTime = max(open.startTime, min(open.lastTime, (seen + observation.time) / 2))
            }
            events += endEpisode(at: observation.time, ending: goneEnding)
            forgetTarget()
        case .idle:
            // The interval just accounted may itself cross the threshold: such an episode is a
            // stall, reported and finalised at once.
            events += endEpisode(at: observation.time, ending: .returnedToIdle)
            events += reachLoop(at: observation.time)
        case .stopped:
            events += checkAge(at: observation.time)
        case .running, .lockWait, .ioWait, .blockedCall:
            if episode == nil {
                startEpisode(at: observation.time)
            }
            events += checkAge(at: observation.time)
        }
        return events
    }

    /// True when the agent should capture a stack now: only while an episode is open and the
    /// latest probe saw the thread busy (never idle: a ptrace stop makes epoll_wait return
    /// EINTR; never stopped: nothing moves), and at least `sampleInterval` after the previous
    /// `record` call of this episode.
    public func wantsSample(at time: Double) -> Bool {
        guard let due = nextSampleTime else { return false }
        return time + Self.epsilon >= due
    }

    /// Stores a sample of the current episode. Call it also when a capture failed, with empty
    /// `frames`: that restarts the sample interval without storing anything. Samples taken
    /// outside an episode, or that found the thread idle or gone, are not stored.
    /// May return a `stackChanged` update when the stall's heaviest stack changed.
    public mutating func record(_ sample: StackSample) -> [DetectorEvent] {
        guard var current = episode, sample.time + Self.epsilon >= current.startTime else { return [] }
        episode = nil  // hold the only reference, so the mutations below do not copy its tables
        let previousAttempt = current.tornPending ? current.attemptBeforeTorn : current.lastSampleAttempt
        current.lastSampleAttempt = max(current.lastSampleAttempt ?? sample.time, sample.time)
        lastSampleAttemptAnyEpisode = max(lastSampleAttemptAnyEpisode ?? sample.time, sample.time)
        var storable = !sample.frames.isEmpty && sample.activity != .idle && sample.activity != .gone
        var events: [DetectorEvent] = []
        if storable, current.phase == .batch {
            episode = current
            events += recordBatch(sample, previousAttempt: previousAttempt)
            current = episode!
            episode = nil
            // A sample the batch rule set aside (a test missing from it once) names nothing.
            if current.setAside {
                current.setAside = false
                storable = false
            }
        } else if storable, configuration.usesStackRule {
            let loop = loopFrames
            let outside = Set(sample.frames.map(StallFrameTracker.Key.init).filter { !loop.contains($0) })
            if let anchors = current.anchors {
                let held = anchors.intersection(outside)
                if held.isEmpty {
                    // Nothing of the work the episode began with is left: the loop turned
                    // between the previous sample and this one. Time the new work from here.
                    episode = current
                    events += endEpisode(at: sample.time, ending: .returnedToIdle)
                    stackRuleTurns += 1
                    startEpisode(at: sample.time)
                    current = episode!
                    episode = nil
                    current.lastSampleAttempt = sample.time
                    current.anchors = outside
                } else {
                    current.anchors = held
                }
            } else {
                current.anchors = outside
            }
            current.anchoredSamples += 1
        }
        if storable {
            current.sampleCount += 1
            current.firstSampleTime = current.firstSampleTime ?? sample.time
            current.lastSampleTime = sample.time
            current.heaviest.add(sample)
            current.stallFrame.add(sample.frames, at: sample.time)
            ring.append(sample)
        }
        episode = current
        return events + (storable ? checkStackChange(at: sample.time) : [])
    }

    /// The batch rule's part of `record` (see the type's comment): updates the held frames of
    /// the open episode and ends it where its work ended.
    private mutating func recordBatch(_ sample: StackSample, previousAttempt: Double?) -> [DetectorEvent] {
        // An interpreted frame (a Python test) is the unit of work: the machine frames above the
        // innermost one are the interpreter executing it (a dict lookup, time.monotonic, the
        // addition), different from sample to sample. Counted as frames of their own, a CPU
        // loop's helpers held for two samples restarted the episode mid-test (two reports for
        // one test), and six of them made the test a dispatcher, a runner frame, mid-stall.
        // JavaScript under V8 is the same: the runtime frames above its innermost function
        // (`Date.now` → `Runtime_DateCurrentTime` → `v8::base::Time::Now`) serve it.
        let firstInterpreted = sample.frames.firstIndex { $0.isInterpreted || Self.isUnnamedScriptCode($0) } ?? 0
        // A script's module body that calls a function is its harness, as `main` is a C
        // program's: held across a CPU warm-up and the sleep after it, it made the two one
        // stall (1.9 s for a 1.6 s sleep when no sample happened to fall in the warm-up
        // twice). Work at module level itself is still the module's.
        let positions = sample.frames.indices.filter { position in
            let frame = sample.frames[position]
            return position == firstInterpreted
                || (position > firstInterpreted && !(frame.isInterpreted && frame.function == "<module>"))
        }
        let keys = positions.map { Self.batchKey(sample.frames[$0]) }
        // A stack cut short that shares nothing with the held frames is torn, not the next
        // piece of work: every whole stack of the same thread shares at least its outermost
        // frames with the last. Set aside, as a test missing once is, and never the first
        // frames learnt. One such sample in about fifty (an unwind ending in V8's `Date.now()`
        // stub) cut a 12 s `node --test` test into four stalls, each torn sample ending one
        // episode and the whole one after it another. Nothing is learnt from it, not even
        // when it was taken: a boundary found later lies between whole samples.
        if !sample.isWhole, outerFrames == nil || episode?.anchors.map({ $0.isDisjoint(with: keys) }) ?? true {
            episode?.setAside = true
            episode?.tornPending = true
            episode?.attemptBeforeTorn = previousAttempt
            return []
        }
        episode?.tornPending = false
        let changes = activityChangesSinceSample
        activityChangesSinceSample = 0
        let observationBefore = observationAtBatchSample
        observationAtBatchSample = lastObservation
        if outerFrames == nil, joinedAfterStart || isPastStartUp(sample, keys: keys) { outerFrames = [] }
        guard var outer = outerFrames else {
            // A first sample already inside a test (the attach came late: a large
            // interpreter's symbols read on a loaded machine, while pytest collected in under
            // a second) holds the test's frames too. Taken all as the runner's, the test in
            // progress could never be held and went unreported: only the outermost test's
            // callers are the runner's, and the test is the work held from this sample.
            if let test = keys.lastIndex(where: { Self.isTestFunction($0.function) }) {
                outerFrames = Set(keys[(test + 1)...])
                episode?.anchors = Set(keys[...test])
                episode?.anchoredSamples = 1
                episode?.heldUntil = sample.time
                return []
            }
            outerFrames = Set(keys)
            episode?.anchors = []
            return []
        }
        let outside = Set(keys.filter { !outer.contains($0) })
        guard var current = episode else { return [] }
        guard let anchors = current.anchors else {
            episode?.anchors = outside
            episode?.anchoredSamples = 1
            episode?.heldUntil = sample.time
            return []
        }
        let held = anchors.intersection(outside)
        let testHeld = held.contains { Self.isTestFunction($0.function) }
        // Where a test held until now ended: a test may be missing from one sample (a torn
        // interpreter chain, read while the thread moved on, split more-itertools'
        // test_roundtrip in two); missing from two in a row, it ended where first missed.
        var testEnded: MissedTest?
        if !testHeld, anchors.contains(where: { Self.isTestFunction($0.function) }) {
            guard let missed = current.testMissed else {
                let inWait =
                    [.blockedCall, .lockWait, .ioWait].contains(sample.activity) && lastObservation?.activity == sample.activity
                episode?.testMissed = MissedTest(
                    at: sample.time, after: previousAttempt, changes: changes, lastChange: lastActivityChange,
                    tests: outside.filter { Self.isTestFunction($0.function) },
                    wait: inWait ? (observationBefore, lastObservation) : nil)
                episode?.setAside = true
                return []
            }
            testEnded = missed
        } else {
            current.testMissed = nil
        }
        var restart = held.isEmpty
        // A new interpreted call under a held machine frame: the interpreter was entered from
        // C for it (pytest calls each test through `_PyEval_Vector`), so it is a new call of
        // the runner's, not a helper the work in progress called (Python-to-Python calls have
        // no machine frame between them).
        var newInterpretedCall = false
        if !restart {
            current.beneath.formUnion(outside.subtracting(held))
            // Innermost first: the held frame nearest the top, and the frame just above it.
            if let index = keys.firstIndex(where: { held.contains($0) }) {
                if current.innermostHeld != keys[index] {
                    current.innermostHeld = keys[index]
                    current.children = []
                }
                if index > 0 {
                    current.children.insert(keys[index - 1])
                    let frames = sample.frames
                    newInterpretedCall =
                        frames[positions[index - 1]].isInterpreted
                        && !frames[positions[index]].isInterpreted
                }
            }
            let lost = held.count < anchors.count
            // A piece of work held for several samples ended under frames that stay: they are
            // the runner's. So are frames under which many different frames came and went,
            // unless a test function is among them: a test that calls helper after helper
            // (more-itertools' test_primes) is one slow test, not a runner (issue 25).
            // The same goes for work that ended under a test still held: that was one of the
            // test's helpers, and the test goes on.
            let dispatcher =
                current.beneath.count >= configuration.batchDispatcherFrames
                || current.children.count >= configuration.batchDispatcherChildren
            if testHeld {
                // Nothing to learn or restart.
            } else if lost && current.anchoredSamples >= configuration.batchMinimumHeldSamples || dispatcher {
                outer.formUnion(held)
                outerFrames = outer
                runnerFramesLearned += held.count
                restart = true
            } else if lost && (current.anchoredSamples >= 2 || newInterpretedCall) {
                // Work held for two samples ended: what runs now is new work (the next test),
                // timed and named from here, not from the frames it shares with the last one.
                // A leaf seen once (a CPU loop's callee) does not restart the episode; a test
                // seen once does (the episode began in a fast test: without the restart the
                // slow one after it never joins the held frames, and the runner's frame it
                // shares with every test is reported for as long as the run goes on).
                restart = true
            } else if !anchors.contains(where: { Self.isTestFunction($0.function) }),
                outside.contains(where: { Self.isTestFunction($0.function) })
            {
                // A test began under frames held since before it (unittest's `run` and
                // `_callTestMethod`, outside the runner frames first learnt): it is timed from
                // here, not from the fast tests of its class before it (a test_nth_prime
                // reported 0.3 s long).
                restart = true
            }
        }
        guard restart else {
            current.anchors = held
            current.anchoredSamples += 1
            current.heldUntil = sample.time
            episode = current
            return []
        }
        // One piece of work ended and the next began between two samples. Dated at the later
        // sample, both ends were late by up to a slow sample interval, and a test lost that
        // much at its start (a 3 s test was reported as 2.77 s, a 2.06 s one at --threshold 2s
        // not at all).
        let waiting =
            [.blockedCall, .lockWait, .ioWait].contains(sample.activity) && lastObservation?.activity == sample.activity
        let end: Double
        var start: Double
        if let testEnded {
            end = Self.boundary(
                after: testEnded.after, seenAt: testEnded.at, activityChange: testEnded.lastChange, changes: testEnded.changes)
            start = end
            // The sample set aside already showed the test seen now, in a wait: it began when the
            // thread entered that wait, which the counters bound better than the midpoint (a
            // unittest's subTests after a CPU-bound test were dated 0.27 s early beside two hogs).
            if let wait = testEnded.wait {
                start = Self.waitBegan(
                    estimate: end, since: wait.before, now: wait.at, seenAt: testEnded.at,
                    seenInWaitAt: Self.change(testEnded.lastChange, after: testEnded.after))
            }
            // The sample set aside showed another test: the test seen now began after it, not
            // where the held one ended (fast tests in between made a test 0.3 s long). Another
            // test is one of its functions gone by now, by name: a Hypothesis test calls the
            // user's function once per example, a new activation each time, and comparing
            // activations re-dated it from after the sample set aside (CI: 1.47 s for 1.65 s).
            let now = outside.filter { Self.isTestFunction($0.function) }
            let asideNames = Set(testEnded.tests.map(\.function))
            if !asideNames.isEmpty, !now.isEmpty, !asideNames.isSubset(of: Set(now.map(\.function))) {
                start = Self.boundary(
                    after: testEnded.at, seenAt: sample.time, activityChange: lastActivityChange, changes: changes, waiting: waiting)
                if waiting {
                    start = Self.waitBegan(
                        estimate: start, since: observationBefore, now: lastObservation, seenAt: sample.time,
                        seenInWaitAt: Self.change(lastActivityChange, after: testEnded.at))
                }
            }
        } else {
            end = Self.boundary(
                after: previousAttempt, seenAt: sample.time, activityChange: lastActivityChange, changes: changes, waiting: waiting)
            start =
                waiting
                ? Self.waitBegan(
                    estimate: end, since: observationBefore, now: lastObservation, seenAt: sample.time,
                    seenInWaitAt: Self.change(lastActivityChange, after: previousAttempt))
                : end
        }
        if let open = episode { episode?.lastTime = min(open.lastTime, max(end, open.startTime)) }
        let events = endEpisode(at: end, ending: .returnedToIdle)
        startEpisode(at: start)
        episode?.lastSampleAttempt = sample.time
        episode?.anchors = outside.subtracting(outer)
        episode?.anchoredSamples = 1
        episode?.heldUntil = sample.time
        return events
    }

    /// Batch rule: a sample from which a held test was missing, set aside until the next one
    /// says whether the test ended there or the interpreter's chain was read torn.
    struct MissedTest {
        var at: Double
        /// The sample attempt before it, when the test was still held.
        var after: Double?
        /// Activity changes the probes saw between the two, and the latest.
        var changes: Int
        var lastChange: Double?
        /// The test functions it showed instead.
        var tests: Set<StallFrameTracker.Key>
        /// When it found the thread in a wait: the probes at the sample before it and at it,
        /// whose schedstat counters bound when the wait began (`waitBegan`).
        var wait: (before: ThreadObservation?, at: ThreadObservation?)?
    }

    /// When work that changed between two samples changed: where the probes saw the thread's
    /// activity change once in between (a test that sleeps after one that ran), there; otherwise
    /// the midpoint, which halves the worst error and removes the bias of dating it at the later
    /// sample (the error of a length is then at most one sample interval, half at each end).
    /// With several changes the last is not the new work's start (a fast test that slept, then
    /// the slow one, dated a test 0.3 s early).
    /// `waiting`: the new work is seen in a wait the thread has been in since `activityChange`
    /// (its activity then and now is the same blocked, lock or I/O wait). It began no later
    /// than that change, however many came before it: a script's 1.6 s sleep after a CPU
    /// warm-up, with probes that saw the thread stopped by the samples in between, was dated
    /// from the midpoint of a long gap between samples on a loaded host (1.84 s).
    static func boundary(after: Double?, seenAt: Double, activityChange: Double?, changes: Int, waiting: Bool = false) -> Double {
        guard let after, after < seenAt else { return seenAt }
        if changes == 1 || waiting, let change = activityChange, change > after, change < seenAt { return change }
        return (after + seenAt) / 2
    }

    /// New work seen in a wait began no earlier than the time the thread spent running or
    /// waiting for a CPU since the probe before the previous sample (`since`): all of that
    /// came before the wait, and a sleeping thread's schedstat counters stand still. On a host
    /// so loaded that the agent's own probes are sparse, a midpoint between samples half a
    /// second apart dated a 1.6 s sleep after a 0.3 s CPU warm-up 0.25 s early; the counters
    /// date it to within a probe.
    /// An activity change the probes saw after `after` (the sample before): where the thread
    /// was first seen in the wait a new sample shows. nil when the change came before it.
    static func change(_ change: Double?, after: Double?) -> Double? {
        guard let change else { return nil }
        return after.map { change > $0 } ?? true ? change : nil
    }

    /// Never later than `seenInWaitAt`, the first probe that saw the thread in this wait: a
    /// ptrace stop for a sample wakes a sleeping thread, and the CPU and queue time it takes to
    /// go back to sleep would otherwise count as before the wait.
    static func waitBegan(
        estimate: Double, since before: ThreadObservation?, now: ThreadObservation?, seenAt: Double, seenInWaitAt: Double? = nil
    ) -> Double {
        guard let before, let now, now.time > before.time, now.activity != .running else { return estimate }
        let ranOrQueued = Double((now.cpuNanos &+ now.runQueueNanos) &- (before.cpuNanos &+ before.runQueueNanos)) / 1e9
        guard ranOrQueued >= 0, ranOrQueued < 1e6 else { return estimate }
        let latest = seenInWaitAt.map { max(estimate, min($0, seenAt)) } ?? seenAt
        return min(max(estimate, before.time + ranOrQueued), latest)
    }

    /// The process is known to have exited by itself (an exit status, not a signal): the next
    /// `gone` observation ends an open stall as `targetExited`, keeping its reason.
    public mutating func noteExit() {
        exitedNormally = true
    }

    /// The process is known to have been killed by a signal: the next `gone` observation ends an
    /// open stall as `targetDied`, whatever the phase.
    public mutating func noteKilled() {
        killed = true
    }

    /// A JavaScript function V8 runs with no perf map to name it: bytecode in the interpreter
    /// (`Builtins_InterpreterEntryTrampoline`, one frame per function) or code it compiled
    /// (anonymous memory, named by its address).
    static func isUnnamedScriptCode(_ frame: SampledFrame) -> Bool {
        (frame.module == "?" && frame.function.hasPrefix("?+0x")) || frame.function == "Builtins_InterpreterEntryTrampoline"
    }

    /// A frame's identity for the batch rule. An unnamed script function is known by its stack
    /// slot alone: V8 replaces a hot function's interpreter frame by compiled code at the same
    /// slot (on-stack replacement), and its address again when it re-compiles it; by name and
    /// address, a 4 s busy loop in `node` was cut in two where that happened.
    static func batchKey(_ frame: SampledFrame) -> StallFrameTracker.Key {
        isUnnamedScriptCode(frame) ? StallFrameTracker.Key(function: "[script]", cfa: frame.cfa) : StallFrameTracker.Key(frame)
    }

    /// pytest's, unittest's and most C harnesses' naming of a test: `test_x`, `Case.test_x`.
    public static func isTestFunction(_ name: String) -> Bool {
        // Python's `Class.test_x`, Rust's `crate::tests::test_x`, Go's `pkg.TestX`.
        let last = name.split(separator: ".").last.flatMap { $0.split(separator: ":").last } ?? Substring(name)
        return last.hasPrefix("test") || last.hasPrefix("Test")
    }

    /// The process replaced its program (exec): the new one starts up afresh, with runner frames
    /// of its own. The open episode ends here.
    public mutating func noteExec(at time: Double) -> [DetectorEvent] {
        let events = endEpisode(at: time, ending: .returnedToIdle)
        outerFrames = nil
        joinedAfterStart = false
        programStart = time
        lastSampleAttemptAnyEpisode = nil
        hasSeenIdle = !configuration.startsInLaunchPhase
        return events
    }

    /// Whether a first batch sample is past the program's start-up, and so teaches no runner
    /// frames (it is read as a late-found process's): it came late, or it finds a script's own
    /// code asleep in a call or on a lock, where an interpreter's start-up (its imports, a
    /// runner's collection) runs. A script already in its slow call (`flush_cache` →
    /// `time.sleep`, entered 20 ms after its start, before the agent's first sample in 2 runs of
    /// 3 beside two CPU hogs) had that call taken for the runner's and never reported. Not a
    /// compiled program's asleep: a C runner's first fast tests sleep too, and its first sample
    /// is what teaches its runner frames. One inside a test is read by the test instead.
    private func isPastStartUp(_ sample: StackSample, keys: [StallFrameTracker.Key]) -> Bool {
        guard !keys.contains(where: { Self.isTestFunction($0.function) }) else { return false }
        if let start = programStart, sample.time - start > configuration.batchLateFirstSample { return true }
        return [.blockedCall, .lockWait].contains(sample.activity) && sample.frames.contains { $0.isInterpreted }
    }

    /// The watched program started at `time` (its process's birth, known from /proc when the
    /// watch began): a first batch sample much later than that came late
    /// (`DetectorConfiguration.batchLateFirstSample`). An exec restarts the clock.
    public mutating func noteProgramStart(at time: Double) {
        programStart = time
    }

    /// A capture found the thread back in its loop's own wait, between two probes: the loop
    /// turned. The open episode ends here; if the latest probe saw work, the next begins.
    public mutating func noteLoopTurn(at time: Double) -> [DetectorEvent] {
        guard let current = episode, let last = lastObservation, time + Self.epsilon >= current.startTime else { return [] }
        let events = endEpisode(at: time, ending: .returnedToIdle)
        if configuration.usesStackRule { stackRuleTurns += 1 }
        if last.activity.isBusy { startEpisode(at: time) }
        return events
    }

    /// Switches to counted loop turns: the agent opens its kernel counters only once the loop
    /// is seen idle, or a busy episode outside the batch rule is half a threshold old (they
    /// slow every system call of the thread, and a process that never waits in a loop gets
    /// nothing from them). An open episode keeps its samples; from here on a counted turn ends
    /// it, and its age alone makes it a stall, as with counters from the start.
    public mutating func useLoopTurnEvidence(_ evidence: LoopTurnEvidence) {
        configuration.loopTurnEvidence = evidence
    }

    /// The event loop's own frames (its home wait's stack, innermost first), which the stack
    /// rule never takes for work in progress.
    public mutating func setLoopFrames(_ frames: [SampledFrame]) {
        loopFrames = Set(frames.map(StallFrameTracker.Key.init))
    }

    public var knowsLoopFrames: Bool { !loopFrames.isEmpty }

    /// The agent stops watching (`targetGone == false`) or the target died (`true`) at `time`:
    /// accounts the time since the last probe, finalises an open stall (reason `died` when the
    /// target died, with the underlying cause kept in `causeReason`) and closes the episode.
    /// After a death the detector starts over in the launch phase (if so configured), ready for
    /// a restarted target.
    public mutating func finish(at time: Double, targetGone: Bool) -> [DetectorEvent] {
        finish(at: time, ending: targetGone ? .targetDied : .monitoringStopped)
    }

    /// The same with the ending said: `targetExited` for a process known to have exited by
    /// itself (its stall keeps its reason), `targetDied` for a death by signal or an end the
    /// agent could not tell.
    public mutating func finish(at time: Double, ending: StallEnding) -> [DetectorEvent] {
        let targetGone = [.targetDied, .targetExited, .targetEnded].contains(ending)
        var events: [DetectorEvent] = []
        if episode != nil, let previous = lastObservation {
            if time > previous.time {
                // Same counters: no schedstat delta is known for the tail, the on-CPU share of
                // the measured part applies.
                var tail = previous
                tail.time = time
                account(from: previous, to: tail)
            }
            events += checkAge(at: time, final: true)
            events += closeEpisode(at: max(time, previous.time), ending: ending)
        }
        lastObservation = nil
        if targetGone { forgetTarget() }
        return events
    }

    /// The agent found (or no longer finds) a wait-for cycle through the main thread. The open
    /// episode's cause becomes `deadlock` (code 0xdead10cc, like `lock`) whatever the time
    /// breakdown says, since a cycle never resolves by waiting; an open stall gets an update.
    public mutating func setDeadlock(_ isDeadlock: Bool, at time: Double) -> [DetectorEvent] {
        guard episode != nil, episode?.deadlock != isDeadlock else { return [] }
        episode?.deadlock = isDeadlock
        guard episode?.stall != nil else { return [] }
        return [emitUpdate(trigger: .deadlockChanged, at: time)]
    }

    /// An on-demand capture (reason `snapshot`, 0xbaaaaaad), stall or not. While an episode is
    /// open it covers that episode; otherwise it covers nothing but `idleSample`, a stack the
    /// agent captured without stopping the thread, if any. Takes a fresh id.
    public mutating func captureSnapshot(at time: Double, idleSample: StackSample? = nil) -> StallSnapshot {
        let id = nextStallID
        nextStallID += 1
        let threshold = configuration.threshold(for: episode?.phase ?? phase)
        guard let current = episode else {
            let samples = idleSample.map { [$0] } ?? []
            var heaviest = HeaviestStackTracker()
            var frames = StallFrameTracker()
            for sample in samples {
                heaviest.add(sample)
                frames.add(sample.frames)
            }
            return StallSnapshot(
                id: id, revision: 0, trigger: .requested, phase: phase, startTime: time, endTime: time,
                ongoing: false, ending: nil, duration: 0, threshold: threshold, sampleCount: samples.count,
                sampleInterval: configuration.sampleInterval, firstSampleTime: samples.first?.time,
                lastSampleTime: samples.last?.time, stateBreakdown: StallStateBreakdown(), reason: .snapshot,
                causeReason: .snapshot, deadlock: false, heaviestStack: heaviest.heaviest,
                stallFrame: frames.stallFrame, callTree: CallTreeNode.build(from: samples),
                fingerprint: StallFingerprint.make(reason: .snapshot, heaviestStack: heaviest.heaviest),
                samples: samples)
        }
        var snapshot = makeSnapshot(of: current, id: id, revision: 0, trigger: .requested, ending: nil)
        snapshot.reason = .snapshot
        snapshot.ongoing = false
        return snapshot
    }

    // MARK: - Internals

    private mutating func startEpisode(at time: Double) {
        ring.removeAll()
        var started = Episode(phase: phase, startTime: time)
        // A quarter of the threshold, at most 250 ms: the time a loop takes from leaving its
        // wait to calling the handler (see StallFrameTracker), even on a loaded machine.
        let grace = min(0.25, configuration.threshold(for: phase) / 4)
        started.stallFrame = StallFrameTracker(start: time, entryGrace: grace, exitGrace: grace)
        episode = started
    }

    /// Attributes the interval between two probes to the episode.
    private mutating func account(from previous: ThreadObservation, to next: ThreadObservation) {
        guard var current = episode else { return }
        episode = nil
        current.states.add(from: previous, to: next)
        if previous.activity == .stopped {
            current.stoppedSeconds += next.time - previous.time
        }
        current.lastTime = max(current.lastTime, next.time)
        episode = current
    }

    /// Opens the stall when the age crosses the threshold, or emits a scheduled re-capture.
    /// `final`: the episode ends now, and its age is its whole length.
    private mutating func checkAge(at time: Double, final: Bool = false) -> [DetectorEvent] {
        guard let current = episode else { return [] }
        let age = current.age
        if current.stall != nil {
            guard episode?.stall?.schedule.advance(pastAge: age) == true else { return [] }
            return [emitUpdate(trigger: .annealing, at: time)]
        }
        let threshold = configuration.threshold(for: current.phase)
        guard age + Self.epsilon >= threshold else { return [] }
        // Stack rule: a stall needs a frame outside the loop held in every sample. Before the
        // first sample (or when every capture fails) the age alone decides, as without it.
        if current.phase == .batch {
            // Batch rule: only a held frame is a stall; no sample, no stall (a run whose
            // captures all fail must not become one long stall).
            guard let anchors = current.anchors, !anchors.isEmpty,
                current.anchoredSamples >= configuration.batchMinimumHeldSamples
            else { return [] }
            // While it lasts, the work is known held only up to the last sample that saw it:
            // the probes' age runs on past where it ended until a sample shows that, and the
            // end is then dated back (attrs at --threshold 0.5s: 3 of 14 reports 0.42–0.48 s).
            if !final, (current.heldUntil ?? current.startTime) - current.startTime - current.stoppedSeconds + Self.epsilon < threshold {
                return []
            }
        } else if configuration.usesStackRule, let anchors = current.anchors,
            anchors.isEmpty || current.anchoredSamples < configuration.minimumHeldSamples
        {
            return []
        }
        // Re-captures are counted from the nominal threshold, not the probe that noticed it, so
        // the cadence is exactly threshold × 2, 3, 5, 8 … of stall age.
        var schedule = StallAnnealingSchedule(base: threshold, unit: threshold, fibonacci: configuration.annealing)
        schedule.advance(pastAge: age)  // a late probe must not trigger an update right away
        let stall = OpenStall(
            id: nextStallID, schedule: schedule, reportedLeader: current.heaviest.leader, lastEmitTime: time)
        nextStallID += 1
        episode?.stall = stall
        return [.stallStarted(makeSnapshot(trigger: .detected, ending: nil))]
    }

    /// Emits an update when a different group has become the heaviest and clearly outnumbers
    /// the one last reported. Requiring strictly more samples (not the tie that already makes it
    /// the heaviest) keeps two alternating stacks from flip-flopping the report; the spacing
    /// limit bounds rewrites further. The annealing sequence restarts from the current age.
    private mutating func checkStackChange(at time: Double) -> [DetectorEvent] {
        guard let current = episode, let stall = current.stall, let leader = current.heaviest.leader,
            leader != stall.reportedLeader
        else { return [] }
        if let reported = stall.reportedLeader,
            current.heaviest.count(for: reported) >= current.heaviest.count(for: leader)
        {
            return []
        }
        guard time - stall.lastEmitTime + Self.epsilon >= configuration.minimumUpdateSpacing else { return [] }
        episode?.stall?.schedule.restart(at: current.age)
        return [emitUpdate(trigger: .stackChanged, at: time)]
    }

    private mutating func emitUpdate(trigger: StallSnapshotTrigger, at time: Double) -> DetectorEvent {
        episode?.stall?.revision += 1
        // The same hysteresis as `checkStackChange`: a group that merely ties the reported one
        // (and so shows in this snapshot, being the most recent) does not replace it, or the
        // next sample of the old group would count as a change back.
        if let current = episode, let leader = current.heaviest.leader {
            let reported = current.stall?.reportedLeader
            if reported.map({ current.heaviest.count(for: leader) > current.heaviest.count(for: $0) }) ?? true {
                episode?.stall?.reportedLeader = leader
            }
        }
        episode?.stall?.lastEmitTime = time
        return .stallUpdated(makeSnapshot(trigger: trigger, ending: nil))
    }

    /// Ends the open episode, if any: a last age check (the interval just accounted may cross
    /// the threshold), then the stall's final report and the episode summary.
    private mutating func endEpisode(at time: Double, ending: StallEnding) -> [DetectorEvent] {
        guard episode != nil else { return [] }
        return checkAge(at: time, final: true) + closeEpisode(at: time, ending: ending)
    }

    /// The thread reached its loop (idle, or a turn): start-up is over.
    private mutating func reachLoop(at time: Double) -> [DetectorEvent] {
        guard !hasSeenIdle else { return [] }
        hasSeenIdle = true
        return [.launchPhaseEnded(at: time)]
    }

    /// Finalises the open stall, if any, and reports the episode.
    private mutating func closeEpisode(at time: Double, ending: StallEnding) -> [DetectorEvent] {
        guard let current = episode else { return [] }
        var events: [DetectorEvent] = []
        if current.stall != nil {
            episode?.stall?.revision += 1
            events.append(.stallEnded(makeSnapshot(trigger: .ended, ending: ending)))
        }
        events.append(
            .episodeEnded(
                BusyEpisodeSummary(
                    phase: current.phase, startTime: current.startTime, endTime: max(time, current.lastTime),
                    duration: current.age, ending: ending, stateBreakdown: current.states.breakdown,
                    sampleCount: current.sampleCount, stallID: current.stall?.id)))
        episode = nil
        return events
    }

    /// After the target died: a restarted target is a new launch.
    private mutating func forgetTarget() {
        lastObservation = nil
        exitedNormally = false
        killed = false
        hasSeenIdle = !configuration.startsInLaunchPhase
        outerFrames = nil
        lastSampleAttemptAnyEpisode = nil
    }

    /// How a `gone` observation ends the episode: an exit the agent saw (`noteExit`) keeps the
    /// stall's reason; anything else is a death.
    /// In a batch episode (a wrapped command's process) an end the agent could not see is most
    /// often the process's own exit, and is said as unknown (`targetEnded`), not as a death.
    private var goneEnding: StallEnding {
        if exitedNormally { return .targetExited }
        if killed { return .targetDied }
        return (episode?.phase ?? phase) == .batch ? .targetEnded : .targetDied
    }

    private func makeSnapshot(trigger: StallSnapshotTrigger, ending: StallEnding?) -> StallSnapshot {
        // Only called with an open stall.
        let current = episode!
        let stall = current.stall!
        return makeSnapshot(of: current, id: stall.id, revision: stall.revision, trigger: trigger, ending: ending)
    }

    private func makeSnapshot(
        of current: Episode, id: Int, revision: Int, trigger: StallSnapshotTrigger, ending: StallEnding?
    ) -> StallSnapshot {
        let breakdown = current.states.breakdown
        let threshold = configuration.threshold(for: current.phase)
        let cause =
            current.deadlock
            ? StallReason.deadlock : configuration.classifier.classify(breakdown, threshold: threshold)
        let heaviest = current.heaviest.heaviest
        var snapshot = StallSnapshot(
            id: id, revision: revision, trigger: trigger, phase: current.phase, startTime: current.startTime,
            endTime: current.lastTime, ongoing: ending == nil, ending: ending, duration: current.age,
            threshold: threshold, sampleCount: current.sampleCount,
            sampleInterval: configuration.sampleInterval, firstSampleTime: current.firstSampleTime,
            lastSampleTime: current.lastSampleTime, stateBreakdown: breakdown,
            reason: ending == .targetDied ? .died : cause, causeReason: cause, deadlock: current.deadlock,
            heaviestStack: heaviest,
            stallFrame: ending == nil ? current.stallFrame.stallFrame : current.stallFrame.stallFrame(endingAt: current.lastTime),
            callTree: CallTreeNode.build(from: ring),
            fingerprint: StallFingerprint.make(reason: cause, heaviestStack: heaviest), samples: ring.samples)
        snapshot.loopTurnEvidence = current.phase == .batch ? .batchRule : configuration.loopTurnEvidence
        return snapshot
    }
}
