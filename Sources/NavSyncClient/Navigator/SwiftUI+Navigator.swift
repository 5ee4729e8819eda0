#if canImport(SwiftUI)
import SwiftUI
import NavSync

// The SwiftUI glue, as thin as it can be: each `Binding` only reads and writes a
// property of `StackBinding`, `TabsBinding` or `Navigator`, whose rules are tested on
// Linux without SwiftUI (NavigatorTests).

@available(iOS 17, macOS 14, tvOS 17, watchOS 10, visionOS 1, *)
extension StackBinding {
    /// `NavigationStack(path: home.pathBinding)`.
    public var pathBinding: Binding<[Route]> { Binding(get: { path }, set: { path = $0 }) }

    /// `.sheet(isPresented: home.isSheetPresented) { … home.sheet … }`; false dismisses.
    public var isSheetPresented: Binding<Bool> {
        Binding(get: { sheet != nil }, set: { if !$0 { sheet = nil } })
    }

    /// `.fullScreenCover(isPresented: home.isCoverPresented) { … }`; false dismisses.
    public var isCoverPresented: Binding<Bool> {
        Binding(get: { cover != nil }, set: { if !$0 { cover = nil } })
    }
}

@available(iOS 17, macOS 14, tvOS 17, watchOS 10, visionOS 1, *)
extension StackBinding where Route: Identifiable {
    /// `.sheet(item: home.sheetItem) { route in … }`: the sheet's route; nil dismisses.
    public var sheetItem: Binding<Route?> { Binding(get: { sheet }, set: { sheet = $0 }) }

    /// `.fullScreenCover(item: home.coverItem) { route in … }`; nil dismisses.
    public var coverItem: Binding<Route?> { Binding(get: { cover }, set: { cover = $0 }) }
}

@available(iOS 17, macOS 14, tvOS 17, watchOS 10, visionOS 1, *)
extension TabsBinding where Route: Hashable {
    /// `TabView(selection: main.selectionBinding)`.
    public var selectionBinding: Binding<Route?> { Binding(get: { selection }, set: { selection = $0 }) }
}

@available(iOS 17, macOS 14, tvOS 17, watchOS 10, visionOS 1, *)
extension Navigator {
    /// `.alert(…, isPresented: nav.isAlertPresented)`; false answers it with its
    /// cancel button.
    public var isAlertPresented: Binding<Bool> {
        Binding(get: { self.presentedAlert != nil }, set: { if !$0 { self.presentedAlert = nil } })
    }
}

@available(iOS 17, macOS 14, tvOS 17, watchOS 10, visionOS 1, *)
extension View {
    /// Connects the navigator while the view is shown (it keeps trying when the network
    /// is not there: the view shows the stored state and navigates meanwhile), and
    /// reports each revision the view has rendered, so the other devices see what this
    /// one shows.
    public func navsync(_ navigator: Navigator) -> some View {
        task { try? await navigator.connect() }
            .onChange(of: navigator.rev, initial: true) { _, rev in navigator.renderedRevision = rev }
    }
}
#endif
