// swift-tools-version:6.2
import PackageDescription

// Every target treats warnings as errors: a warning once hid a bug (a `where` that applied to
// one pattern of a `case` only), and none may hide another.
let strict: [SwiftSetting] = [.treatAllWarnings(as: .error)]

let package = Package(
    name: "showbatch",
    // Only the tool: the libraries are this package's own (their API is `package`, not public).
    products: [
        .executable(name: "showbatch", targets: ["showbatch"]),
    ],
    targets: [
        // libyaml from the Debian package; only ShowbatchYAML imports it.
        .systemLibrary(
            name: "CYAML",
            pkgConfig: "yaml-0.1",
            providers: [.apt(["libyaml-dev"])]
        ),
        // libcurl's multi interface for the curl transport; only ShowbatchCore imports it.
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        // zlib for gzip outputs; only ShowbatchCore's Output layer imports it.
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        // GPGME for OpenPGP-encrypted outputs (it runs gpg, from the gnupg package); only
        // ShowbatchCore's Crypto layer imports it.
        .systemLibrary(
            name: "CGPGME",
            pkgConfig: "gpgme",
            providers: [.apt(["libgpgme-dev"])]
        ),
        // OpenSSL's libcrypto (AES-256-GCM, HMAC, random bytes) for sealed files and wrapped keys;
        // only ShowbatchCore's Crypto layer imports it.
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        // Linux calls Swift cannot import (prctl is variadic), from glibc's own headers; only
        // ShowbatchBasics (Support/ProcessGuard) imports it.
        .systemLibrary(name: "CLinux"),
        // What every layer above uses: files, threads, JSON, units, errors and their positions in a
        // file; no C library but glibc's, and no domain: it depends on no other Showbatch target.
        .target(name: "ShowbatchBasics", dependencies: ["CLinux"], swiftSettings: strict),
        .target(name: "ShowbatchYAML", dependencies: ["ShowbatchBasics", "CYAML"], swiftSettings: strict),
        .target(name: "ShowbatchManifest", dependencies: ["ShowbatchBasics", "ShowbatchYAML"], swiftSettings: strict),
        .target(name: "ShowbatchCore", dependencies: ["ShowbatchManifest", "ShowbatchBasics", "ShowbatchYAML", "CCurl", "CZlib", "CGPGME", "COpenSSL"], swiftSettings: strict),
        .target(name: "ShowbatchEmulator", dependencies: ["ShowbatchBasics", "ShowbatchManifest"], swiftSettings: strict),
        .executableTarget(name: "showbatch", dependencies: ["ShowbatchBasics", "ShowbatchManifest", "ShowbatchCore", "ShowbatchYAML", "ShowbatchEmulator"], swiftSettings: strict),
        .testTarget(name: "ShowbatchYAMLTests", dependencies: ["ShowbatchBasics", "ShowbatchYAML"], swiftSettings: strict),
        .testTarget(name: "ShowbatchBasicsTests", dependencies: ["ShowbatchBasics"], swiftSettings: strict),
        // What more than one test target uses: OpenPGP keys made with the real gpg.
        .target(name: "TestSupport", dependencies: ["ShowbatchManifest"], path: "Tests/Support", swiftSettings: strict),
        .testTarget(name: "ShowbatchManifestTests", dependencies: ["ShowbatchBasics", "ShowbatchManifest", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "ShowbatchCoreTests", dependencies: ["ShowbatchBasics", "ShowbatchManifest", "ShowbatchCore", "ShowbatchEmulator", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "ShowbatchEmulatorTests", dependencies: ["ShowbatchBasics", "ShowbatchManifest", "ShowbatchEmulator"], swiftSettings: strict),
        .testTarget(name: "showbatchTests", dependencies: ["showbatch", "ShowbatchBasics", "ShowbatchManifest", "ShowbatchCore", "ShowbatchEmulator", "TestSupport"], swiftSettings: strict),
    ],
    swiftLanguageModes: [.v6]
)
