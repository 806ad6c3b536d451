import Foundation
import ShowbatchBasics
import ShowbatchYAML

/// Where `output.deliver.sftp` uploads: `sftp://host[:port]/folder/`.
package struct SFTPDestination: Sendable, Equatable, CustomStringConvertible {
    package var host: String
    package var port: Int
    /// The folder on the server, as the URL says it: starting and ending with `/` (`/~/` is the
    /// user's home).
    package var folder: String

    /// The URL, as the manifest gives it (no credentials: those are `user` and `key_file`).
    package var description: String { "sftp://\(hostForURL)\(port == 22 ? "" : ":\(port)")\(folder)" }

    /// The host as a URL writes it (an IPv6 address in brackets).
    package var hostForURL: String { host.contains(":") ? "[\(host)]" : host }

    /// The URL of `name` in the folder (the name percent-encoded).
    package func url(of name: String) -> String {
        description + Template.pathSegment(name)
    }

    /// The server path of `name` in the folder, for the rename: as the URL's folder says it,
    /// `/~/` being the home folder (which SFTP paths without a leading `/` start from).
    package func serverPath(of name: String) -> String {
        (folder.hasPrefix("/~/") ? String(folder.dropFirst(3)) : folder) + name
    }

    /// Parses the URL; the failure says what is wrong, after the key's name.
    package static func parse(_ text: String) -> Result<SFTPDestination, FailureText> {
        guard text.lowercased().hasPrefix("sftp://") else { return .failure(FailureText("must be an sftp:// URL: sftp://host[:port]/folder/")) }
        let rest = text.dropFirst("sftp://".count)
        guard let slash = rest.firstIndex(of: "/") else { return .failure(FailureText("needs the folder to upload into: sftp://host[:port]/folder/")) }
        let authority = rest[..<slash]
        let folder = String(rest[slash...])
        if authority.contains("@") {
            return .failure(FailureText("must not hold a user or password (give deliver.user and deliver.key_file); found one before \"@\""))
        }
        var host = String(authority)
        var port = 22
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return .failure(FailureText("has an IPv6 address without \"]\"")) }
            host = String(authority[authority.index(after: authority.startIndex)..<close])
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":"), let value = Int(after.dropFirst()), (1...65535).contains(value) else { return .failure(FailureText("has a port that is not a number from 1 to 65535")) }
                port = value
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = String(authority[..<colon])
            guard let value = Int(authority[authority.index(after: colon)...]), (1...65535).contains(value) else { return .failure(FailureText("has a port that is not a number from 1 to 65535")) }
            port = value
        }
        guard !host.isEmpty, host.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || ".-:_".unicodeScalars.contains($0)) }) else {
            return .failure(FailureText("needs a host name or address: sftp://host[:port]/folder/"))
        }
        guard folder.hasSuffix("/") else { return .failure(FailureText("must end in / : it names the folder files are uploaded into, not a file")) }
        if folder.contains("?") || folder.contains("#") || folder.contains("%") || folder.split(separator: "/").contains("..") || folder.contains(where: { $0.isWhitespace || $0.isNewline }) {
            return .failure(FailureText("has a folder with ?, #, %, .. or a space; give the folder as it is on the server"))
        }
        return .success(SFTPDestination(host: host, port: port, folder: folder))
    }
}

/// A message of what is wrong, for a `Result`.
package struct FailureText: Error, Sendable, Equatable, CustomStringConvertible {
    package let message: String
    package init(_ message: String) { self.message = message }
    /// The message: a type's name never reaches a person.
    package var description: String { message }
}

/// `output.deliver`: the finished file is uploaded by SFTP under a temporary name, its size
/// checked, and renamed to its own name; once, as the delivery record beside it says.
package struct DeliverSpec: Sendable, Equatable, CustomStringConvertible {
    package var destination: SFTPDestination
    package var user: String
    /// The private key (OpenSSH or PEM), resolved against the manifest's folder; may be a link.
    package var keyFile: String
    /// The private key's passphrase, if it has one (a secret: never shown).
    package var passphrase: SecretBytes?
    /// The known hosts file (OpenSSH format) that must hold the server's host key.
    package var knownHosts: String
    /// A trigger file written in the folder after the file is in place (`${run.…}` and `${file}` kept).
    package var done: String?
    package var mark: Mark

    package init(destination: SFTPDestination, user: String, keyFile: String, knownHosts: String, mark: Mark) {
        self.destination = destination
        self.user = user
        self.keyFile = keyFile
        self.knownHosts = knownHosts
        self.mark = mark
    }

    package static func == (lhs: DeliverSpec, rhs: DeliverSpec) -> Bool {
        let phrases: Bool
        switch (lhs.passphrase, rhs.passphrase) {
        case (nil, nil): phrases = true
        case (let left?, let right?): phrases = left.matches(right)
        default: phrases = false
        }
        return lhs.destination == rhs.destination && lhs.user == rhs.user && lhs.keyFile == rhs.keyFile
            && lhs.knownHosts == rhs.knownHosts && lhs.done == rhs.done && phrases
    }

    /// Never the passphrase.
    package var description: String {
        "DeliverSpec(\(destination), user: \(user), key_file: \(keyFile), known_hosts: \(knownHosts), passphrase: \(passphrase == nil ? "none" : "hidden"))"
    }

    /// The trigger file's name for the delivered file `name` of the night.
    package func doneName(file name: String, date: NightDate, seq: Int) -> String? {
        done.map { NightName.expand($0, date: date, seq: seq).replacingOccurrences(of: "${file}", with: name) }
    }
}
