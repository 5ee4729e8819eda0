#!/usr/bin/env bash
# The names an app sees: no public top-level name of NavSync or NavSyncClient is one
# that Foundation, Observation or SwiftUI has too, so an app importing them together
# writes each without a module prefix (docs/swift.md, "Add the package").
#  - Foundation's and Observation's names come from their symbol graphs here;
#  - SwiftUI is not on Linux: its top-level types are listed below (Apple's docs).
# Regression: `Operation` was ambiguous beside Foundation, `Alert` and `Link` beside SwiftUI.
. "$(dirname "$0")/lib.sh"
cd "$ROOT"

GRAPHS="$OUT/names-graphs"
rm -rf "$GRAPHS"; mkdir -p "$GRAPHS"
swift build --target NavSyncClient >"$OUT/names-build.log" 2>&1
MODULES="$(swift build --show-bin-path)/Modules"
TARGET="$(uname -m)-unknown-linux-gnu"
extract() {   # extract MODULE [-I DIR]
    local m="$1"; shift
    swift symbolgraph-extract -module-name "$m" -target "$TARGET" -minimum-access-level public -output-dir "$GRAPHS" "$@" >>"$OUT/names-build.log" 2>&1
}
extract NavSync -I "$MODULES"
extract NavSyncClient -I "$MODULES"
extract Foundation
extract Observation

SWIFTUI="Alert Anchor Angle AngularGradient Animation AnyGesture AnyLayout AnyShape AnyTransition AnyView App
AppStorage AsyncImage Axis Bindable Binding BlendMode Button ButtonRole Canvas Capsule Circle Color ColorPicker
CommandGroup CommandMenu Commands ContainerRelativeShape ContentUnavailableView ControlGroup DatePicker
DisclosureGroup Divider DocumentGroup DragGesture EditButton EditMode Edge EdgeInsets Ellipse EmptyView
Environment EnvironmentObject EnvironmentValues FetchRequest FocusState FocusedValue Font ForEach Form Gauge
GeometryReader Gesture Gradient Grid GridRow Group GroupBox HStack Image Label LabeledContent Layout LazyHGrid
LazyHStack LazyVGrid LazyVStack LinearGradient Link List LongPressGesture MagnifyGesture Menu Namespace
NavigationLink NavigationPath NavigationSplitView NavigationStack NavigationView ObservedObject OutlineGroup
Path PasteButton Picker PresentationDetent PresentationMode ProgressView RadialGradient Rectangle RenameButton
RotateGesture RoundedRectangle Scene ScenePhase SceneStorage ScrollView ScrollViewReader SecureField Section
Settings Shape ShareLink Slider Spacer State StateObject Stepper Subview Tab TabSection TabView Table
TableColumn TapGesture Text TextEditor TextField TimelineView Toggle ToolbarItem ToolbarItemGroup Transaction
Transition UnitPoint VStack View ViewBuilder Window WindowGroup ZStack"

clashes() {
    python3 - "$GRAPHS" "$SWIFTUI" <<'PY'
import json, os, sys
graphs, swiftui = sys.argv[1], set(sys.argv[2].split())
def top(module):
    names = set()
    for f in os.listdir(graphs):
        # A module's own graph and its extensions of others (Foundation@Swift…).
        if f == module + ".symbols.json" or f.startswith(module + "@"):
            for s in json.load(open(os.path.join(graphs, f)))["symbols"]:
                if len(s["pathComponents"]) == 1 and not s["kind"]["identifier"].startswith("swift.func.op"):
                    names.add(s["pathComponents"][0])
    return names
ours = {m: top(m) for m in ("NavSync", "NavSyncClient")}
theirs = {"Foundation": top("Foundation"), "Observation": top("Observation"), "SwiftUI": swiftui}
assert len(ours["NavSync"]) > 50 and len(theirs["Foundation"]) > 300, "the symbol graphs are empty"
bad = [f"{m}.{n} clashes with {o}" for m, names in ours.items() for o, other in theirs.items() for n in sorted(names & other)]
print("\n".join(bad) or f"no clash: {sum(map(len, ours.values()))} names of NavSync and NavSyncClient")
sys.exit(1 if bad else 0)
PY
}
check "no public name of NavSync or NavSyncClient is one Foundation, Observation or SwiftUI has" clashes
# The check fails when it should: a name Foundation has, in a copy of the graph.
fake() {
    python3 - "$GRAPHS/NavSyncClient.symbols.json" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))
g["symbols"].append({"pathComponents": ["Operation"], "kind": {"identifier": "swift.struct"}})
json.dump(g, open(sys.argv[1], "w"))
PY
    ! clashes
}
check "...and a name Foundation has is caught (Operation)" fake
finish
