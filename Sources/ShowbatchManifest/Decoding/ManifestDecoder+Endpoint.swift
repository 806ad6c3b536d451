import Foundation
import ShowbatchBasics
import ShowbatchYAML

// The keys that decide where requests go.
extension ManifestDecoder {
    /// The keys that make the base URL, as the Show SDKs form it: vault, environment, region, route, custom
    /// hostname and satellite port.
    mutating func endpoint(_ top: KnownKeys, root: Node, into manifest: inout Manifest) {
        if let node = top["vault"] {
            if let vault = text(node, "vault") {
                if Endpoint.isValidVault(vault) {
                    manifest.vault = vault
                } else {
                    problem(node.mark, "vault \"\(vault)\" is not valid; expected letters and digits only, such as tntaq8uft80")
                }
            }
        } else {
            problem(root.mark, "missing required key \"vault\" in the manifest")
        }
        if let node = top["environment"], let environment = text(node, "environment") {
            if Endpoint.isValidEnvironment(environment) {
                manifest.environment = environment
            } else {
                problem(node.mark, "environment \"\(environment)\" is not valid; expected sandbox, live or live-<region>")
            }
        }
        // An empty data_region or hostname (as `${NAME:-}` gives when NAME is unset) means none,
        // as the SDKs take an empty one.
        if let node = top["data_region"], let region = text(node, "data_region"), !region.isEmpty {
            if !Endpoint.isValidRegion(region) {
                problem(node.mark, "data_region \"\(region)\" is not valid; expected letters and digits in dash-separated parts, such as eu-1")
            } else if Endpoint.environmentHasRegion(manifest.environment) {
                problem(node.mark, "data_region is given but environment \"\(manifest.environment)\" already names a region; give one or the other")
            } else {
                manifest.dataRegion = region
                // `eu1` is valid but names no VGS region (they read `eu-1`): the host would not resolve.
                let letters = region.prefix { $0.isASCII && $0.isLetter }
                let digits = region.dropFirst(letters.count)
                if !letters.isEmpty, !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }), digits.count <= 2 {
                    warnings.append((node.mark, "data_region \"\(region)\" has no dash; VGS regions are written like \"\(letters)-\(digits)\""))
                }
            }
        }
        if let node = top["route_id"], let route = text(node, "route_id") {
            if Endpoint.isValidRegion(route) {
                manifest.routeID = route
            } else {
                problem(node.mark, "route_id \"\(route)\" is not valid; expected letters, digits and dashes")
            }
        }
        if let node = top["hostname"], let raw = text(node, "hostname"), !raw.isEmpty {
            do {
                manifest.hostname = try Endpoint.normalizeHostname(raw)
            } catch {
                switch error {
                case .httpScheme: problem(node.mark, "hostname \"\(raw)\" uses http; only https is supported")
                case .port: problem(node.mark, "hostname \"\(raw)\" has an invalid port; expected HOST or HOST:PORT with a port from 1 to 65535")
                case .empty, .invalid: problem(node.mark, "hostname \"\(raw)\" is not a valid host name")
                }
            }
        }
        if let node = top["hostname_check"], let check = bool(node, "hostname_check") {
            manifest.hostnameCheck = check
        }
        if let node = top["satellite_port"], let port = integer(node, "satellite_port", 1...65535) {
            if manifest.environment != "sandbox" || manifest.dataRegion != nil || manifest.hostname != nil || manifest.routeID != nil {
                problem(node.mark, "satellite_port works only with environment: sandbox and no data_region, route_id or hostname")
            } else {
                manifest.satellitePort = port
            }
        }
    }
}
