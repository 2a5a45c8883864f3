import StallDetection
import StallProc
import StallReports
import StallCapture
import StallSymbols

/// While the main thread waits on a lock: the thread holding it, with its stack, and the chain
/// of waits that leads there (a deadlock when it comes back to a thread already in it).
enum LockOwnerLookup {
    /// What is read of the target's threads: the `ProcessInspector`, or a fake in tests.
    protocol Target: AnyObject {
        /// "Waits for" from `tid` through lock owners (see `LockChainResolver`); nil when `tid`
        /// waits on no lock another thread holds.
        func lockChain(from tid: Int32) -> LockChainResolver.Chain?
        /// What `tid` is doing, as the classifier tells it.
        func classification(of tid: Int32) -> ThreadStateClassifier.Result
        /// `tid`'s stack named in full; nil when it cannot be captured.
        func namedStack(of tid: Int32, activity: ThreadActivity) -> [SymbolizedFrame]?
        func threadName(_ tid: Int32) -> String?
    }

    /// The owner of the lock `tid` waits on, for its stall's report; nil when it waits on none.
    static func owner(from tid: Int32, in target: Target) -> ReportLockOwner? {
        guard let chain = target.lockChain(from: tid) else { return nil }
        let ownerTid = chain.tids[1]
        let ownerState = target.classification(of: ownerTid)
        let frames = target.namedStack(of: ownerTid, activity: ownerState.activity) ?? []
        return ReportLockOwner(
            tid: ownerTid, name: target.threadName(ownerTid), detail: ownerState.detail, frames: frames,
            waitChain: chain.tids, deadlock: chain.deadlock)
    }
}

extension ProcessInspector: LockOwnerLookup.Target {
    func lockChain(from tid: Int32) -> LockChainResolver.Chain? {
        LockChainResolver(inspector: self).resolve(from: tid)
    }

    func classification(of tid: Int32) -> ThreadStateClassifier.Result {
        classify(tid: tid).result
    }

    func namedStack(of tid: Int32, activity: ThreadActivity) -> [SymbolizedFrame]? {
        guard let (_, stack) = try? captureStack(tid: tid, activity: activity) else { return nil }
        return symbolizer.symbolize(stack)
    }
}
