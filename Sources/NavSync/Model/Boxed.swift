/// An immutable value kept on the heap, so that a struct holding it pays one pointer
/// inline: history entries share their fields when handed on, and a hub peer's grant,
/// which most peers lack, costs nothing in the table when absent.
final class Boxed<Value: Sendable>: Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
