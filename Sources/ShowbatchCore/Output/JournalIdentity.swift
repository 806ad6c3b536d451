import Foundation

// What a journal is valid for. A resumed run must write the same bytes as an uninterrupted one,
// so the journal names what shapes the rows, and nothing else: a run that only changes its pace
// (concurrency, rate limit, timeout, backoff, transport) or its credentials goes on from it.
extension Manifest {
    /// A hash of what in the manifest shapes rows: where requests go, what they send, how answers
    /// become rows and columns, and which failures are retried and how often. Not the run's
    /// timing, the transport, the emulator section or any header value (a renewed token changes
    /// no row, and a journal holds no secret, not even hashed).
    package var rowIdentity: UInt64 {
        var text = "vault=\(vault)\nenvironment=\(environment)\nregion=\(dataRegion ?? "")\nroute=\(routeID ?? "")\n"
        text += "hostname=\(hostname ?? "")\nsatellite=\(satellitePort.map(String.init) ?? "")\n"
        text += "headers=\(headers.map { $0.name.lowercased() }.sorted())\n"
        text += "retry=\(retry.attempts) \(retry.statuses.sorted()) \(retry.network) \(retry.timeout)\n"
        text += "output=\(output.map(Self.describe) ?? "")\n"
        for request in requests {
            text += "request name=\(request.name.parts) path=\(request.path.parts) method=\(request.method.rawValue)\n"
            text += "  headers=\(request.headers.map { $0.name.lowercased() }.sorted())\n"
            if let payload = request.payload {
                var bytes: [UInt8] = []
                payload.write(row: nil, to: &bytes)
                text += "  payload=\(String(decoding: bytes, as: UTF8.self)) \(payload.templates.map(\.parts))\n"
            }
            for label in request.labels {
                let transforms = label.transforms.map { "\($0.pattern)→\($0.template)" }
                let mask = label.mask.map { "\($0.ranges.map { "\($0.start ?? -1)...\($0.end ?? -1)" }) \($0.symbol.map(String.init) ?? "")" } ?? "none"
                text += "  label \(label.name)=\(label.path.text) \(transforms) \(mask)\n"
            }
            if let each = request.each { text += "  each=\(each.kind) \(each.name)\n" }
            if let output = request.output { text += "  output=\(Self.describe(output))\n" }
        }
        return fnv1a(Array(text.utf8))
    }

    private static func describe(_ output: OutputSpec) -> String {
        "\(output.path) \(output.format?.rawValue ?? "") \(output.escapeFormulas)"
    }

    /// A hash of every data file's content, so that a journal is never used with a data file
    /// that changed since.
    package func dataHash() throws(RunError) -> UInt64 {
        var hash = fnvOffsetBasis
        for spec in requests {
            guard let each = spec.each else { continue }
            guard let handle = FileHandle(forReadingAtPath: each.path) else {
                throw RunError.runtime("cannot read the data file \(each.name)")
            }
            defer { try? handle.close() }
            do {
                while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
                    hash = chunk.withUnsafeBytes { fnv1a($0, seed: hash) }
                }
            } catch {
                throw RunError.runtime("cannot read the data file \(each.name)")
            }
        }
        return hash
    }
}
