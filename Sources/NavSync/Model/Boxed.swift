/// An immutable value kept on the heap, so that a struct holding it pays one pointer
/// inline: history entries share their fields when handed on, and a hub peer's grant,
/// which most peers lack, costs nothing in the table when absent.
package final class Boxed<Value: Sendable>: Sendable {
    package let value: Value
    package init(_ value: Value) { self.value = value }
}
