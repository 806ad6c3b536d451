import Foundation
import ShowbatchBasics

/// The Vault API's reveal of many aliases: `GET /aliases?aliases=a,b` (v2) or `?q=a,b` (v1),
/// answered `{"data": {"ALIAS": {"value": …, "aliases": [{"value": ALIAS, "format": …}], …}}}`
/// for the aliases it knows (an unknown one is not in it), 400 for more than 20 values or one
/// that is not an alias, and with a window limit `x-ratelimit-remaining` only, as VGS sends it.
extension Emulator {
    /// The most values a call may ask for.
    static let vaultAPIValueLimit = 20

    /// Whether `request` is a Vault API reveal.
    static func isVaultAPI(_ request: HTTPRequest) -> Bool {
        request.method == "GET" && (request.path.hasPrefix("/aliases?aliases=") || request.path.hasPrefix("/aliases?q="))
    }

    /// Whether `request` carries the HTTP Basic credentials v1 is configured with (any, when none is).
    func acceptsBasic(_ request: HTTPRequest) -> Bool {
        guard let basic = configuration.basic else { return true }
        return request.header("authorization") == "Basic " + Data("\(basic.username):\(basic.password)".utf8).base64EncodedString()
    }

    /// The answer to a Vault API reveal; `limitHeaders` are the window limit's.
    func vaultAPIAnswer(_ request: HTTPRequest, close: Bool, limitHeaders: [(String, String)]) -> HTTPResponse {
        let query = request.path.split(separator: "?", maxSplits: 1).last.map(String.init) ?? ""
        var aliases: [String] = []
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, parts[0] == "aliases" || parts[0] == "q" else { continue }
            let list = String(parts[1]).removingPercentEncoding ?? ""
            aliases += list.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        }
        func refused(_ detail: String) -> HTTPResponse {
            let error = JSONValue.object([JSONMember("status", .number("400")), JSONMember("title", .string("Bad Request")),
                                          JSONMember("detail", .string(detail))])
            var body: [UInt8] = []
            JSONValue.object([JSONMember("errors", .array([error]))]).write(to: &body)
            var response = HTTPResponse(status: 400, contentType: "application/json", body: body, close: close)
            response.extraHeaders += limitHeaders
            return response
        }
        if aliases.count > Self.vaultAPIValueLimit { return refused("Too many values (limit: \(Self.vaultAPIValueLimit))") }
        let fit = { (alias: String) in
            !alias.isEmpty && alias.utf8.allSatisfy { byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                    || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
            }
        }
        if aliases.isEmpty || !aliases.allSatisfy(fit) { return refused("Invalid alias") }
        var data: [JSONMember] = []
        for alias in aliases where !data.contains(where: { $0.key == alias }) {
            guard let value = configuration.aliases[alias] else { continue }
            data.append(JSONMember(alias, .object([
                JSONMember("value", .string(value)),
                JSONMember("classifiers", .array([])),
                JSONMember("aliases", .array([.object([JSONMember("value", .string(alias)), JSONMember("format", .string("UUID"))])])),
                JSONMember("created_at", .string("2026-01-01T00:00:00Z")),
                JSONMember("storage", .string("PERSISTENT")),
            ])))
        }
        var body: [UInt8] = []
        JSONValue.object([JSONMember("data", .object(data))]).write(to: &body)
        var response = HTTPResponse(status: 200, contentType: "application/json", body: body, close: close)
        response.extraHeaders += limitHeaders
        return response
    }
}
