// swift-tools-version:6.0
import PackageDescription

// Libraries, each behind a wall the compiler keeps (swift-nio's NIOCore/NIOPosix):
//   NavSync         the pure core a client needs: model, flows, sequencer, JSON, protocol
//                   messages, WebSocket framing, the client machine. Foundation at most, no C.
//   NavSyncServer   the server's pure middle: hub, sessions, durability records, cluster
//                   protocol, auth, HTTP, the server connection machine. NavSync only, no C.
//   NavSyncClient   what an iOS/macOS app adds: the navigator and its transports; NavSync
//                   only, so it compiles no server code and links no C library
//                   (tests/integration/split.sh).
//   NavSyncLibuv    libuv, OpenSSL and zlib for both ends, and the client side: the loop,
//                   the socket stream and its output queue, TLS, deflate, the WebSocket
//                   and session clients. NavSync and those three C libraries only, so a
//                   Linux app and navclient compile no server code.
//   NavSyncRuntime  the server on NavSyncLibuv, and the only code that touches jansson,
//                   hiredis, libcurl and the server's files: storage, cluster, backend, web.
//   NavSyncLibuvTransport  the navigator's transport on Linux (agents, tests): the
//                   navigator on NavSyncLibuv's client loop.
let package = Package(
    name: "navsync",
    // The app client is `@Observable` (Observation): iOS 17, macOS 14 and their peers.
    // Linux needs no declaration (agents, tests, the server).
    platforms: [.iOS(.v17), .macOS(.v14), .tvOS(.v17), .watchOS(.v10), .visionOS(.v1)],
    products: [
        .library(name: "NavSync", targets: ["NavSync"]),
        .library(name: "NavSyncClient", targets: ["NavSyncClient"]),
        .library(name: "NavSyncServer", targets: ["NavSyncServer"]),
        .library(name: "NavSyncLibuv", targets: ["NavSyncLibuv"]),
        .library(name: "NavSyncRuntime", targets: ["NavSyncRuntime"]),
        .library(name: "NavSyncLibuvTransport", targets: ["NavSyncLibuvTransport"]),
        .executable(name: "navsyncd", targets: ["navsyncd"]),
        .executable(name: "navclient", targets: ["navclient"]),
    ],
    targets: [
        .systemLibrary(name: "CUV", pkgConfig: "libuv", providers: [.apt(["libuv1-dev"])]),
        .systemLibrary(name: "CJansson", pkgConfig: "jansson", providers: [.apt(["libjansson-dev"])]),
        // Cluster mode's Redis client: hiredis's reader and formatter only.
        .systemLibrary(name: "CHiredis", pkgConfig: "hiredis", providers: [.apt(["libhiredis-dev"])]),
        // TLS (HTTPS, wss://), JWT signatures and digests: OpenSSL 3.
        .systemLibrary(name: "CSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        // permessage-deflate and the journal's CRC-32: zlib.
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // Outgoing HTTP (the backend's hooks and webhooks): libcurl's multi-socket
        // interface on the libuv loop.
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .target(name: "NavSync"),
        .target(name: "NavSyncServer", dependencies: ["NavSync"]),
        .target(name: "NavSyncClient", dependencies: ["NavSync"]),
        .target(name: "NavSyncLibuv", dependencies: ["NavSync", "CUV", "CSSL", "CZlib"]),
        .target(name: "NavSyncRuntime", dependencies: ["NavSync", "NavSyncServer", "NavSyncLibuv", "CJansson", "CUV", "CHiredis", "CSSL", "CZlib", "CCurl"],
                plugins: ["EmbedWebPlugin"]),
        .target(name: "NavSyncLibuvTransport", dependencies: ["NavSyncClient", "NavSyncLibuv"]),
        // web/ (the device page, navsync.js, navsync.d.ts) becomes Swift source at build
        // time, so navsyncd stays one self-contained binary.
        .executableTarget(name: "embed-web", path: "Plugins/EmbedWebTool"),
        .plugin(name: "EmbedWebPlugin", capability: .buildTool(), dependencies: ["embed-web"]),
        // The example app's model (typed routes of the demo shop), shared by the SwiftUI
        // app in Examples/Shop/App (built by Xcode, not here) and by a headless run of
        // the same flow against a real server.
        .target(name: "ShopModel", dependencies: ["NavSyncClient"], path: "Examples/Shop/Model"),
        .executableTarget(name: "shop-headless", dependencies: ["ShopModel", "NavSyncLibuvTransport"], path: "Examples/Shop/Headless"),
        .executableTarget(name: "navsyncd", dependencies: ["NavSyncRuntime", "NavSyncServer"]),
        .executableTarget(name: "navclient", dependencies: ["NavSync", "NavSyncLibuv", "CUV"]),
        .executableTarget(name: "navsync-bench", dependencies: ["NavSyncRuntime", "NavSyncServer", "CUV"]),
        // Fixtures the test targets share (a second flow, the hub as a value, a harness).
        .target(name: "TestSupport", dependencies: ["NavSync", "NavSyncServer"], path: "Tests/Support"),
        .testTarget(name: "NavSyncTests", dependencies: ["NavSync", "NavSyncServer", "TestSupport"]),
        .testTarget(name: "NavSyncServerTests", dependencies: ["NavSync", "NavSyncServer", "TestSupport"]),
        .testTarget(name: "NavSyncClientTests", dependencies: ["NavSyncClient", "NavSyncServer", "ShopModel", "TestSupport"]),
        .testTarget(name: "NavSyncRuntimeTests", dependencies: ["NavSyncRuntime", "NavSyncLibuv", "NavSyncServer", "NavSyncLibuvTransport", "ShopModel", "TestSupport"]),
        .testTarget(name: "navclientTests", dependencies: ["navclient", "NavSyncLibuv", "NavSyncRuntime", "NavSyncServer", "TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
