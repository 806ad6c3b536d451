/// The version reported by `--version` and the `vgs-client` header.
package let showbatchVersion = "0.1.0"
