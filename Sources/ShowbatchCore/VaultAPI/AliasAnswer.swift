import ShowbatchBasics

/// A Vault API call's answer, made into each row's own.
///
/// The API answers `{"data": {"ALIAS": {"value": "…", "aliases": […], …}, …}}`, an object keyed
/// by alias (an alias it does not know is not in it); a list of such records, each naming its
/// aliases in `aliases[].alias` or `aliases[].value`, is read too. A row's answer is
/// `{"LABEL": value, …}` for its aliases that are there, with the call's status and headers, so
/// its labels are found by their names; one not there fails the row (1408, `fromAlias`).
enum AliasAnswer {
    /// Row `aliases` (filling `labels`)'s share of the call's `result`: a 2xx is made the row's
    /// own answer; anything else (a 401, a 429, a 5xx, no answer) is the row's as it is.
    static func forRow(_ result: TransportResult, aliases: [String], labels: [String]) -> TransportResult {
        guard case .response(let status, let headers, let body) = result, (200..<300).contains(status) else { return result }
        guard let values = values(in: body) else {
            // Not the API's shape: the row sees it as it is, and fails on it as on any answer
            // its labels are not in.
            return result
        }
        var members: [JSONMember] = []
        for (alias, label) in zip(aliases, labels) where !members.contains(where: { $0.key == label }) {
            if let value = values[alias] { members.append(JSONMember(label, value)) }
        }
        var out: [UInt8] = []
        JSONValue.object(members).write(to: &out)
        return .response(status: status, headers: headers, body: out)
    }

    /// The revealed value of each alias in a 2xx body; nil when it is not the API's shape.
    static func values(in body: [UInt8]) -> [String: JSONValue]? {
        guard let root = try? JSONParser.parse(body), case .object(let members) = root,
              let data = members.first(where: { $0.key == "data" })?.value else { return nil }
        var values: [String: JSONValue] = [:]
        switch data {
        case .object(let records):
            for record in records {
                if let value = record.value["value"] { values[record.key] = value }
            }
        case .array(let records):
            for record in records {
                guard let value = record["value"], case .array(let names)? = record["aliases"] else { continue }
                for name in names {
                    if case .string(let alias)? = name["alias"] ?? name["value"] { values[alias] = value }
                }
            }
        default:
            return nil
        }
        return values
    }
}
