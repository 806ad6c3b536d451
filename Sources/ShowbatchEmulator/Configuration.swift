import Foundation
import ShowbatchCore

/// Settings of an emulator: what it reveals and which faults it injects.
public struct EmulatorConfiguration: Sendable {
    /// Port to bind on 127.0.0.1; 0 picks a free one.
    public var port = 0
    /// Alias → revealed value.
    public var aliases: [String: String] = [:]
    /// Custom hostname → vault, answered by the hostname check endpoint.
    public var cnames: [String: String] = [:]
    /// The faults it injects.
    public var faults = EmulatorFaults()
    /// Largest request head accepted (431 past it).
    public var maxHeaderBytes = 16 * 1024
    /// Largest request body accepted (413 past it).
    public var maxBodyBytes = 8 * 1024 * 1024

    /// The default configuration: no faults, no aliases.
    public init() {}

    /// Aliases revealed when a manifest has no `emulator:` section (those of the samples).
    public static let sampleAliases: [String: String] = [
        "tok_sandbox_abc": "4111111111111111",
        "tok_sandbox_def": "01/2030",
        "tok_sandbox_5FvQ8mGm7Xt1": "4111111111111111",
        "tok_sandbox_9sYzKc3vB2wq": "12/2030",
        "tok_sandbox_Hd8f3LkQ2mZp": "5555555555554444",
        "tok_sandbox_Lq2Vn8Rt4sXa": "01/2029",
        "tok_sandbox_Pz7Yc1Wb6eKd": "Ada Lovelace",
    ]

    /// The configuration a manifest's `emulator:` section asks for (aliases loaded from a file if named).
    public init(spec: EmulatorSpec?) throws(EmulatorError) {
        self.init()
        guard let spec else {
            aliases = EmulatorConfiguration.sampleAliases
            return
        }
        switch spec.aliases {
        case .inline(let table)?: aliases = table
        case .file(let path)?: aliases = try AliasFile.load(path: path)
        case nil: aliases = EmulatorConfiguration.sampleAliases
        }
        faults = spec.faults
    }
}

/// A problem starting the emulator or reading its alias file.
public struct EmulatorError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public let message: String

    /// The message.
    public var description: String { message }
}

/// Reads alias files: CSV `alias,value` with a header line, or a JSON object.
public enum AliasFile {
    /// The alias table in `path`; the error names the file and line, never a value.
    public static func load(path: String) throws(EmulatorError) -> [String: String] {
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
            guard let header = try reader.next() else { return [:] }
            guard header.fields.count == 2 else {
                throw EmulatorError(message: "\(path):\(header.line): expected a header of two columns, alias,value")
            }
            var table: [String: String] = [:]
            while let record = try reader.next() {
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

