/// The lexical part the duration and size parsers share: a decimal number and an optional
/// unit suffix from a list tried in order (so "ms" must come before "s").
enum NumberWithUnit {
    /// The number (any sign, possibly infinite) and the unit's scale; nil when the text is not
    /// a number followed by one of the units, or is NaN.
    static func split(_ text: String, units: [(suffix: String, scale: Double)]) -> (Double, Double)? {
        var number = Substring(text)
        var scale = 1.0
        for unit in units where text.hasSuffix(unit.suffix) {
            number = number.dropLast(unit.suffix.count)
            scale = unit.scale
            break
        }
        number = number.drop(while: { $0 == " " })
        while number.last == " " { number = number.dropLast() }
        // Double(_:) also reads "nan", "inf" and hexadecimal; only decimal digits are a size or a
        // duration a person types, and "inf" would otherwise read as "out of range".
        guard !number.isEmpty, number.allSatisfy({ "0123456789.+-eE".contains($0) }),
            let value = Double(number), !value.isNaN
        else { return nil }
        return (value, scale)
    }
}
