#!/usr/bin/env bash
# The package split: what an app adds links no C library (docs/swift.md), and what a
# Linux app or navclient adds (the libuv client) compiles and links no server.
#  1. `swift package describe`: NavSync and NavSyncClient reach no system-library target;
#     NavSyncLibuv, the Linux transport and navclient reach libuv, OpenSSL and zlib only,
#     and no NavSyncServer or runtime; navclient's binary links no jansson, hiredis or curl.
#  2. A copy of the package holding only NavSync, NavSyncClient and docs/swift.md's
#     snippets (no CUV, CJansson or CHiredis target, so no libuv, jansson or hiredis
#     header in reach) builds.
#  3. The same copy with `import CJansson` in the client fails to build: the check fails
#     when it should.
. "$(dirname "$0")/lib.sh"
cd "$ROOT"

swift package describe --type json >"$OUT/split-describe.json"
closure() {   # closure TARGET: TARGET and everything it depends on, transitively, a line each, C targets marked "C "
    python3 - "$OUT/split-describe.json" "$1" <<'PY'
import json, sys
targets = {t["name"]: t for t in json.load(open(sys.argv[1]))["targets"]}
seen, todo = set(), [sys.argv[2]]
while todo:
    name = todo.pop()
    if name in seen: continue
    seen.add(name)
    todo += targets[name].get("target_dependencies", [])
for n in sorted(seen):
    c = targets[n]["type"] == "system-target" or targets[n].get("module_type") != "SwiftTarget"
    print(("C " if c else "  ") + n)
PY
}
no_c_target() { local c; c="$(closure "$1")"; echo "$c"; ! grep -q '^C ' <<<"$c"; }   # no_c_target TARGET
check "NavSyncClient reaches no C target" no_c_target NavSyncClient
check "NavSync reaches no C target" no_c_target NavSync
has_c_target() { ! no_c_target "$1"; }
check "NavSyncRuntime does (the check sees C targets)" has_c_target NavSyncRuntime
no_dependency() { local c; c="$(closure "$1")"; ! grep -qx "  $2" <<<"$c"; }   # no_dependency TARGET ON: not transitively
check "NavSyncClient does not depend on NavSyncServer" no_dependency NavSyncClient NavSyncServer
check "NavSyncRuntime does not depend on NavSyncClient" no_dependency NavSyncRuntime NavSyncClient
# The libuv client: what it reaches is the loop, TLS and deflate, not the server.
c_targets() { closure "$1" | sed -n 's/^C //p' | tr '\n' ' '; }   # c_targets TARGET: its C targets, sorted
for t in NavSyncLibuv NavSyncLibuvTransport navclient; do
    check "$t reaches C targets CSSL, CUV and CZlib only" test "$(c_targets "$t")" = "CSSL CUV CZlib "
    check "...and not NavSyncServer or NavSyncRuntime" bash -c "$(declare -f closure no_dependency); OUT='$OUT'; no_dependency $t NavSyncServer && no_dependency $t NavSyncRuntime"
done
if [ -x .build/release/navclient ]; then
    check "navclient's binary links no jansson, hiredis or curl" bash -c "! ldd .build/release/navclient | grep -E 'jansson|hiredis|curl'"
fi
# What `swift build --target NavSyncClient` compiles: the client and the core, and no
# hub, journal, cluster or access-control source among them.
rm -rf "$OUT/split-client-build"   # a fresh build: an incremental one compiles nothing to look at
swift build --target NavSyncClient -v --scratch-path "$OUT/split-client-build" >"$OUT/split-client-build.log" 2>&1
compiled_sources() { grep -o '/Sources/[A-Za-z]*/[^ ]*\.swift' "$OUT/split-client-build.log" | sort -u; }
check "swift build --target NavSyncClient compiles NavSync and NavSyncClient sources" bash -c \
    "$(declare -f compiled_sources); OUT='$OUT'; compiled_sources | grep -q '/Sources/NavSyncClient/' && compiled_sources | grep -q '/Sources/NavSync/Sequencer/Sequencer.swift'"
check "...and no hub, journal, cluster or auth source (nothing of NavSyncServer or the runtime)" bash -c \
    "$(declare -f compiled_sources); OUT='$OUT'; ! compiled_sources | grep -E '/Sources/(NavSyncServer|NavSyncRuntime)/|Hub|Journal|Cluster|AccessPolicy|JWT'"

copy="$OUT/split-copy"
rm -rf "$copy"
mkdir -p "$copy/Sources/DocSnippets"
cp -r Sources/NavSync Sources/NavSyncClient "$copy/Sources/"
# Every ```swift block of docs/swift.md, in one file; a block importing SwiftUI only
# where SwiftUI exists.
python3 - docs/swift.md "$copy/Sources/DocSnippets/Snippets.swift" <<'PY'
import re, sys
blocks = re.findall(r"```swift\n(.*?)```", open(sys.argv[1]).read(), re.S)
imports, bodies = {"import NavSyncClient"}, []
for b in blocks:
    body = "\n".join(l for l in b.splitlines() if not l.startswith("import "))
    if "import SwiftUI" in b:
        body = "#if canImport(SwiftUI)\nimport SwiftUI\n" + body + "\n#endif"
    imports |= {l for l in b.splitlines() if l.startswith("import ") and l != "import SwiftUI"}
    bodies.append(body)
open(sys.argv[2], "w").write("\n".join(sorted(imports)) + "\n\n" + "\n\n".join(bodies) + "\n")
print(len(blocks), "snippets")
PY
cat >"$copy/Package.swift" <<'SWIFT'
// swift-tools-version:6.0
import PackageDescription
let package = Package(
    name: "navsync-client-only",
    targets: [
        .target(name: "NavSync"),
        .target(name: "NavSyncClient", dependencies: ["NavSync"]),
        .target(name: "DocSnippets", dependencies: ["NavSyncClient"]),
    ],
    swiftLanguageModes: [.v6]
)
SWIFT
check "the client and docs/swift.md's snippets build with no C target in the package" \
    swift build --package-path "$copy" --scratch-path "$OUT/split-build"
echo 'import CJansson' >"$copy/Sources/NavSyncClient/Poison.swift"
fails() { ! "$@"; }
check "...and the build fails once the client imports CJansson" \
    fails swift build --package-path "$copy" --scratch-path "$OUT/split-build"
finish
