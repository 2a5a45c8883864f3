import StallReports

extension LoopHealthSample {
    /// The same key stall reports are grouped by, so a process's health and its stalls share
    /// a timeline row.
    var targetKey: String { ViewPageDataBuilder.targetKey(hostname: hostname, pid: pid, name: name, unit: unit) }
}
