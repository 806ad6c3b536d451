import ShowbatchBasics
/// The HTTP clients showbatch can send with: libcurl's multi interface on one event-loop thread,
/// the only one (`transport:` and `--transport` name it, for manifests and scripts written when
/// there were two).
package enum TransportKind: String, Sendable, CaseIterable {
    case curl
}
