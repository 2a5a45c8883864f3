/// Follows "waits for" from the main thread through glibc mutex owners: main waits on a
/// lock held by T1, which waits on a lock held by T2 … A chain that comes back to a thread
/// already in it is a deadlock.
struct LockChainResolver {
    let inspector: ProcessInspector

    struct Chain {
        var tids: [Int32]
        var deadlock: Bool
    }

    func resolve(from tid: Int32, maxLength: Int = 16) -> Chain? {
        var chain: [Int32] = [tid]
        var current = tid
        while chain.count <= maxLength {
            let (_, _, classification) = inspector.classify(tid: current)
            guard classification.activity == .lockWait, let futex = classification.futexAddress,
                let owner = inspector.lockOwner(futexAddress: futex)
            else { break }
            if chain.contains(owner.tid) {
                chain.append(owner.tid)
                return Chain(tids: chain, deadlock: true)
            }
            chain.append(owner.tid)
            current = owner.tid
        }
        return chain.count > 1 ? Chain(tids: chain, deadlock: false) : nil
    }
}
