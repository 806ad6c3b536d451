import Foundation
import ShowbatchBasics
import ShowbatchManifest

/// What a terminal is shown of a row: control bytes escaped.
extension OutputFile {
    /// `bytes` with C0 controls but tab and line feed, DEL and C1 controls written as `\u{…}`, so
    /// that a cell cannot drive the terminal that shows it.
    static func escapedForTerminal(_ bytes: [UInt8]) -> [UInt8] {
        func isC1(_ index: Int) -> Bool {
            bytes[index] == 0xC2 && index + 1 < bytes.count && (0x80...0x9F).contains(bytes[index + 1])
        }
        // A CRLF line ending is a line ending; a lone CR could draw over what was printed.
        func isControl(_ index: Int) -> Bool {
            let byte = bytes[index]
            if byte == 0x0D { return !(index + 1 < bytes.count && bytes[index + 1] == 0x0A) }
            return (byte < 0x20 && byte != 0x09 && byte != 0x0A) || byte == 0x7F
        }
        guard bytes.indices.contains(where: { isControl($0) || isC1($0) }) else { return bytes }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + 16)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if isControl(index) {
                out.append(contentsOf: Array("\\u{\(String(byte, radix: 16, uppercase: true))}".utf8))
            } else if isC1(index) {
                out.append(contentsOf: Array("\\u{\(String(bytes[index + 1], radix: 16, uppercase: true))}".utf8))
                index += 1
            } else {
                out.append(byte)
            }
            index += 1
        }
        return out
    }
}
