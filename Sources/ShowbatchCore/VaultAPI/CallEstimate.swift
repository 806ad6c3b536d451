import ShowbatchManifest

/// The Vault API calls a night takes at the fewest: its rows' aliases packed in data order as
/// the run packs them (rows whole, each alias once a call, up to `aliases_per_call`). A run
/// makes a few more where rows come back too slowly to fill a call (its tail, a pause).
package struct CallEstimate: Sendable, Equatable {
    /// Rows with aliases (rows that cannot be sent are not counted).
    package var rows = 0
    /// Their aliases, each as often as rows name it.
    package var aliases = 0
    /// Calls.
    package var calls = 0
    /// Aliases a call takes at most.
    package var perCall = 0

    /// The estimate for `manifest`, nil when it does not reveal through the Vault API. Reads
    /// every data row (as validate does anyway).
    package init?(manifest: Manifest) {
        guard let vaultAPI = manifest.vaultAPI else { return nil }
        perCall = vaultAPI.aliasesPerCall
        let preparer = RequestPreparer(manifest: manifest, baseURL: manifest.vaultURL)
        var current = Set<String>()
        for item in WorkItemSequence(manifest: manifest) {
            guard case .success(let request) = preparer.prepare(item), let row = request.aliases else { continue }
            rows += 1
            aliases += row.count
            let added = current.union(row)
            if added.count > perCall && !current.isEmpty {
                calls += 1
                current = Set(row)
            } else {
                current = added
            }
        }
        if !current.isEmpty { calls += 1 }
    }

    /// In words: `4000 rows, 8000 aliases: 400 Vault API calls of up to 20 aliases`.
    package var text: String {
        "\(rows) row\(rows == 1 ? "" : "s"), \(aliases) alias\(aliases == 1 ? "" : "es"): \(calls) Vault API call\(calls == 1 ? "" : "s") of up to \(perCall) aliases"
    }
}
