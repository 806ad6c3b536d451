import Foundation
import ShowbatchBasics
import ShowbatchManifest
#if canImport(Glibc)
import Glibc
#endif

/// `showbatch deliver --check`: tries each delivery target of a manifest as a delivery would,
/// before the first night goes there, with no card data: connect, check the host key against
/// known_hosts, log in, list the folder, write a probe file, see it in the listing, remove it.
package enum DeliveryCheck {
    /// One target's check: the steps that went through, in words, and the failure that stopped it.
    package struct Result: Sendable {
        package var destination: String
        package var steps: [String] = []
        package var failure: String?
        /// The failure is one only a person fixes (exit 6), not one a later try may not have (5).
        package var needsPerson = false
        /// A signal cut the check short (exit 130).
        package var interrupted = false
    }

    /// Checks every distinct target of `manifest`'s outputs with `output.deliver`; `step` is
    /// told each step as it goes through. Refused (exit 2) when no output delivers.
    package static func run(manifest: Manifest, step: (String, String) -> Void = { _, _ in },
                            isCancelled: @escaping @Sendable () -> Bool = { false }) throws(RunError) -> [Result] {
        var specs: [DeliverSpec] = []
        for spec in ([manifest.output] + manifest.requests.map(\.output)).compactMap({ $0?.deliver }) where !specs.contains(spec) {
            specs.append(spec)
        }
        guard !specs.isEmpty else { throw RunError.usage(DeliveryError.nothingToDeliver(manifest: manifest.file, checking: true)) }
        return specs.map { check($0, timeout: manifest.timeout, step: step, isCancelled: isCancelled) }
    }

    private static func check(_ spec: DeliverSpec, timeout: Duration, step: (String, String) -> Void,
                              isCancelled: @escaping @Sendable () -> Bool) -> Result {
        let destination = spec.destination.description
        var result = Result(destination: destination)
        func said(_ text: String) {
            result.steps.append(text)
            step(destination, text)
        }
        do throws(DeliveryFailure) {
            let client = try SFTPClient(spec: spec, timeout: timeout, isCancelled: isCancelled)
            let probe = ".showbatch-check-\(RunOptions.newRunID())"
            let before = try client.list { _ in true }
            said("connected to \(spec.destination.hostForURL):\(spec.destination.port), its host key is in \(spec.knownHosts), logged in as \(spec.user) with \(spec.keyFile)")
            said("the folder lists (\(before.count) entr\(before.count == 1 ? "y" : "ies"))")
            let content = Array("showbatch deliver --check: no card data\n".utf8)
            var fds: [Int32] = [0, 0]
            guard pipe(&fds) == 0 else { throw DeliveryFailure("cannot make a pipe: \(describeErrno(errno))", .retry) }
            _ = content.withUnsafeBytes { write(fds[1], $0.baseAddress, $0.count) }
            close(fds[1])
            defer { close(fds[0]) }
            try client.upload(fds[0], size: content.count, as: probe)
            let written = try client.list { $0 == probe }[probe]
            guard let written, written.kind == .regular, written.size == content.count else {
                try? client.remove(probe)
                throw DeliveryFailure("wrote \(probe), and the listing shows it \(written.map { $0.kind == .regular ? "with \($0.size) bytes, not \(content.count)" : "not a regular file" } ?? "not there"): the server does not keep what is written", .person)
            }
            said("wrote \(probe) (\(content.count) bytes; the listing shows it whole)")
            try client.remove(probe)
            guard try client.list({ $0 == probe })[probe] == nil else {
                throw DeliveryFailure("cannot remove \(probe): it is still listed (remove it by hand)", .person)
            }
            said("removed \(probe): a night can be delivered here")
        } catch {
            result.failure = error.message
            result.needsPerson = error.kind == .person
            result.interrupted = error.kind == .interrupted
        }
        return result
    }
}
