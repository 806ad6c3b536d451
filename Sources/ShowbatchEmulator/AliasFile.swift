import Foundation
import ShowbatchBasics
import ShowbatchManifest

/// Reads alias files: CSV `alias,value` lines (a first line `alias,value` is its header, any other
/// first line an alias of its own), or a JSON object.
package enum AliasFile {
    /// The alias table in `path`; the error names the file and line, never a value.
    package static func load(path: String) throws(EmulatorError) -> [String: String] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw EmulatorError(message: "\(path): cannot be read")
        }
        let firstByte = data.first { !($0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09) }
        if firstByte == UInt8(ascii: "{") {
            guard case .object(let members)? = try? JSONParser.parse(data) else {
                throw EmulatorError(message: "\(path): is not a JSON object of alias to value")
            }
            var table: [String: String] = [:]
            for member in members {
                switch member.value {
                case .string(let text): table[member.key] = text
                case .number(let text): table[member.key] = text
                default: throw EmulatorError(message: "\(path): the value of alias \"\(member.key)\" is not a string")
                }
            }
            return table
        }
        do {
            var reader = try CSVRecordReader(path: path, name: path)
            defer { reader.close() }
            var table: [String: String] = [:]
            var first = true
            while let record = try reader.next() {
                // The header is read as one only when it says so: a file of aliases alone keeps its first.
                if first {
                    first = false
                    if record.fields.map({ $0.trimmingCharacters(in: .whitespaces).lowercased() }) == ["alias", "value"] { continue }
                }
                guard record.fields.count == 2 else {
                    throw EmulatorError(message: "\(path):\(record.line): expected 2 fields, alias,value; found \(record.fields.count)")
                }
                table[record.fields[0]] = record.fields[1]
            }
            return table
        } catch let error as EmulatorError {
            throw error
        } catch {
            throw EmulatorError(message: "\(error)")
        }
    }
}
