import ShowbatchBasics
internal import CCurl
import ShowbatchManifest

// libcurl calls these on the loop thread, from inside curl_multi_perform, with the transfer that
// `CurlHandles.start` registered as WRITEDATA/HEADERDATA.

/// Appends body bytes, refusing a body past the limit (curl then ends the transfer).
let curlWriteBody: sb_data_callback = { data, size, count, context in
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context!).takeUnretainedValue()
    return appendBody(data, size * count, to: &transfer.body, limit: transfer.limit, tooLarge: &transfer.tooLarge)
}

/// What a body callback does (the engine's and the metrics push's): appends the `length` bytes
/// at `data` to `bytes`, or, when they would take it past `limit`, notes it as too large and
/// returns 0, which makes curl end the transfer.
@inline(__always)
func appendBody(_ data: UnsafeMutablePointer<CChar>?, _ length: Int, to bytes: inout [UInt8], limit: Int, tooLarge: inout Bool) -> Int {
    if bytes.count + length > limit {
        tooLarge = true
        return 0
    }
    data!.withMemoryRebound(to: UInt8.self, capacity: length) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: $0, count: length))
    }
    return length
}

/// Keeps the response headers the engine reads (`retry-after` and the rate-limit fields,
/// lower-cased); a new status line starts a new set. Works on the bytes, and most answers
/// allocate nothing here: this runs for every header line of every answer.
let curlWriteHeader: sb_data_callback = { data, size, count, context in
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context!).takeUnretainedValue()
    let length = size * count
    data!.withMemoryRebound(to: UInt8.self, capacity: length) { pointer in
        let line = UnsafeBufferPointer(start: pointer, count: length)
        if length >= 5, line[0] == UInt8(ascii: "H"), line[1] == UInt8(ascii: "T"), line[2] == UInt8(ascii: "T"),
           line[3] == UInt8(ascii: "P"), line[4] == UInt8(ascii: "/") {
            if !transfer.headers.isEmpty { transfer.headers.removeAll() }
            return
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")),
              let name = keptHeader(UnsafeBufferPointer(rebasing: line[..<colon])) else { return }
        var start = colon + 1
        var end = length
        while start < end, line[start] == 0x20 || line[start] == 0x09 { start += 1 }
        while end > start, line[end - 1] == 0x0A || line[end - 1] == 0x0D || line[end - 1] == 0x20 { end -= 1 }
        transfer.headers[name] = String(decoding: UnsafeBufferPointer(rebasing: line[start..<end]), as: UTF8.self)
    }
    return length
}

/// The name of a response header the engine reads, when `name` (any case) is one.
func keptHeader(_ name: UnsafeBufferPointer<UInt8>) -> String? {
    switch name.count {
    case 11: return asciiLowercaseEquals(name, "retry-after") ? "retry-after" : nil
    case 15: return asciiLowercaseEquals(name, "ratelimit-reset") ? "ratelimit-reset" : nil
    case 17: return asciiLowercaseEquals(name, "x-ratelimit-reset") ? "x-ratelimit-reset" : nil
    case 19: return asciiLowercaseEquals(name, "ratelimit-remaining") ? "ratelimit-remaining" : nil
    case 21: return asciiLowercaseEquals(name, "x-ratelimit-remaining") ? "x-ratelimit-remaining" : nil
    default: return nil
    }
}

/// Whether `bytes`, lower-cased (ASCII), are `lowercase`; compares in place.
func asciiLowercaseEquals(_ bytes: UnsafeBufferPointer<UInt8>, _ lowercase: StaticString) -> Bool {
    guard bytes.count == lowercase.utf8CodeUnitCount else { return false }
    let expected = lowercase.utf8Start
    for index in 0..<bytes.count {
        let byte = bytes[index]
        if (byte >= 65 && byte <= 90 ? byte + 32 : byte) != expected[index] { return false }
    }
    return true
}
