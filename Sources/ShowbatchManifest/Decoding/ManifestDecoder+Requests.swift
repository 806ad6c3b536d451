import Foundation
import ShowbatchBasics
import ShowbatchYAML

// The requests list: names, paths, methods, headers, payloads and data files.
extension ManifestDecoder {
    // MARK: Requests

    mutating func requests(_ node: Node) -> [RequestSpec] {
        guard let items = node.sequence else {
            problem(node.mark, "requests must be a list of requests; found \(node.typeName)")
            return []
        }
        if items.isEmpty { problem(node.mark, "requests is empty; list at least one request") }
        // Only the streamed list itself was decoded ahead (not, say, an alias of it).
        if let predecoded, predecoded.list == node, predecoded.items == items.count {
            self.predecoded = nil
            problems += predecoded.problems
            return predecoded.requests
        }
        var result: [RequestSpec] = []
        result.reserveCapacity(items.count)
        for (index, item) in items.enumerated() {
            if let request = listedRequest(item, number: index + 1) { result.append(request) }
        }
        return result
    }

    /// Decodes item `number` of the requests list, checking its name against the earlier items'.
    mutating func listedRequest(_ item: Node, number: Int) -> RequestSpec? {
        guard let request = request(item, number: number) else { return nil }
        if request.each == nil, let name = request.name.literalText {
            if let line = requestNames[name] {
                problem(item.value(forKey: "name")?.mark ?? item.mark, "request name \"\(name)\" is used twice; first at line \(line)")
            } else {
                requestNames[name] = request.mark.line
            }
        }
        return request
    }

    mutating func request(_ node: Node, number: Int) -> RequestSpec? {
        // Names for messages are made only when a message is: most requests have none.
        func context() -> String { "request \(number)" }
        guard let map = fields(node, context(), known: Self.requestKeys) else { return nil }
        var each: DataSource?
        if let eachNode = map["each"] { each = self.each(eachNode, context()) }
        let dataDriven = map["each"] != nil
        var spec = RequestSpec(name: Template(literal: ""), path: Template(literal: ""), mark: node.mark)
        spec.each = each
        var rowColumns: [(columns: [String], mark: Mark)] = []
        var payloadColumns: [String] = []
        if let nameNode = map["name"] {
            if let name = template(nameNode, "\(context()) name", allowRow: dataDriven) {
                if name.isEmpty { problem(nameNode.mark, "\(context()) name is empty") }
                spec.name = name
                if dataDriven { rowColumns.append((name.rowColumns, nameNode.mark)) }
            }
        } else {
            problem(node.mark, "missing required key \"name\" in \(context())")
        }
        let literalName = spec.name.literalText ?? (spec.name.parts.count == 1 && !spec.name.needsRow ? spec.name.expand(row: nil) : nil)
        func label() -> String { literalName.map { "request \"\($0)\"" } ?? context() }
        if let revealNode = map["reveal"] {
            // The Vault API's: the aliases take the place of a path and a payload.
            spec.reveal = reveal(revealNode, label(), dataDriven: dataDriven)
            spec.method = .get
            spec.path = Template(literal: "/aliases")
            for alias in spec.reveal ?? [] where dataDriven { rowColumns.append((alias.alias.rowColumns, alias.mark)) }
            for key in ["path", "method", "payload"] where map[key] != nil {
                problem(map[key]!.mark, "\(label()) has reveal, which takes no \(key): the Vault API's call is made from the aliases")
            }
        } else if let pathNode = map["path"] {
            if let path = template(pathNode, "\(label()) path", allowRow: dataDriven) {
                spec.path = path
                if dataDriven { rowColumns.append((path.rowColumns, pathNode.mark)) }
            }
        } else {
            problem(node.mark, "missing required key \"path\" in \(label())")
        }
        if spec.reveal == nil, let methodNode = map["method"], let method = text(methodNode, "\(label()) method") {
            if let value = HTTPMethod(rawValue: method.uppercased()) {
                spec.method = value
            } else {
                problem(methodNode.mark, "method \"\(method)\" is not valid; expected get, post, put, patch or delete")
            }
        }
        if let headersNode = map["headers"] {
            spec.headers = headers(headersNode, "\(label()) headers", allowRow: dataDriven)
            if dataDriven { for field in spec.headers { rowColumns.append((field.value.rowColumns, headersNode.mark)) } }
        }
        if spec.reveal == nil, let payloadNode = map["payload"] {
            if payloadNode.mapping == nil {
                problem(payloadNode.mark, "\(label()) payload must be a mapping (sent as a JSON object); found \(payloadNode.typeName)")
            } else if spec.method == .get {
                problem(payloadNode.mark, "\(label()) uses method get, which cannot carry a payload; use post or remove the payload")
            } else {
                spec.payload = payload(payloadNode, "\(label()) payload", allowRow: dataDriven, columns: &payloadColumns)
                if dataDriven { rowColumns.append((payloadColumns, payloadNode.mark)) }
            }
        }
        if let reveal = spec.reveal {
            spec.labels = revealLabels(reveal, map["labels"], label())
        } else if let labelsNode = map["labels"] {
            spec.labels = labels(labelsNode, label())
        }
        rowColumns += labelFileTemplates(spec.labels, dataDriven: dataDriven).map { ($0.0.rowColumns, $0.1) }
        if let outputNode = map["output"] { spec.output = output(outputNode, "\(label()) output") }
        // Without "each" a row reference is already a problem, so there are no columns to read.
        if dataDriven { spec.rowColumns = spec.referencedColumns(payloadColumns: payloadColumns) }
        // Every referenced column must be in the CSV header before anything is sent.
        if let each, each.kind == .csv, let columns = csvHeader(each, map["each"]!) {
            var reported = Set<String>()
            for (referenced, mark) in rowColumns {
                for column in referenced where !columns.contains(column) && !reported.contains(column) {
                    reported.insert(column)
                    var message = "column \"\(column)\" is not in the header of \(each.name)"
                    if let suggestion = closest(column, in: columns) { message += "; did you mean \"\(suggestion)\"?" }
                    else { message += "; it has \(choices(columns))" }
                    problem(mark, message)
                }
            }
        }
        return spec
    }

    mutating func each(_ node: Node, _ context: @autoclosure () -> String) -> DataSource? {
        guard let map = fields(node, "\(context()) each", known: Self.eachKeys) else { return nil }
        let chosen = map.pairs.filter { pair in Self.eachKeys.contains { pair.key.hasText($0) } }
        guard chosen.count == 1, let pair = chosen.first else {
            if chosen.isEmpty { problem(node.mark, "\(context()) each needs csv: FILE or jsonl: FILE") }
            else { problem(node.mark, "\(context()) each takes one of csv or jsonl, not both") }
            return nil
        }
        let key = pair.key.text
        guard let path = text(pair.value, "\(context()) each.\(key)") else { return nil }
        let resolved = resolve(path)
        if let reason = FileDescriptor.unreadable(resolved) {
            problem(pair.value.mark, "data file \"\(path)\" cannot be read: \(reason)")
            return nil
        }
        return DataSource(kind: key == "csv" ? .csv : .jsonl, path: resolved, name: path)
    }

    mutating func csvHeader(_ source: DataSource, _ node: Node) -> [String]? {
        do {
            let reader = try DataRowReader(kind: .csv, path: source.path, name: source.name)
            defer { reader.close() }
            return reader.columns
        } catch {
            problem(node.mark, "data file \(error)")
            return nil
        }
    }

    /// The payload of `node`, adding the data columns its strings use to `columns`. Content an
    /// alias repeats is decoded once and shared: a payload of aliases costs what is written in
    /// the file, not what it expands to (problems in it are reported once, where it is written).
    mutating func payload(_ node: Node, _ context: @autoclosure () -> String, allowRow: Bool, columns: inout [String]) -> PayloadValue {
        let shared = node.isShared ? node.containerID.map { SharedPayload(container: $0, allowRow: allowRow) } : nil
        if let shared, let known = sharedPayloads[shared] {
            for column in known.columns where !columns.contains(column) { columns.append(column) }
            return known.value
        }
        var own: [String] = []
        let value = payloadValue(node, context(), allowRow: allowRow, columns: &own)
        if let shared { sharedPayloads[shared] = (value, own) }
        for column in own where !columns.contains(column) { columns.append(column) }
        return value
    }

    private mutating func payloadValue(_ node: Node, _ context: @autoclosure () -> String, allowRow: Bool, columns: inout [String]) -> PayloadValue {
        switch node.content {
        case .mapping(let pairs):
            var members: [(key: String, value: PayloadValue)] = []
            members.reserveCapacity(pairs.count)
            for pair in pairs {
                // Keys are sent as written; the parser refused two of one text.
                guard let key = pair.key.scalar?.text else { continue }
                members.append((key, payload(pair.value, "\(context()).\(key)", allowRow: allowRow, columns: &columns)))
            }
            return .object(members)
        case .sequence(let items):
            var values: [PayloadValue] = []
            values.reserveCapacity(items.count)
            for (offset, item) in items.enumerated() {
                values.append(payload(item, "\(context()).\(offset)", allowRow: allowRow, columns: &columns))
            }
            return .array(values)
        case .scalar(let scalar):
            switch scalar.value {
            case .null: return .null
            case .bool(let value): return .bool(value)
            case .int, .bigInt, .float:
                // Digit for digit as written: no number is rounded through a double.
                guard let number = scalar.jsonNumber else {
                    problem(node.mark, "\(context()) is not a number JSON can hold")
                    return .null
                }
                return .number(number)
            case .string:
                let template = template(node, context(), allowRow: allowRow, sensitive: true) ?? Template(literal: "")
                for column in template.rowColumns where !columns.contains(column) { columns.append(column) }
                return .string(template)
            }
        }
    }
}
