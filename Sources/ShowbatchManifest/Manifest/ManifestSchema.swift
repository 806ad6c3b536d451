import ShowbatchBasics

/// `showbatch schema`: a JSON Schema (draft 2020-12) of the manifest, made from the reference's
/// entries (the same declarations as the reference table in docs/manifest.md and the decoder's known keys), for an
/// editor's YAML language server. A mapping whose keys the reference lists refuses others; a
/// value that may use `${NAME}` (any scalar) is not held to its type beyond being a scalar.
package enum ManifestSchema {
    /// The schema as one JSON object.
    package static var json: JSONValue {
        var root = object(under: "", description: "A showbatch manifest.")
        root = prepend([JSONMember("$schema", .string("https://json-schema.org/draft/2020-12/schema")),
                        JSONMember("$id", .string("https://showbatch.invalid/manifest.schema.json")),
                        JSONMember("title", .string("showbatch manifest"))], to: root)
        return root
    }

    private static func prepend(_ members: [JSONMember], to value: JSONValue) -> JSONValue {
        guard case .object(let existing) = value else { return value }
        return .object(members + existing)
    }

    private static var entries: [ManifestReference.Entry] { ManifestReference.entries }

    /// The entries right under `parent` (`""` for the top): their last segment and the entry.
    private static func children(of parent: String) -> [(key: String, entry: ManifestReference.Entry)] {
        let prefix = parent.isEmpty ? "" : parent + "."
        return entries.compactMap { entry in
            guard entry.path.hasPrefix(prefix) else { return nil }
            let rest = entry.path.dropFirst(prefix.count)
            guard !rest.isEmpty, !rest.contains("."), !rest.hasSuffix("[]") || rest.count > 2 else { return nil }
            return (String(rest), entry)
        }
    }

    /// The schema of the mapping at `path`: its listed keys, and no others.
    private static func object(under path: String, description: String) -> JSONValue {
        var properties: [JSONMember] = []
        var named: JSONValue?
        for (key, entry) in children(of: path) {
            if key == "<name>" {
                named = schema(of: entry)
            } else {
                properties.append(JSONMember(key, schema(of: entry)))
            }
        }
        var members = [JSONMember("type", .string("object")), JSONMember("description", .string(description))]
        if !properties.isEmpty { members.append(JSONMember("properties", .object(properties))) }
        // Keys the manifest names (`labels.<name>`), described by what may be under each.
        if named == nil, entries.contains(where: { $0.path.hasPrefix((path.isEmpty ? "" : path + ".") + "<name>.") }) {
            let each = path + ".<name>"
            named = .object([JSONMember("anyOf", .array([.object([JSONMember("type", .string("string"))]), object(under: each, description: "one of \(path)")]))])
        }
        if let named {
            members.append(JSONMember("additionalProperties", named))
        } else if !properties.isEmpty {
            members.append(JSONMember("additionalProperties", .bool(false)))
        }
        return .object(members)
    }

    /// Any scalar: a value may be `${NAME}`, which only the run resolves.
    private static let scalar: JSONValue = .object([JSONMember("type", .array([.string("string"), .string("number"), .string("integer"), .string("boolean")]))])

    /// The schema of one entry, by its type and what is listed under it.
    private static func schema(of entry: ManifestReference.Entry) -> JSONValue {
        let path = entry.path
        let description = JSONMember("description", .string(entry.meaning))
        // Sections whose shape is the output's or a label's: written once each.
        if path == "requests[].output" { return object(under: "output", description: entry.meaning) }
        let type = entry.type
        if type == "mapping" {
            // A mapping of names the manifest chooses (headers, payload, aliases): any values.
            if children(of: path).isEmpty && !entries.contains(where: { $0.path.hasPrefix(path + ".<name>.") }) {
                return .object([JSONMember("type", .string("object")), description])
            }
            return object(under: path, description: entry.meaning)
        }
        if type == "list" {
            let items: JSONValue = children(of: path + "[]").isEmpty ? .object([]) : object(under: path + "[]", description: entry.meaning)
            return .object([JSONMember("type", .string("array")), JSONMember("items", items), description])
        }
        if type == "boolean or mapping" || type == "mapping or path" {
            return .object([JSONMember("anyOf", .array([scalar, object(under: path, description: entry.meaning)])), description])
        }
        guard case .object(let members) = scalar else { return scalar }
        return .object(members + [description])
    }
}
