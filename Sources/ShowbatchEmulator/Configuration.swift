import Foundation
import ShowbatchBasics
import ShowbatchManifest

/// Settings of an emulator: what it reveals and which faults it injects.
package struct EmulatorConfiguration: Sendable {
    /// Port to bind on 127.0.0.1; 0 picks a free one.
    package var port = 0
    /// Alias → revealed value.
    package var aliases: [String: String] = [:]
    /// The answer's shape (`emulator.response`); nil: the echo.
    package var response: JSONValue?
    /// Custom hostname → vault, answered by the hostname check endpoint.
    package var cnames: [String: String] = [:]
    /// The faults it injects.
    package var faults = EmulatorFaults()
    /// Whether it demands bearer tokens, handing them out at `POST /oauth/token`.
    package var auth: EmulatorAuth?
    /// The HTTP Basic credentials the Vault API v1 demands, when set.
    package var basic: BasicCredentials?
    /// Largest request head accepted (431 past it).
    package var maxHeaderBytes = 16 * 1024
    /// Largest request body accepted (413 past it).
    package var maxBodyBytes = 8 * 1024 * 1024

    /// The default configuration: no faults, no aliases.
    package init() {}

    /// Aliases revealed when a manifest has no `emulator:` section (those of the samples).
    package static let sampleAliases: [String: String] = [
        "tok_sandbox_abc": "4111111111111111",
        "tok_sandbox_def": "01/2030",
        "tok_sandbox_5FvQ8mGm7Xt1": "4111111111111111",
        "tok_sandbox_9sYzKc3vB2wq": "12/2030",
        "tok_sandbox_Hd8f3LkQ2mZp": "5555555555554444",
        "tok_sandbox_Lq2Vn8Rt4sXa": "01/2029",
        "tok_sandbox_Pz7Yc1Wb6eKd": "Ada Lovelace",
    ].merging(sampleDataAliases) { first, _ in first }

    /// The configuration a manifest's `emulator:` section asks for (aliases loaded from a file if named).
    package init(spec: EmulatorSpec?) throws(EmulatorError) {
        self.init()
        guard let spec else {
            aliases = EmulatorConfiguration.sampleAliases
            return
        }
        switch spec.aliases {
        case .inline(let table)?: aliases = table
        case .file(let path)?: aliases = try AliasFile.load(path: path)
        case nil: aliases = EmulatorConfiguration.sampleAliases
        }
        faults = spec.faults
        auth = spec.auth
        response = spec.response
    }
}

extension EmulatorConfiguration {
    /// The configuration standing in for what `manifest` reveals from: its `emulator:` section
    /// and its HTTP Basic credentials; `tokens`: its client credentials get tokens from the
    /// emulator (any client), as a run with `--emulate` asks for them there.
    package init(manifest: Manifest, tokens: Bool) throws(EmulatorError) {
        try self.init(spec: manifest.emulator)
        if tokens, case .clientCredentials? = manifest.auth?.source, auth == nil { auth = EmulatorAuth() }
        basic = manifest.basicAuth
    }
}

/// A problem starting the emulator or reading its alias file.
package struct EmulatorError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    package let message: String

    /// The message.
    package var description: String { message }
}
