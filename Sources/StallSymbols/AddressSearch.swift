extension RandomAccessCollection where Index == Int {
    /// How many leading elements start at or below `address`, for a collection sorted by
    /// `start`: the element that may contain `address` is at the result minus one. One binary
    /// search for modules, mappings, symbols, DWARF units and perf-map entries.
    func countStarting(atOrBelow address: UInt64, start: (Element) -> UInt64) -> Int {
        var low = startIndex
        var high = endIndex
        while low < high {
            let mid = low + (high - low) / 2
            if start(self[mid]) <= address { low = mid + 1 } else { high = mid }
        }
        return low - startIndex
    }
}
