import ShowbatchBasics
import ShowbatchYAML

// The Vault API: `vault_api`, a request's `reveal:` and its labels, and HTTP Basic for version 1.
extension ManifestDecoder {
    static let vaultAPIKeys = ManifestReference.keys(under: "vault_api")

    /// `vault_api`: the version, the aliases a call, v2's storage.
    mutating func vaultAPI(_ node: Node) -> VaultAPISpec? {
        guard let map = fields(node, "vault_api", known: Self.vaultAPIKeys) else { return nil }
        guard let versionNode = map["version"] else {
            problem(node.mark, "missing required key \"version\" in vault_api (1 or 2)")
            return nil
        }
        guard let version = integer(versionNode, "vault_api.version", 1...2) else { return nil }
        var spec = VaultAPISpec(version: version)
        if let node = map["aliases_per_call"], let value = integer(node, "vault_api.aliases_per_call", 1...VaultAPISpec.maxAliasesPerCall) {
            spec.aliasesPerCall = value
        }
        if let node = map["storage"], let value = text(node, "vault_api.storage") {
            if version != 2 {
                problem(node.mark, "vault_api.storage is version 2's; version 1 reveals persistent aliases only")
            } else if ["PERSISTENT", "VOLATILE"].contains(value.uppercased()) {
                spec.storage = value.uppercased()
            } else {
                problem(node.mark, "vault_api.storage \"\(value)\" is not valid; expected PERSISTENT or VOLATILE")
            }
        }
        return spec
    }

    /// What goes with `vault_api` at the top level: no custom hostname, route or satellite (the
    /// API has its own host).
    mutating func checkVaultAPIEndpoint(_ top: KnownKeys, _ manifest: Manifest) {
        guard manifest.vaultAPI != nil else { return }
        for key in ["hostname", "route_id", "satellite_port"] {
            if let node = top[key], !(node.scalar.map { $0.text.isEmpty } ?? false) {
                problem(node.mark, "\(key) is the reveal proxy's; with vault_api requests go to the Vault API's host (--base-url replaces it for a local server)")
            }
        }
    }

    /// A request's `reveal:`: label name → alias template, in order.
    mutating func reveal(_ node: Node, _ context: @autoclosure () -> String, dataDriven: Bool) -> [RevealAlias]? {
        guard let pairs = node.mapping else {
            problem(node.mark, "\(context()) reveal must be a mapping of label names to aliases; found \(node.typeName)")
            return nil
        }
        var result: [RevealAlias] = []
        let problemCount = problems.count
        for pair in pairs {
            guard let name = labelName(pair.key) else { continue }
            guard let alias = template(pair.value, "\(context()) reveal.\(name)", allowRow: dataDriven) else { continue }
            if !alias.needsRow, let problem = RevealAlias.problem(in: alias.expand(row: nil)) {
                self.problem(pair.value.mark, "\(context()) reveal.\(name): the alias \(problem)")
            }
            result.append(RevealAlias(label: name, alias: alias, mark: pair.value.mark))
        }
        if result.isEmpty && problems.count == problemCount { problem(node.mark, "\(context()) reveal is empty; give at least one label and its alias") }
        return result
    }

    /// The labels of a request with `reveal:`, one per alias, in its order: `labels:` may shape
    /// them (transform, mask, expect, file) by name, never give them a path.
    mutating func revealLabels(_ reveal: [RevealAlias], _ node: Node?, _ context: @autoclosure () -> String) -> [LabelBinding] {
        var given: [String: LabelBinding] = [:]
        if let node {
            if let pairs = node.mapping {
                for pair in pairs {
                    guard let name = pair.key.scalar?.text else { continue }
                    guard reveal.contains(where: { $0.label == name }) else {
                        var message = "label \"\(name)\" of \(context()) is not in its reveal"
                        if let suggestion = closest(name, in: reveal.map(\.label)) { message += "; did you mean \"\(suggestion)\"?" }
                        problem(pair.key.mark, message)
                        continue
                    }
                    if pair.value.kind == .scalar {
                        problem(pair.value.mark, "label \"\(name)\" is revealed from its alias (reveal), so it takes no path; give a mapping of transform, mask, expect or file")
                        continue
                    }
                    if let binding = label(name, pair.value, revealed: ContentPath(member: name)) { given[name] = binding }
                }
            } else {
                problem(node.mark, "\(context()) labels must be a mapping of label names to bindings; found \(node.typeName)")
            }
        }
        return reveal.map { alias in
            var binding = given[alias.label] ?? LabelBinding(name: alias.label, path: ContentPath(member: alias.label), transforms: [], mask: nil)
            binding.fromAlias = true
            return binding
        }
    }

    /// Requests and `vault_api` agree: with it, every request reveals aliases, as many as a call
    /// takes at most; without it, none does.
    mutating func checkVaultAPIRequests(_ manifest: Manifest) {
        for (index, request) in manifest.requests.enumerated() {
            let name = request.name.literalText.map { "request \"\($0)\"" } ?? "request \(index + 1)"
            switch (manifest.vaultAPI, request.reveal) {
            case (let api?, let reveal?):
                if reveal.count > api.aliasesPerCall {
                    problem(reveal[api.aliasesPerCall].mark, "\(name) reveals \(reveal.count) aliases, more than a call takes (vault_api.aliases_per_call: \(api.aliasesPerCall))")
                }
            case (.some, nil):
                problem(request.mark, "\(name) has no reveal; with vault_api every request reveals aliases (reveal: {LABEL: \"${row.COLUMN}\"})")
            case (nil, let reveal?):
                problem(reveal.first?.mark ?? request.mark, "\(name) has reveal, which needs vault_api at the top level (vault_api: {version: 2})")
            case (nil, nil):
                break
            }
        }
    }
}
