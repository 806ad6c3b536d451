import Foundation
import Testing
import TestSupport
import ShowbatchBasics
import ShowbatchYAML
@testable import ShowbatchManifest

/// `showbatch schema`: every sample manifest is valid against it, and an unknown key is not.
@Suite struct SchemaTests {
    /// The JSON Schema keywords the generated schema uses, checked as a validator would.
    private func problems(_ value: JSONValue, _ schema: JSONValue, at path: String = "") -> [String] {
        var found: [String] = []
        if case .array(let options)? = schema["anyOf"] {
            if options.allSatisfy({ !problems(value, $0, at: path).isEmpty }) { found.append("\(path): matches no anyOf option") }
            return found
        }
        var types: [String] = []
        if case .string(let type)? = schema["type"] { types = [type] }
        if case .array(let list)? = schema["type"] { types = list.compactMap { if case .string(let t) = $0 { t } else { nil } } }
        let actual: String
        switch value {
        case .object: actual = "object"
        case .array: actual = "array"
        case .string: actual = "string"
        case .number(let text): actual = text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) ? "number" : "integer"
        case .bool: actual = "boolean"
        case .null: actual = "null"
        }
        if !types.isEmpty && !types.contains(actual) && !(actual == "integer" && types.contains("number")) {
            found.append("\(path): \(actual) is not \(types)")
            return found
        }
        if case .object(let members) = value {
            for member in members {
                if let property = schema["properties"]?[member.key] {
                    found += problems(member.value, property, at: path + "/" + member.key)
                } else if case .bool(false)? = schema["additionalProperties"] {
                    found.append("\(path): \(member.key) is not allowed")
                } else if let additional = schema["additionalProperties"], case .object = additional {
                    found += problems(member.value, additional, at: path + "/" + member.key)
                }
            }
        }
        if case .array(let items) = value, let each = schema["items"] {
            for (index, item) in items.enumerated() { found += problems(item, each, at: path + "/\(index)") }
        }
        return found
    }

    /// A YAML document as JSON, as the YAML 1.2 core schema reads it.
    private func json(_ node: Node) -> JSONValue {
        if let pairs = node.mapping { return .object(pairs.map { JSONMember($0.key.text, json($0.value)) }) }
        if let items = node.sequence { return .array(items.map(json)) }
        switch node.scalar?.value {
        case .bool(let flag)?: return .bool(flag)
        case .int?, .bigInt?, .float?: return .number(node.text)
        case .string(let text)?: return .string(text)
        default: return .null
        }
    }

    private func sampleManifests() throws -> [(name: String, text: String)] {
        var found: [(String, String)] = []
        for name in ["nightly-card-export.yaml", "nightly-rows.yaml"] {
            found.append((name, try String(contentsOfFile: repository + "/samples/" + name, encoding: .utf8)))
        }
        let config = try String(contentsOfFile: repository + "/samples/kubernetes/config.yaml", encoding: .utf8)
        let block = config.components(separatedBy: "  manifest.yaml: |\n")[1]
        let lines = block.split(separator: "\n", omittingEmptySubsequences: false).prefix { $0.hasPrefix("    ") || $0.isEmpty }
        found.append(("kubernetes/config.yaml", lines.map { String($0.dropFirst(min(4, $0.count))) }.joined(separator: "\n")))
        return found
    }

    @Test func everySampleIsValidAndAnUnknownKeyIsNot() throws {
        let schema = ManifestSchema.json
        #expect(schema["$schema"] == .string("https://json-schema.org/draft/2020-12/schema"))
        for (name, text) in try sampleManifests() {
            let document = json(try YAMLParser.parse(SourceFile(name: name, text: text)))
            #expect(problems(document, schema) == [], "\(name)")
            guard case .object(var members) = document else { continue }
            members.append(JSONMember("bogus", .number("1")))
            #expect(problems(.object(members), schema) == ["/: bogus is not allowed"].map { $0.replacingOccurrences(of: "/:", with: ":") })
        }
        // Deeper too: a key a label binding does not have.
        let label = json(try YAMLParser.parse(SourceFile(name: "m.yaml", text: "vault: t\nrequests: [{name: a, path: /p, labels: {c: {path: json.c, colour: red}}}]\n")))
        #expect(problems(label, schema) == ["/requests/0/labels/c: matches no anyOf option"])
    }
}
