import Foundation
import StallDetection
import StallReports
import StallSymbols

/// What the HTML page draws, as one JSON blob. Names of functions, modules and files go
/// through one string table (`strings`) so 10 000 stalls of the same program stay a few MB;
/// call trees are flat pre-order arrays the page expands only for the stall it shows.
struct ViewPageData: Encodable {
    var title: String
    var source: String
    var generated: String
    var generator: String
    /// Why the page has no loop-health line (turns per second, busy share): what the
    /// directory lacks. Nil once the directory records it.
    var loopHealthNote: String?
    var strings: [String]
    var reasons: [Reason]
    var targets: [Target]
    var stalls: [Stall]
    var fingerprints: [Fingerprint]

    struct Reason: Encodable {
        var name: String
        var code: String
        var meaning: String
    }

    struct Target: Encodable {
        var label: String
        var name: String
        var pid: Int32
        var unit: String?
        var host: String
        var path: String?
        var argv: [String]?
        var buildId: String?
        /// [end ms, seconds, turns, busy seconds, longest turn seconds] per interval.
        var health: [[Double]]?
        var evidence: String?
    }

    struct Frame: Encodable {
        /// Indices into `strings`; -1 for none.
        var fn: Int
        var mod: Int
        var file: Int
        var line: Int?
        var offset: UInt64?
        var inlined: [Int]?
        var approximate: Bool?

        enum CodingKeys: String, CodingKey { case fn, mod, file, line, offset, inlined, approximate }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(fn, forKey: .fn)
            try c.encode(mod, forKey: .mod)
            if file >= 0 { try c.encode(file, forKey: .file) }
            try c.encodeIfPresent(line, forKey: .line)
            try c.encodeIfPresent(offset, forKey: .offset)
            try c.encodeIfPresent(inlined, forKey: .inlined)
            if approximate == true { try c.encode(true, forKey: .approximate) }
        }
    }

    struct LockOwner: Encodable {
        var tid: Int32
        var name: String?
        var detail: String
        var waitChain: [Int32]
        var deadlock: Bool
        var frames: [Frame]
    }

    /// What the timeline, the tables and the tooltips need for every stall.
    struct Stall: Encodable {
        /// Target index.
        var t: Int
        var id: Int
        var kind: String
        var reason: String
        var code: String
        /// Start and end, ms since the epoch.
        var start: Double
        var end: Double
        var duration: Double
        var ongoing: Bool
        var culprit: String?
        var culpritAt: String?
        var fingerprint: Int
        /// `Detail` as JSON text: the page parses it only for the stall it shows.
        var detail: String
    }

    /// The rest of a stall, shown when it is selected.
    struct Detail: Encodable {
        var cause: String
        var threshold: Double?
        var ending: String?
        var phase: String
        var trigger: String
        var deadlock: Bool
        var description: String
        var occurrence: Int
        var revision: Int
        var samples: ReportSampleStats
        /// [label, seconds, fraction] for each busy state with time in it, then "stopped".
        var states: [[String]]
        var heaviestSamples: Int?
        var heaviestTotal: Int?
        var heaviest: [Frame]
        var lockOwner: LockOwner?
        var agent: ReportAgentStats
        var loopTurns: String?
        var loopTurnsNote: String?
        var sampling: String?
        var termination: String?
        var report: String
        var folded: Bool
        /// Call tree, pre-order: [function, module, count, self, children] per node, the
        /// synthetic root first.
        var tree: [Int]
    }

    struct Fingerprint: Encodable {
        var fingerprint: String
        var culprit: String?
        var reason: String
        var code: String
        /// The highest occurrence number a report carries: how often the agent saw it.
        var seen: Int
        var reports: Int
        var total: Double
        var worst: Double
        /// Index of the longest stall with this fingerprint.
        var worstStall: Int
        var targets: Int
    }
}

/// Builds `ViewPageData` from reports.
struct ViewPageDataBuilder {
    private var strings: [String] = []
    private var stringIndex: [String: Int] = [:]

    mutating func string(_ text: String?) -> Int {
        guard let text else { return -1 }
        if let index = stringIndex[text] { return index }
        stringIndex[text] = strings.count
        strings.append(text)
        return strings.count - 1
    }

    mutating func frame(_ f: SymbolizedFrame) -> ViewPageData.Frame {
        var inlined: [Int]?
        if !f.inlined.isEmpty {
            inlined = f.inlined.map { frame in
                let name = frame.function ?? "?"
                return string(ViewNames.sourceLine(frame.file, frame.line).map { "\(name) (\($0))" } ?? name)
            }
        }
        return ViewPageData.Frame(
            fn: string(f.function ?? f.displayName), mod: string(f.module), file: string(f.file), line: f.line,
            offset: f.function == nil ? nil : f.functionOffset, inlined: inlined, approximate: f.approximate)
    }

    mutating func tree(_ node: CallTreeNode, into out: inout [Int]) {
        out += [string(node.function), string(node.module), node.count, node.selfCount, node.children.count]
        for child in node.children { tree(child, into: &out) }
    }

    static func build(_ collection: ReportCollection, generator: String, now: Date = Date()) throws -> ViewPageData {
        var builder = ViewPageDataBuilder()
        var targets: [ViewPageData.Target] = []
        var targetIndex: [String: Int] = [:]
        var stalls: [ViewPageData.Stall] = []
        var fingerprintIndex: [String: Int] = [:]
        var fingerprints: [ViewPageData.Fingerprint] = []
        var fingerprintTargets: [Set<Int>] = []
        let detailEncoder = JSONEncoder()
        detailEncoder.outputFormatting = [.withoutEscapingSlashes]
        // Gathered from several hosts, a process is named with its host: pids repeat across hosts.
        let manyHosts = Set(collection.reports.map(\.report.hostname)).count > 1
        for loaded in collection.reports {
            let r = loaded.report
            let key = targetKey(hostname: r.hostname, pid: r.process.pid, name: r.process.name, unit: r.process.unit)
            let t: Int
            if let known = targetIndex[key] {
                t = known
            } else {
                t = targets.count
                targetIndex[key] = t
                targets.append(
                    ViewPageData.Target(
                        label: manyHosts ? "\(r.hostname): \(ViewNames.target(r))" : ViewNames.target(r), name: r.process.name, pid: r.process.pid,
                        unit: r.process.unit, host: r.hostname,
                        path: r.process.path, argv: r.process.commandLine, buildId: r.process.buildId))
            }
            let culprit = r.culpritFrame
            let printIndex: Int
            if let known = fingerprintIndex[r.recurrence.fingerprint] {
                printIndex = known
            } else {
                printIndex = fingerprints.count
                fingerprintIndex[r.recurrence.fingerprint] = printIndex
                fingerprints.append(
                    ViewPageData.Fingerprint(
                        fingerprint: r.recurrence.fingerprint, culprit: r.culpritName, reason: r.reason.name, code: r.reason.hexCode, seen: 0,
                        reports: 0, total: 0, worst: -1, worstStall: stalls.count, targets: 0))
                fingerprintTargets.append([])
            }
            fingerprints[printIndex].seen = max(fingerprints[printIndex].seen, r.recurrence.occurrence)
            fingerprints[printIndex].reports += 1
            fingerprints[printIndex].total += r.span.durationSeconds
            fingerprintTargets[printIndex].insert(t)
            if r.span.durationSeconds > fingerprints[printIndex].worst {
                fingerprints[printIndex].worst = r.span.durationSeconds
                fingerprints[printIndex].worstStall = stalls.count
                fingerprints[printIndex].culprit = r.culpritName
            }
            var states: [[String]] = r.stateBreakdown.labelledShares.filter { $0.share.seconds > 0 }.map {
                [$0.label, String($0.share.seconds), String($0.share.fraction)]
            }
            if r.stateBreakdown.stopped.seconds > 0 {
                states.append(["stopped (not counted)", String(r.stateBreakdown.stopped.seconds), String(r.stateBreakdown.stopped.fraction)])
            }
            var tree: [Int] = []
            builder.tree(r.callTree, into: &tree)
            let lockOwner = r.lockOwner.map { owner in
                ViewPageData.LockOwner(
                    tid: owner.tid, name: owner.name, detail: owner.detail, waitChain: owner.waitChain, deadlock: owner.deadlock,
                    frames: owner.frames.map { builder.frame($0) })
            }
            let detail = ViewPageData.Detail(
                cause: r.cause.name, threshold: r.span.thresholdSeconds.isFinite ? r.span.thresholdSeconds : nil, ending: r.span.ending, phase: r.phase,
                trigger: r.trigger, deadlock: r.deadlock, description: r.description, occurrence: r.recurrence.occurrence, revision: r.revision,
                samples: r.samples, states: states, heaviestSamples: r.heaviestStack?.samples, heaviestTotal: r.heaviestStack?.totalSamples,
                heaviest: (r.heaviestStack?.frames ?? []).map { builder.frame($0) }, lockOwner: lockOwner, agent: r.agent,
                loopTurns: r.evidence.loopTurns, loopTurnsNote: r.evidence.loopTurnsNote, sampling: r.evidence.sampling, termination: r.termination,
                report: loaded.jsonPath, folded: loaded.folded != nil, tree: tree)
            stalls.append(
                ViewPageData.Stall(
                    t: t, id: r.id, kind: r.kind, reason: r.reason.name, code: r.reason.hexCode,
                    start: (r.span.startTime.timeIntervalSince1970 * 1000).rounded(), end: (r.span.endTime.timeIntervalSince1970 * 1000).rounded(),
                    duration: r.span.durationSeconds, ongoing: r.span.ongoing, culprit: r.culpritName,
                    culpritAt: ViewNames.sourceLine(culprit?.file, culprit?.line), fingerprint: printIndex,
                    detail: String(decoding: try detailEncoder.encode(detail), as: UTF8.self)))
        }
        for index in fingerprints.indices { fingerprints[index].targets = fingerprintTargets[index].count }
        // A process whose loop health is recorded gets its row even without a stall.
        for sample in collection.health {
            let t: Int
            if let known = targetIndex[sample.targetKey] {
                t = known
            } else {
                t = targets.count
                targetIndex[sample.targetKey] = t
                let base = "\(sample.name) [\(sample.pid)]"
                targets.append(
                    ViewPageData.Target(
                        label: sample.unit.map { "\(base) · \($0)" } ?? base, name: sample.name, pid: sample.pid, unit: sample.unit,
                        host: sample.hostname, path: nil, argv: nil, buildId: nil))
            }
            if targets[t].health == nil { targets[t].health = [] }
            targets[t].health?.append([
                (sample.time.timeIntervalSince1970 * 1000).rounded(), sample.seconds, Double(sample.turns), sample.busySeconds,
                sample.longestTurnSeconds,
            ])
            targets[t].evidence = sample.evidence ?? targets[t].evidence
        }
        var healthNote: String?
        if collection.health.isEmpty {
            healthNote = "Loop health over time (turns per second, busy share) is not in this report directory (no *.loop.jsonl): only stalls are drawn."
        } else if collection.unreadableHealthLines > 0 {
            healthNote = "\(collection.unreadableHealthLines) line(s) of the loop-health files did not parse and were skipped."
        }
        let reasons = StallReason.allKnown.map { ViewPageData.Reason(name: $0.name, code: $0.hexCode, meaning: Self.meaning($0)) }
        let formatter = ISO8601DateFormatter()
        return ViewPageData(
            title: "Stalls · " + (targets.count == 1 ? targets[0].label : "\(targets.count) processes"), source: collection.source,
            generated: formatter.string(from: now), generator: generator,
            loopHealthNote: healthNote,
            strings: builder.strings, reasons: reasons, targets: targets, stalls: stalls, fingerprints: fingerprints)
    }

    static func targetKey(hostname: String, pid: Int32, name: String, unit: String?) -> String {
        "\(hostname)\u{0}\(pid)\u{0}\(name)\u{0}\(unit ?? "")"
    }

    static func meaning(_ reason: StallReason) -> String {
        switch reason.name {
        case "hang": return "busy on CPU"
        case "lock": return "waiting on a lock another thread holds"
        case "deadlock": return "waiting on a lock whose wait-for chain loops back: it will never end"
        case "io": return "blocked in disk or file I/O"
        case "blocked": return "blocked in another synchronous call (sleep, pipe, socket, condition variable)"
        case "starved": return "runnable but not running: CPU contention or throttling"
        case "died": return "the process was killed while stalled"
        case "snapshot": return "an on-demand capture, not a stall"
        default: return reason.name
        }
    }
}

extension ReportStateBreakdown {
    /// The busy states with the labels the text report prints.
    var labelledShares: [(label: String, share: Share)] {
        [
            ("running", onCPU), ("run-queue wait", runQueueWait), ("lock wait", lockWait), ("I/O wait", ioWait),
            ("blocked", blockedCall),
        ]
    }
}
