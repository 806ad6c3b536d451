import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

/// `count` bytes from the seeded generator.
func seededBytes(_ count: Int, seed: UInt64) -> [UInt8] {
    var generator = SeededGenerator(seed: seed)
    var bytes = [UInt8](repeating: 0, count: count)
    bytes.withUnsafeMutableBytes { out in
        var index = 0
        while index < count {
            var word = generator.next()
            let take = min(8, count - index)
            withUnsafeBytes(of: &word) { out.baseAddress!.advanced(by: index).copyMemory(from: $0.baseAddress!, byteCount: take) }
            index += take
        }
    }
    return bytes
}

/// The state key text: parsed as base64 of exactly 32 bytes; data keys wrapped under it for the
/// journal and unwrapped again only with the same state key and context.
@Suite struct KeyTests {
    static let stateKeyText = Data(seededBytes(32, seed: 1)).base64EncodedString()

    @Test(arguments: [
        stateKeyText,
        String(stateKeyText.dropLast()),
        "  " + stateKeyText + "\n",
    ])
    func stateKeysAreBase64OfThirtyTwoBytes(text: String) throws {
        let key = try StateKey(parsing: text)
        // Compared to a Bool first, so a failure prints no key bytes.
        let decoded = key.secret.withBytes { Array($0) == seededBytes(32, seed: 1) }
        #expect(decoded)
        #expect("\(key)" == "StateKey(hidden)")
    }

    @Test(arguments: [
        ("", "the state key is empty, not 32 bytes; make one with `openssl rand -base64 32`"),
        ("\n", "the state key is empty, not 32 bytes; make one with `openssl rand -base64 32`"),
        ("AAAAAAAAAAAAAAAAAAAAAA==", "the state key is 16 bytes long, not 32 bytes; make one with `openssl rand -base64 32`"),
        ("AA==", "the state key is 1 byte long, not 32 bytes; make one with `openssl rand -base64 32`"),
        (String(repeating: "A", count: 64), "the state key is 48 bytes long, not 32 bytes; make one with `openssl rand -base64 32`"),
        ("${SHOWBATCH_STATE_KEY}", "the state key is not base64 text; make one with `openssl rand -base64 32`"),
        (String(stateKeyText.dropLast(2)) + "-_", "the state key is not base64 text; make one with `openssl rand -base64 32`"),
        ("AAA", "the state key is 2 bytes long, not 32 bytes; make one with `openssl rand -base64 32`"),
        ("AAAAA", "the state key is not base64 text; make one with `openssl rand -base64 32`"),
        ("AAA==", "the state key is not base64 text; make one with `openssl rand -base64 32`"),
        ("AA AA", "the state key is not base64 text; make one with `openssl rand -base64 32`"),
    ])
    func otherStateKeysAreRefused(text: String, message: String) {
        #expect(throws: StateKeyError(message)) { try StateKey(parsing: text) }
    }

    @Test func aWrappedKeyUnwrapsToTheSameKey() throws {
        let stateKey = try StateKey(parsing: Self.stateKeyText)
        let key = DataKey.random()
        let wrapped = KeyWrap.wrap(key, under: stateKey, context: Array("out/cards.csv".utf8))
        #expect(wrapped.count == 84)
        let unwrapped = try KeyWrap.unwrap(wrapped, under: stateKey, context: Array("out/cards.csv".utf8))
        #expect(unwrapped.matches(key))
        #expect(!DataKey.random().matches(key))
        // Fresh nonce each time: the same key wraps to different text.
        #expect(KeyWrap.wrap(key, under: stateKey) != KeyWrap.wrap(key, under: stateKey))
        #expect("\(key)" == "DataKey(hidden)")
    }

    @Test func aWrongStateKeyOrContextDoesNotUnwrap() throws {
        let stateKey = try StateKey(parsing: Self.stateKeyText)
        let other = try StateKey(parsing: Data(seededBytes(32, seed: 2)).base64EncodedString())
        let wrapped = KeyWrap.wrap(DataKey.random(), under: stateKey, context: [1])
        let refusal = CryptoError(.wrappedKey, "the state key does not unwrap the data key: it is not the state key the run started with, or the wrapped key was changed")
        #expect(throws: refusal) { try KeyWrap.unwrap(wrapped, under: other, context: [1]) }
        #expect(throws: refusal) { try KeyWrap.unwrap(wrapped, under: stateKey, context: [2]) }
        var bytes = [UInt8](Data(base64Encoded: wrapped)!)
        bytes[30] ^= 1
        #expect(throws: refusal) { try KeyWrap.unwrap(Data(bytes).base64EncodedString(), under: stateKey, context: [1]) }
    }

    @Test func aDamagedOrForeignWrappedKeyIsRefused() throws {
        let stateKey = try StateKey(parsing: Self.stateKeyText)
        let wrapped = KeyWrap.wrap(DataKey.random(), under: stateKey)
        let damaged = CryptoError(.wrappedKey, "the wrapped data key is damaged (it is not 84 characters of base64)")
        #expect(throws: damaged) { try KeyWrap.unwrap(String(wrapped.dropLast(4)), under: stateKey) }
        #expect(throws: damaged) { try KeyWrap.unwrap("not*base64", under: stateKey) }
        var bytes = [UInt8](Data(base64Encoded: wrapped)!)
        bytes[0] = 7
        #expect(throws: CryptoError(.wrappedKey, "the wrapped data key is of version 7, which this showbatch cannot read")) {
            try KeyWrap.unwrap(Data(bytes).base64EncodedString(), under: stateKey)
        }
    }
}
