import Foundation

/// Everything an attempt needs, shared by the tasks of a run.
struct AttemptContext: Sendable {
    let transport: any Transport
    let policy: RetryPolicy
    let timeout: Duration
    let limiter: RateLimiter?
    let events: @Sendable (RunEvent) -> Void
    let verbose: Bool

    /// Sends with retries; nil when the run was cancelled before the row was finished. With
    /// `revealLater` a 2xx answer comes back as it is, for the writer to extract its labels.
    func perform(_ request: PreparedRequest, ordinal: Int, labels: [LabelBinding], revealLater: Bool) async -> FinishedRow? {
        var random = SeededGenerator(seed: UInt64(ordinal) &* 0x9E3779B97F4A7C15 &+ 1)
        var attempt = 0
        while true {
            attempt += 1
            if let limiter {
                let slot = await limiter.reserve()
                do { try await Task.sleep(until: slot, clock: .continuous) } catch { return nil }
            }
            if Task.isCancelled { return nil }
            let began = verbose ? ContinuousClock.now : nil
            let result = await transport.send(request, timeout: timeout)
            if verbose, let began {
                var record = AttemptRecord(request: request.name, method: request.method.rawValue, url: request.url,
                                           attempt: attempt, status: nil, failure: nil, duration: ContinuousClock.now - began)
                switch result {
                case .response(let status, _, _): record.status = status
                case .failure(let failure): record.failure = Runner.describe(failure)
                }
                events(.attempt(record))
            }
            let canRetry = attempt < policy.attempts
            var retryAfter: Duration?
            switch result {
            case .failure(.cancelled):
                return nil
            case .response(let status, _, let body) where (200..<300).contains(status):
                let answer = FinishedRow.Answer(ordinal: ordinal, request: request.name, status: status, attempts: attempt,
                                                body: body, labels: labels)
                return revealLater ? .answer(answer) : .row(answer.revealed())
            case .response(let status, let headers, _):
                if !(canRetry && policy.statuses.contains(status)) {
                    let error = status == 429
                        ? RowError(code: .rateLimited, label: nil, message: "HTTP 429 after \(attempt) attempt\(attempt == 1 ? "" : "s")")
                        : RowError(code: .httpStatus, label: nil, message: "HTTP \(status)")
                    return .row(failed(request, ordinal, labels, status: status, attempts: attempt, error))
                }
                retryAfter = headers["retry-after"].flatMap(AttemptContext.parseRetryAfter)
            case .failure(.timeout):
                if !(canRetry && policy.timeout) {
                    return .row(failed(request, ordinal, labels, status: nil, attempts: attempt,
                                  RowError(code: .timeout, label: nil, message: "no answer within \(Units.text(timeout))")))
                }
            case .failure(.network(let detail)):
                if !(canRetry && policy.network) {
                    return .row(failed(request, ordinal, labels, status: nil, attempts: attempt,
                                  RowError(code: .network, label: nil, message: detail)))
                }
            case .failure(.notHTTP(let detail)):
                return .row(failed(request, ordinal, labels, status: nil, attempts: attempt,
                              RowError(code: .unexpectedResponseType, label: nil, message: detail)))
            case .failure(.bodyTooLarge(let limit)):
                return .row(failed(request, ordinal, labels, status: nil, attempts: attempt,
                              RowError(code: .unexpectedResponseDataFormat, label: nil, message: "response body is over \(limit >> 20) MiB")))
            }
            // Capped exponential backoff with full jitter, unless the server said when.
            let cap = min(policy.maxBackoff.seconds, policy.backoff.seconds * pow(2, Double(attempt - 1)))
            let delay = retryAfter ?? Units.seconds(random.unit() * cap)
            do { try await Task.sleep(for: delay) } catch { return nil }
        }
    }

    private func failed(_ request: PreparedRequest, _ ordinal: Int, _ labels: [LabelBinding], status: Int?, attempts: Int,
                        _ error: RowError) -> ResultRow {
        ResultRow(ordinal: ordinal, request: request.name, status: .failed, httpStatus: status, attempts: attempts,
                  labels: labels.map { ($0.name, nil) }, errors: [error])
    }

    /// `Retry-After` as seconds or an HTTP date, capped at ten minutes.
    static func parseRetryAfter(_ text: String) -> Duration? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let seconds = Double(trimmed), seconds >= 0 { return Units.seconds(min(seconds, 600)) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: trimmed) else { return nil }
        return Units.seconds(min(max(0, date.timeIntervalSinceNow), 600))
    }
}
