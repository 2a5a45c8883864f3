/// Finds the RBP a stop-free snapshot lacks (`/proc/…/syscall` gives only SP and PC) when a
/// frame's CFI needs it, as frame-pointer code's does (CFA = RBP + 16).
///
/// The frame's own frame record is somewhere above its stack pointer, but so are stale
/// records left by earlier calls and the records of older frames; taking the first plausible
/// one (what this used to do) named a stale callee or skipped a caller. So every plausible
/// slot (saved RBP higher in the stack or zero, then a return address in code after a call
/// instruction) is tried as RBP and the whole chain it implies is unwound with CFI wherever
/// the code has it: every return address must be in code after a call, and the chain must
/// reach the end of the stack (or of the copy, or the frame limit). `choose` then picks the
/// one chain that explains the others, or none.
struct FramePointerRecovery {
    let unwinder: SnapshotUnwinder
    /// How far above the frame's stack pointer its frame record is looked for.
    static let window: UInt64 = 64 * 1024
    /// Bounds the work on a stack full of plausible-looking words.
    static let maxCandidates = 48

    var context: UnwindContext { unwinder.context }

    /// `frames.last` is the frame whose step needs RBP. On success `frames` holds the whole
    /// chain; otherwise it is left as it was.
    func recover(frames: inout [UnwoundFrame]) -> UnwindEnd {
        guard let frame = frames.last else { return .missingRegister }
        let prefix = Array(frames.dropLast())
        let resumesAtReturnAddress = !prefix.isEmpty && !frame.isSignalFrame
        let stackEnd = context.stackEnd
        guard stackEnd >= 16 else { return .missingRegister }
        let slot = (max(frame.stackPointer, context.stackStart) &+ 7) & ~7
        let limit = min(stackEnd - 16, slot &+ FramePointerRecovery.window)
        guard slot <= limit else { return .missingRegister }
        let key = Key(address: frame.address, stackPointer: frame.stackPointer, bytes: contentHash(from: slot, through: limit + 16))
        if let known = context.recoveredRecords[key] {
            guard let record = known else { return .missingRegister }
            var walked = prefix
            let end = unwinder.walk(
                from: registers(for: frame, record: record), resumingAtReturnAddress: resumesAtReturnAddress, frames: &walked,
                recoverFramePointer: false)
            frames = walked
            return end
        }
        let chosen = search(frames: frames, from: slot, through: limit, resumesAtReturnAddress: resumesAtReturnAddress)
        if context.recoveredRecords.count > 256 { context.recoveredRecords.removeAll(keepingCapacity: true) }
        context.recoveredRecords[key] = .some(chosen?.slot)
        guard let chosen else { return .missingRegister }
        frames = chosen.frames
        return chosen.end
    }

    struct Key: Hashable {
        var address: UInt64
        var stackPointer: UInt64
        var bytes: Int
    }

    private func contentHash(from start: UInt64, through end: UInt64) -> Int {
        var hasher = Hasher()
        let lower = Int(start - context.stackStart)
        let upper = min(Int(end - context.stackStart), context.stack.count)
        if lower < upper { hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: context.stack[lower..<upper])) }
        return hasher.finalize()
    }

    private func registers(for frame: UnwoundFrame, record: UInt64) -> RegisterFile {
        var registers = RegisterFile()
        registers[RegisterFile.rsp] = frame.stackPointer
        registers[RegisterFile.rip] = frame.address
        registers[RegisterFile.rbp] = record
        return registers
    }

    private func search(
        frames: [UnwoundFrame], from first: UInt64, through limit: UInt64, resumesAtReturnAddress: Bool
    ) -> Chain? {
        guard let frame = frames.last else { return nil }
        let prefix = Array(frames.dropLast())
        var slot = first
        var chains: [Chain] = []
        // The lowest record whose call site confirms it but whose chain breaks further out.
        var brokenConfirmed = UInt64.max
        var tried = 0
        while slot <= limit, tried < FramePointerRecovery.maxCandidates {
            defer { slot += 8 }
            guard let saved = context.readWord(slot), let returnAddress = context.readWord(slot + 8),
                saved == 0 || (saved > slot && context.isInStack(saved)),
                context.isPlausibleReturnAddress(returnAddress)
            else { continue }
            tried += 1
            var walked = prefix
            let end = unwinder.walk(
                from: registers(for: frame, record: slot), resumingAtReturnAddress: resumesAtReturnAddress, frames: &walked, recoverFramePointer: false)
            guard walked.count > frames.count else { continue }
            guard end == .complete || end == .truncatedAtLimit || end == .outsideCopiedStack else {
                if callConfirms(walked, at: frames.count) { brokenConfirmed = min(brokenConfirmed, slot) }
                continue
            }
            chains.append(
                Chain(
                    slot: slot, frames: walked, end: end, complete: end == .complete,
                    junctionMismatches: callMismatches(walked, from: prefix.count, limit: 2),
                    confirmed: callConfirms(walked, at: frames.count),
                    tail: walked[frames.count...].map(\.address)))
        }
        // The frame's own record is the lowest one its caller's call site confirms; if that
        // chain is broken (a damaged stack), a record further up only skips frames.
        guard let chosen = FramePointerRecovery.choose(chains), chosen.slot < brokenConfirmed else { return nil }
        return chosen
    }

    struct Chain {
        var slot: UInt64
        var frames: [UnwoundFrame]
        var end: UnwindEnd
        var complete: Bool
        var junctionMismatches: Int
        /// The first return address follows a direct call to the function the frame that
        /// needed RBP is in: positive evidence that the record is that frame's own.
        var confirmed: Bool
        /// Return addresses after the frame that needed RBP.
        var tail: [UInt64]
    }

    /// The chain to believe, or nil when the evidence does not single one out.
    ///
    /// A record whose return address follows a direct call to the very function that needed
    /// RBP is that function's own (or an earlier activation's from the same caller): such
    /// confirmed chains are preferred. Stale records are common, and their call sites often
    /// say nothing (a call through the PLT: libc functions push RBP as a callee-saved
    /// register, which leaves a record-shaped pair behind).
    ///
    /// Otherwise, among the best-ranked chains (complete before cut short, then fewest call
    /// mismatches at the two return addresses the candidate record decides), a record further
    /// up the stack yields the same chain with frames skipped: its tail is a suffix of the
    /// true chain's tail. So the chain whose tail ends every other one explains them all and
    /// is taken; when none does, the candidates disagree and nothing is guessed.
    ///
    /// What this cannot tell apart: a stale record whose two call sites are both indirect
    /// inserts one frame the true chain lacks, and when the true record is gone (a corrupt
    /// stack) an older frame's record yields the stack with frames skipped.
    static func choose(_ chains: [Chain]) -> Chain? {
        if let confirmed = explaining(chains.filter(\.confirmed)) { return confirmed }
        guard let chosen = explaining(chains) else { return nil }
        // A lone chain explains nothing: unless its call site confirms it, it may be an older
        // frame's record reached after the right one was lost (the stack then skips frames).
        guard chosen.confirmed || chains.contains(where: { $0.tail != chosen.tail }) else { return nil }
        return chosen
    }

    /// The best-ranked chain whose tail ends those of all other best-ranked chains.
    private static func explaining(_ chains: [Chain]) -> Chain? {
        guard let best = chains.map({ ($0.complete ? 0 : 1, $0.junctionMismatches) }).min(by: <) else { return nil }
        let ranked = chains.filter { ($0.complete ? 0 : 1, $0.junctionMismatches) == best }
        let explaining = ranked.filter { chain in
            ranked.allSatisfy { other in other.tail.count <= chain.tail.count && chain.tail.suffix(other.tail.count).elementsEqual(other.tail) }
        }
        guard let first = explaining.first, explaining.allSatisfy({ $0.tail == first.tail }) else { return nil }
        return first
    }

    /// True when the return address at `position` follows a `call rel32` to the start of the
    /// function the frame below it is in.
    func callConfirms(_ frames: [UnwoundFrame], at position: Int) -> Bool {
        guard position > 0, position < frames.count,
            let module = context.modules.module(containing: frames[position].address),
            let target = module.directCallTarget(returningTo: frames[position].address),
            let calleeStart = context.procedureStart(covering: frames[position - 1].lookupAddress(isInnermost: position == 1))
        else { return false }
        return target == calleeStart
    }

    /// Return addresses from frame `index + 1` outwards (at most `limit` of them) whose `call rel32` targets a function
    /// other than the one the frame below is in. Only targets that start a function of their
    /// own count: a call through the PLT lands on a stub, which says nothing.
    func callMismatches(_ frames: [UnwoundFrame], from index: Int, limit: Int) -> Int {
        var count = 0
        var position = index + 1
        while position < frames.count, position <= index + limit {
            defer { position += 1 }
            let caller = frames[position]
            let callee = frames[position - 1]
            guard !caller.isSignalFrame, !callee.isSignalFrame,
                let module = context.modules.module(containing: caller.address),
                let target = module.directCallTarget(returningTo: caller.address),
                let calleeStart = context.procedureStart(covering: callee.lookupAddress(isInnermost: position == 1)),
                target != calleeStart
            else { continue }
            if context.procedureStart(covering: target) == target { count += 1 }
        }
        return count
    }
}
