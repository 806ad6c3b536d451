import Foundation
import ShowbatchBasics
import ShowbatchManifest

/// Whom an OpenPGP message is encrypted to, read from its first packets (RFC 9580 5.1): the key
/// ID of each public-key encrypted session key packet before the encrypted data. What GnuPG
/// wrote is checked against the pinned recipients, since a gpg.conf or a `group` line can add one
/// that GPGME never reports.
enum MessageRecipients {
    /// What the start of a message says of its recipients.
    enum Reading: Equatable {
        /// The key IDs (16 upper-case hex digits) it is encrypted to, in order.
        case keys([String])
        /// It can also be opened with a passphrase (a symmetric-key session key packet).
        case passphrase
        /// Its start is not a message this reading understands, or is cut short.
        case unreadable
    }

    /// Reads `head`, the first bytes of a message (binary, or ASCII-armored when `armored`).
    static func read(_ head: [UInt8], armored: Bool) -> Reading {
        guard let bytes = armored ? dearmor(head) : head else { return .unreadable }
        var keys: [String] = []
        var at = 0
        while at < bytes.count {
            guard let (tag, body) = packet(bytes, at: &at) else { return .unreadable }
            switch tag {
            case 1:
                guard let id = keyID(bytes[body]) else { return .unreadable }
                keys.append(id)
            case 3:
                return .passphrase
            case _ where dataTags.contains(tag):
                // The encrypted data: every recipient was named before it.
                return keys.isEmpty ? .unreadable : .keys(keys)
            default:
                return .unreadable
            }
        }
        return .unreadable
    }

    /// Packet tags of the encrypted data (SED, SEIPD, AEAD), which come after every recipient.
    private static let dataTags: Set<Int> = [9, 18, 20]

    /// The tag and body of the packet at `at` (advanced past it); nil when it is not whole in
    /// `bytes`. Of an encrypted data packet only the tag is read (its body need not be here, and
    /// its length may be partial), and `at` goes to the end.
    private static func packet(_ bytes: [UInt8], at: inout Int) -> (Int, Range<Int>)? {
        let first = bytes[at]
        guard first & 0x80 != 0 else { return nil }
        let newFormat = first & 0x40 != 0
        let tag = newFormat ? Int(first & 0x3F) : Int((first >> 2) & 0x0F)
        if dataTags.contains(tag) {
            at = bytes.count
            return (tag, at..<at)
        }
        var next = at + 1
        func bigEndian(_ count: Int) -> Int? {
            guard next + count <= bytes.count else { return nil }
            defer { next += count }
            return bytes[next..<(next + count)].reduce(0) { $0 << 8 | Int($1) }
        }
        let length: Int
        if newFormat {
            guard let o1 = bigEndian(1) else { return nil }
            switch o1 {
            case 0..<192: length = o1
            case 192..<224:
                guard let o2 = bigEndian(1) else { return nil }
                length = (o1 - 192) << 8 + o2 + 192
            case 255:
                guard let value = bigEndian(4) else { return nil }
                length = value
            default:
                // A partial length: only data packets have one.
                return nil
            }
        } else {
            // One, two or four length bytes; 3 is an indeterminate length, data packets' only.
            guard first & 0x03 != 3, let value = bigEndian([1, 2, 4][Int(first & 0x03)]) else { return nil }
            length = value
        }
        guard next + length <= bytes.count else { return nil }
        at = next + length
        return (tag, next..<(next + length))
    }

    /// The key ID of a public-key encrypted session key packet's body: version 3 names it; version 6
    /// names the key's fingerprint, whose key ID is its last 8 bytes (v4) or first 8 (v6).
    private static func keyID(_ body: ArraySlice<UInt8>) -> String? {
        let body = Array(body)
        guard let version = body.first else { return nil }
        let id: ArraySlice<UInt8>
        switch version {
        case 3:
            guard body.count >= 9 else { return nil }
            id = body[1..<9]
        case 6:
            guard body.count >= 2, body[1] > 0, body.count >= 2 + Int(body[1]) else { return nil }
            let fingerprint = body[3..<(2 + Int(body[1]))]
            switch body[2] {
            case 4 where fingerprint.count == 20: id = fingerprint.suffix(8)
            case 6 where fingerprint.count == 32: id = fingerprint.prefix(8)
            default: return nil
            }
        default:
            return nil
        }
        return id.map { String(format: "%02X", $0) }.joined()
    }

    /// The bytes of an ASCII-armored message's first whole lines (RFC 9580 6.2).
    private static func dearmor(_ head: [UInt8]) -> [UInt8]? {
        let lines = String(decoding: head, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.hasSuffix("\r") ? $0.dropLast() : $0 }
        guard let begin = lines.firstIndex(where: { $0 == "-----BEGIN PGP MESSAGE-----" }) else { return nil }
        var index = begin + 1
        // Armor headers, up to an empty line.
        while index < lines.count && !lines[index].isEmpty { index += 1 }
        index += 1
        var text = ""
        // The last line may be cut short: only lines followed by another are taken.
        while index < lines.count - 1, !lines[index].hasPrefix("="), !lines[index].hasPrefix("-") {
            text += lines[index]
            index += 1
        }
        text = String(text.prefix(text.count / 4 * 4))
        return Data(base64Encoded: text).map { Array($0) }
    }
}
