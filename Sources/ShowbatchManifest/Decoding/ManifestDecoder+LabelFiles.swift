import Foundation
import ShowbatchBasics
import ShowbatchYAML

// Binary labels: `decode: base64`, `file: TEMPLATE` and `max_bytes`.
extension ManifestDecoder {
    /// Reads a label's `decode`, `file` and `max_bytes` into `binding.file`. `decode` and `file`
    /// go together, and such a label takes no `mask` (its cell is the file's path).
    mutating func labelFile(_ map: KnownKeys, _ node: Node, into binding: inout LabelBinding, _ what: @autoclosure () -> String) {
        let decodeNode = map["decode"], fileNode = map["file"], maxNode = map["max_bytes"]
        guard decodeNode != nil || fileNode != nil || maxNode != nil else { return }
        var decode: LabelFileSpec.Decoding?
        if let decodeNode, let text = text(decodeNode, "\(what()) decode") {
            if let value = LabelFileSpec.Decoding(rawValue: text) {
                decode = value
            } else {
                problem(decodeNode.mark, "\(what()) decode \"\(text)\" is not supported; expected base64")
            }
        }
        var template: FileTemplate?
        if let fileNode { template = fileTemplate(fileNode, "\(what()) file") }
        var maxBytes: Int?
        if let maxNode { maxBytes = byteCount(maxNode, "\(what()) max_bytes") }
        if let fileNode, decodeNode == nil {
            problem(fileNode.mark, "\(what()) file needs decode: base64 (only decoded bytes are written to files)")
            return
        }
        if let decodeNode, fileNode == nil {
            problem(decodeNode.mark, "\(what()) decode needs file: TEMPLATE, the file its bytes are written to (a decoded value may not be text)")
            return
        }
        if let maxNode, decodeNode == nil {
            problem(maxNode.mark, "\(what()) max_bytes needs decode: base64 and file")
            return
        }
        if let maskNode = map["mask"] {
            problem(maskNode.mark, "\(what()) is written to a file, so it cannot be masked (its cell is the file's path)")
        }
        guard let decode, let template, let fileNode else { return }
        binding.file = LabelFileSpec(decode: decode, template: template, maxBytes: maxBytes, mark: fileNode.mark)
    }

    /// A label file's path template: environment references resolved (`${request}` kept), and
    /// the text checked for what no data row can fix (an absolute path, `..`, `%`…).
    mutating func fileTemplate(_ node: Node, _ what: @autoclosure () -> String) -> FileTemplate? {
        guard let raw = rawText(node, what()) else { return nil }
        guard var template = parseTemplate(raw, at: node, what()) else { return nil }
        // `${request}` is the request's name, not an environment variable.
        var environment = self.environment
        environment.removeValue(forKey: "request")
        let unset = template.resolveEnvironment(environment).filter { $0 != "request" }
        for name in unset { unsetVariable(name, at: node.mark, what()) }
        guard unset.isEmpty else { return nil }
        let file = FileTemplate(source: template)
        let problems = file.problems
        for message in problems { problem(node.mark, "\(what()) \"\(raw)\" \(message)") }
        return problems.isEmpty ? file : nil
    }

    /// A size in bytes: an integer, or a number with `KiB`, `MiB` or `GiB`.
    mutating func byteCount(_ node: Node, _ what: @autoclosure () -> String) -> Int? {
        let limit = 1 << 40
        if case .int(let value)? = node.scalar?.value {
            if (1...limit).contains(value) { return value }
        } else if case .string? = node.scalar?.value, let text = scalarText(node, what()) {
            let units: [(String, Int)] = [("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("", 1)]
            for (suffix, scale) in units where text.hasSuffix(suffix) {
                let digits = text.dropLast(suffix.count).trimmingCharacters(in: .whitespaces)
                if let number = Int(digits), number >= 1, number <= limit / scale { return number * scale }
                break
            }
        }
        let found: String
        switch node.scalar?.value {
        case .int?, .bigInt?, .float?: found = node.text
        case .string?: found = "\"\(node.text)\""
        default: found = node.typeName
        }
        problem(node.mark, "\(what()) must be a number of bytes from 1, such as 1048576 or 5MiB; found \(found)")
        return nil
    }

    /// The row templates of `labels`' files (for the data file's header check), reporting
    /// `${row.…}` and `${index}` in a request without `each`.
    mutating func labelFileTemplates(_ labels: [LabelBinding], dataDriven: Bool) -> [(Template, Mark)] {
        var templates: [(Template, Mark)] = []
        for label in labels {
            guard let file = label.file else { continue }
            if dataDriven {
                templates.append((file.template.source, file.mark))
            } else if file.template.source.needsRow {
                problem(file.mark, "${row.…} and ${index} in label \"\(label.name)\" file need a request with \"each\"")
            }
        }
        return templates
    }
}
