/// A token schedule shared by every attempt of a run: one start per `rate.spacing`.
actor RateLimiter {
    private let spacing: Duration
    private var next = ContinuousClock.now

    init(rate: Rate) { spacing = rate.spacing }

    /// Waits for this attempt's slot.
    func reserve() -> ContinuousClock.Instant {
        let now = ContinuousClock.now
        let slot = max(now, next)
        next = slot + spacing
        return slot
    }
}
