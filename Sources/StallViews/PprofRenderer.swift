import Foundation
import StallReports
import SwiftProtobuf

/// pprof's profile.proto (gzipped), which go tool pprof, Grafana Pyroscope and Parca read:
/// every distinct stack of every stall is a sample, valued in samples and in wall time, and
/// labelled with its target, reason, code, fingerprint and stall, so `-tagfocus` and the
/// viewers' label filters pick stalls out. Locations carry the report's source lines and
/// addresses; mappings carry the build-ids.
public enum PprofRenderer {
    public static func render(_ collection: ReportCollection) throws -> Data {
        try Gzip.compress(try profile(collection).serializedData())
    }

    public static func profile(_ collection: ReportCollection) -> Perftools_Profiles_Profile {
        var table = StringTable()
        var profile = Perftools_Profiles_Profile()
        profile.sampleType = [
            valueType(&table, "samples", "count"),
            valueType(&table, "wall", "nanoseconds"),
        ]
        var mappings: [String: UInt64] = [:]
        var mappingRanges: [UInt64: ClosedRange<UInt64>] = [:]
        var functions: [String: UInt64] = [:]
        var locations: [String: UInt64] = [:]
        var period: Int64 = 0
        var earliest: Date?
        var latest: Date?
        for loaded in collection.reports {
            let report = loaded.report
            earliest = min(earliest ?? report.span.startTime, report.span.startTime)
            latest = max(latest ?? report.span.endTime, report.span.endTime)
            let stacks = StallStacks(report)
            let interval = Int64((report.samples.intervalSeconds * 1e9).rounded())
            if period == 0 { period = interval }
            // One mapping per module file and build-id, across every report.
            var mappingOfModule: [String: UInt64] = [:]
            for image in report.binaryImages {
                let key = "\(image.path)\u{0}\(image.buildId ?? "")"
                let id: UInt64
                if let known = mappings[key] {
                    id = known
                } else {
                    id = UInt64(profile.mapping.count + 1)
                    mappings[key] = id
                    var mapping = Perftools_Profiles_Mapping()
                    mapping.id = id
                    mapping.memoryStart = image.start
                    mapping.memoryLimit = image.end
                    mapping.filename = table.index(image.path)
                    mapping.buildID = table.index(image.buildId ?? "")
                    mapping.hasFunctions_p = true
                    mapping.hasFilenames_p = true
                    mapping.hasLineNumbers_p = true
                    mapping.hasInlineFrames_p = false
                    profile.mapping.append(mapping)
                    mappingRanges[id] = image.start...max(image.start, image.end &- 1)
                }
                mappingOfModule[image.name] = id
            }
            let labels = [
                label(&table, "target", ViewNames.target(report)),
                label(&table, "reason", report.reason.name),
                label(&table, "code", report.reason.hexCode),
                label(&table, "fingerprint", report.recurrence.fingerprint),
                label(&table, "stall", "\(report.process.pid)#\(report.id)"),
            ]
            for stack in stacks.stacks {
                var sample = Perftools_Profiles_Sample()
                // Leaf first.
                for key in stack.frames.reversed() {
                    let detail = stacks.details[key]
                    let mappingID = mappingOfModule[key.module] ?? 0
                    let functionKey = "\(key.function)\u{0}\(detail?.file ?? "")"
                    let functionID: UInt64
                    if let known = functions[functionKey] {
                        functionID = known
                    } else {
                        functionID = UInt64(profile.function.count + 1)
                        functions[functionKey] = functionID
                        var function = Perftools_Profiles_Function()
                        function.id = functionID
                        function.name = table.index(key.function)
                        function.systemName = function.name
                        function.filename = table.index(detail?.file ?? "")
                        profile.function.append(function)
                    }
                    let line = Int64(detail?.line ?? 0)
                    let locationKey = "\(functionID)\u{0}\(mappingID)\u{0}\(line)"
                    let locationID: UInt64
                    if let known = locations[locationKey] {
                        locationID = known
                    } else {
                        locationID = UInt64(profile.location.count + 1)
                        locations[locationKey] = locationID
                        var location = Perftools_Profiles_Location()
                        location.id = locationID
                        location.mappingID = mappingID
                        // The address where the report has one inside this mapping (the same
                        // module loaded elsewhere by another process keeps 0: unknown).
                        if let address = detail?.address, let range = mappingRanges[mappingID], range.contains(address) {
                            location.address = address
                        }
                        var entry = Perftools_Profiles_Line()
                        entry.functionID = functionID
                        entry.line = line
                        location.line = [entry]
                        profile.location.append(location)
                    }
                    sample.locationID.append(locationID)
                }
                sample.value = [Int64(stack.samples), Int64(stack.samples) * interval]
                sample.label = labels
                profile.sample.append(sample)
            }
        }
        profile.periodType = valueType(&table, "wall", "nanoseconds")
        profile.period = period
        if let earliest, let latest {
            profile.timeNanos = Int64((earliest.timeIntervalSince1970 * 1e9).rounded())
            profile.durationNanos = Int64((latest.timeIntervalSince(earliest) * 1e9).rounded())
        }
        profile.comment = [table.index("stall stacks from stallagent reports in \(collection.source)")]
        profile.defaultSampleType = table.index("wall")
        profile.stringTable = table.strings
        return profile
    }

    static func valueType(_ table: inout StringTable, _ type: String, _ unit: String) -> Perftools_Profiles_ValueType {
        var value = Perftools_Profiles_ValueType()
        value.type = table.index(type)
        value.unit = table.index(unit)
        return value
    }

    static func label(_ table: inout StringTable, _ key: String, _ text: String) -> Perftools_Profiles_Label {
        var label = Perftools_Profiles_Label()
        label.key = table.index(key)
        label.str = table.index(text)
        return label
    }

    /// pprof's string table: entry 0 is always "".
    struct StringTable {
        var strings = [""]
        var positions: [String: Int64] = ["": 0]

        mutating func index(_ text: String) -> Int64 {
            if let known = positions[text] { return known }
            positions[text] = Int64(strings.count)
            strings.append(text)
            return Int64(strings.count - 1)
        }
    }
}
