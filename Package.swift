// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "navsync",
    products: [
        .library(name: "NavSync", targets: ["NavSync"]),
        .executable(name: "navsyncd", targets: ["navsyncd"]),
        .executable(name: "navclient", targets: ["navclient"]),
    ],
    targets: [
        .systemLibrary(name: "CUV", pkgConfig: "libuv", providers: [.apt(["libuv1-dev"])]),
        .systemLibrary(name: "CJansson", pkgConfig: "jansson", providers: [.apt(["libjansson-dev"])]),
        // Cluster mode's Redis client: hiredis's reader and formatter only.
        .systemLibrary(name: "CHiredis", pkgConfig: "hiredis", providers: [.apt(["libhiredis-dev"])]),
        .target(name: "NavSync", dependencies: ["CJansson", "CUV", "CHiredis"]),
        .executableTarget(name: "navsyncd", dependencies: ["NavSync"]),
        .executableTarget(name: "navclient", dependencies: ["NavSync"]),
        .executableTarget(name: "navsync-bench", dependencies: ["NavSync", "CUV"]),
        .testTarget(name: "NavSyncTests", dependencies: ["NavSync"]),
    ],
    swiftLanguageModes: [.v6]
)
