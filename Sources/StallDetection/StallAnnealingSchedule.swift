/// When to re-capture an ongoing stall, on the stall-age axis (seconds, stopped time excluded).
///
/// With annealing the gaps are `unit` × 1, 1, 2, 3, 5, 8 … (Fibonacci) from `base`, so a stall
/// detected at age T with unit T is re-captured at ages 2T, 3T, 5T, 8T, 13T, 21T …: frequent
/// while it is young, rare once it is clearly stuck in one place. Without annealing every gap
/// is one `unit`. `restart(at:)` begins the sequence again from a new base, which the detector
/// does when the heaviest stack changes.
public struct StallAnnealingSchedule: Hashable, Sendable {
    public let unit: Double
    public let fibonacci: Bool
    /// Age of the next re-capture.
    public private(set) var nextAge: Double
    private var gap: Double
    private var following: Double

    /// Tolerance for ages built by summing: 2.0 reached as 1.9999999999 still counts as due.
    static let epsilon = 1e-9

    public init(base: Double, unit: Double, fibonacci: Bool) {
        self.unit = max(unit, 1e-6)  // a zero unit would never advance
        self.fibonacci = fibonacci
        self.gap = 1
        self.following = 1
        self.nextAge = base + self.unit
    }

    public func isDue(atAge age: Double) -> Bool {
        age + Self.epsilon >= nextAge
    }

    /// Moves past every re-capture due by `age` (a late probe may skip several; one capture
    /// covers them all). Returns whether any was due.
    @discardableResult
    public mutating func advance(pastAge age: Double) -> Bool {
        var due = false
        while isDue(atAge: age) {
            due = true
            if fibonacci {
                (gap, following) = (following, gap + following)
            }
            nextAge += unit * gap
        }
        return due
    }

    public mutating func restart(at age: Double) {
        self = StallAnnealingSchedule(base: age, unit: unit, fibonacci: fibonacci)
    }

    /// The next `count` re-capture ages from now, for logs and tests.
    public func upcomingAges(_ count: Int) -> [Double] {
        var copy = self
        var ages: [Double] = []
        for _ in 0..<max(0, count) {
            ages.append(copy.nextAge)
            copy.advance(pastAge: copy.nextAge)
        }
        return ages
    }
}
