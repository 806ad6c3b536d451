import ShowbatchBasics
import ShowbatchManifest

/// Turns an HTTP answer into a result row: labels found by their paths, transformed, masked and
/// checked.
package enum Reveal {
    /// The row for a 2xx answer: labels extracted, transformed and masked.
    package static func row(ordinal: Int, request: String, status: Int, attempts: Int, body: [UInt8],
                           labels: [LabelBinding], sent: [UInt8]? = nil) -> ResultRow {
        rowAndFiles(ordinal: ordinal, request: request, status: status, attempts: attempts, body: body, labels: labels,
                    files: [], sent: sent).row
    }

    /// The row for a 2xx answer, and the decoded bytes of its binary labels with the files they
    /// go to (`files` holds each label's target, nil for text labels). A binary label's cell is
    /// its file's path; the caller writes the files before the row. `sent` is the request's JSON
    /// body: a label whose value is one of its strings was not revealed.
    package static func rowAndFiles(ordinal: Int, request: String, status: Int, attempts: Int, body: [UInt8],
                                   labels: [LabelBinding], files: [LabelFileTarget?],
                                   sent: [UInt8]? = nil) -> (row: ResultRow, files: [PendingLabelFile]) {
        var pending: [PendingLabelFile] = []
        var row = ResultRow(ordinal: ordinal, request: request, status: .failed, httpStatus: status, attempts: attempts,
                            labels: labels.map { ($0.name, nil) }, errors: [])
        if body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            row.errors = [RowError(code: .unexpectedResponseDataFormat, label: nil, message: "empty response body")]
            return (row, [])
        }
        let values: [JSONValue?]
        switch Self.values(at: labels, in: body) {
        case .success(let found): values = found
        case .failure(let error):
            row.errors = [error]
            return (row, [])
        }
        var missing = 0
        var unexpected = false
        var sentStrings: Set<String>?
        for (index, binding) in labels.enumerated() {
            guard let value = values[index], value != .null else {
                if binding.fromAlias {
                    // The Vault API's answer has no value for the alias: it was not revealed.
                    unexpected = true
                    row.errors.append(RowError(code: .notRevealed, label: binding.name,
                                               message: "label \(binding.name): not revealed: the Vault API's answer has no value for its alias"))
                    continue
                }
                missing += 1
                row.errors.append(RowError(code: .fieldNotFound, label: binding.name,
                                           message: "label \(binding.name): no value at \(binding.path.text)"))
                continue
            }
            if binding.mustReveal, let sent, case .string(let echoed) = value, !echoed.isEmpty {
                if sentStrings == nil { sentStrings = Self.strings(in: sent) }
                if sentStrings!.contains(echoed) {
                    unexpected = true
                    row.errors.append(RowError(code: .notRevealed, label: binding.name,
                                               message: "label \(binding.name): not revealed: the value is one the request sent (an unknown alias comes back unchanged)"))
                    continue
                }
            }
            if let spec = binding.file {
                switch Self.fileContent(of: value, binding: binding, spec: spec, target: index < files.count ? files[index] : nil) {
                case .success((let path, let bytes)):
                    row.labels[index].value = path
                    pending.append(PendingLabelFile(label: index, path: path, bytes: bytes))
                case .failure(let error):
                    missing += 1
                    row.errors.append(error)
                }
                continue
            }
            let text: String
            switch value {
            case .string(let string): text = string
            case .number(let number): text = number
            case .bool(let flag): text = flag ? "true" : "false"
            default: text = value.compactText
            }
            switch binding.checkedFormat(text) {
            case .success(let formatted) where Self.hasControlCharacters(formatted):
                // A NUL or an escape sequence would reach the processor's file and a terminal raw;
                // bytes belong in a binary label.
                unexpected = true
                row.errors.append(RowError(code: .controlCharacters, label: binding.name,
                                           message: "label \(binding.name): the value holds control characters (a binary value needs decode and file)"))
            case .success(let formatted):
                row.labels[index].value = formatted
            case .failure(let failure):
                // The value is not what the label expects (an alias the proxy did not know comes
                // back unchanged): the row fails, and the value is neither written nor quoted.
                unexpected = true
                row.errors.append(RowError(code: .unexpectedValue, label: binding.name,
                                           message: "label \(binding.name): the value \(failure.check)"))
            }
        }
        if unexpected {
            row.status = .failed
            return (row, [])
        }
        row.status = missing == 0 ? .ok : .partial
        return (row, pending)
    }
}

extension Reveal {
    /// The values at the labels' paths in a JSON body, or the row's error when it is not a JSON object.
    static func values(at labels: [LabelBinding], in body: [UInt8]) -> Result<[JSONValue?], RowError> {
        do {
            guard let found = try JSONParser.values(at: labels.map(\.path), in: body) else {
                return .failure(RowError(code: .responseInvalidJSON, label: nil, message: "response body is JSON but not an object"))
            }
            return .success(found)
        } catch where error.ambiguous {
            return .failure(RowError(code: .responseInvalidJSON, label: nil, message: "response body is ambiguous (\(error.reason) at byte \(error.offset))"))
        } catch {
            return .failure(RowError(code: .responseInvalidJSON, label: nil, message: "response body is not valid JSON (\(error.reason) at byte \(error.offset))"))
        }
    }

    /// A binary label's file: its path and decoded bytes, or the label's error.
    static func fileContent(of value: JSONValue, binding: LabelBinding, spec: LabelFileSpec,
                            target: LabelFileTarget?) -> Result<(path: String, bytes: [UInt8]), RowError> {
        switch target {
        case .path(let path)?:
            switch spec.content(of: value, label: binding) {
            case .success(let bytes): return .success((path, bytes))
            case .failure(let error): return .failure(error)
            }
        case .refused(let reason)?:
            return .failure(RowError(code: .fileRefused, label: binding.name, message: "label \(binding.name): \(reason)"))
        case nil:
            return .failure(RowError(code: .fileRefused, label: binding.name, message: "label \(binding.name): no file path"))
        }
    }
}

extension Reveal {
    /// The strings of a JSON body, at any depth (an unparsable body has none).
    static func strings(in body: [UInt8]) -> Set<String> {
        var found = Set<String>()
        func walk(_ value: JSONValue) {
            switch value {
            case .string(let text): found.insert(text)
            case .array(let items): items.forEach(walk)
            case .object(let members): members.forEach { walk($0.value) }
            default: break
            }
        }
        if let value = try? JSONParser.parse(body) { walk(value) }
        return found
    }

    /// True for C0 controls but tab, line feed and carriage return (which CSV quotes), DEL and C1.
    static func hasControlCharacters(_ text: String) -> Bool {
        text.unicodeScalars.contains { scalar in
            switch scalar.value {
            case 0x09, 0x0A, 0x0D: return false
            case 0..<0x20, 0x7F...0x9F: return true
            default: return false
            }
        }
    }
}

/// A binary label's decoded bytes, to be written to `path` (relative to the output's folder)
/// before the row that names it.
package struct PendingLabelFile: Sendable {
    /// The label's index in the row.
    package var label: Int
    /// The path relative to the output's folder; the cell's text.
    package var path: String
    /// The decoded bytes (a revealed value: never printed).
    package var bytes: [UInt8]
}
