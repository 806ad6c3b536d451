import Foundation
import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

/// Loads manifest text named `m.yaml` in `dir`, the recipients' keys checked by GnuPG.
func loadManifest(_ text: String, in dir: TempDir? = nil, environment: [String: String] = [:],
                  use: ManifestUse = .reveal) throws(ManifestError) -> Manifest {
    try TestSupport.loadManifest(text, in: dir, environment: environment, use: use, recipients: OpenPGPEncryptor.validate)
}

/// The rendered errors of manifest text, the recipients' keys checked by GnuPG.
func manifestErrors(_ text: String, environment: [String: String] = [:], files: [String: String] = [:],
                    folders: [String] = [], use: ManifestUse = .reveal) -> String {
    TestSupport.manifestErrors(text, environment: environment, files: files, folders: folders, use: use,
                               recipients: OpenPGPEncryptor.validate)
}
