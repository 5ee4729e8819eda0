/// RFC 7386 JSON Merge Patch, as `update` applies it to an entry's `data`.
extension JSON {
    /// RFC 7386 section 2: an object patch merges key by key, `null` deletes a key, and
    /// anything else replaces the target whole.
    public func mergePatched(with patch: JSON) -> JSON {
        guard case .object(let patchObject) = patch else { return patch }
        var result = objectValue ?? JSONObject()
        for (key, value) in patchObject {
            if value.isNull {
                result[key] = nil
            } else {
                result[key] = (result[key] ?? .null).mergePatched(with: value)
            }
        }
        return .object(result)
    }
}
