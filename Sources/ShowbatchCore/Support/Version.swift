/// The version reported by `--version` and the `vgs-client` header.
public let showbatchVersion = "0.1.0"
