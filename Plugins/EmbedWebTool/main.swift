import Foundation

// embed-web OUT NAME=FILE...: writes OUT, a Swift file with one `static let NAME` per
// FILE in an extension of `WebPage`, each the file's text as a raw string literal.
// Run by EmbedWebPlugin at build time; edit the files in web/, never OUT.

let arguments = CommandLine.arguments.dropFirst()
guard let output = arguments.first, arguments.count > 1 else {
    FileHandle.standardError.write(Data("usage: embed-web OUT NAME=FILE...\n".utf8))
    exit(2)
}
var swift = "// Generated at build time by EmbedWebPlugin from web/: edit those files.\nextension WebPage {\n"
for pair in arguments.dropFirst() {
    guard let eq = pair.firstIndex(of: "=") else {
        FileHandle.standardError.write(Data("embed-web: '\(pair)' is not NAME=FILE\n".utf8))
        exit(2)
    }
    let name = pair[..<eq], path = String(pair[pair.index(after: eq)...])
    guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
        FileHandle.standardError.write(Data("embed-web: cannot read \(path) as UTF-8\n".utf8))
        exit(1)
    }
    // A raw literal whose delimiter the text never contains: one more '#' than its
    // longest run after a quote.
    var hashes = "#"
    while text.contains("\"" + hashes) { hashes += "#" }
    // A multi-line literal drops the newline before its closing delimiter: add one back.
    swift += "    static let \(name) = \(hashes)\"\"\"\n\(text)\n\"\"\"\(hashes)\n"
}
swift += "}\n"
do { try Data(swift.utf8).write(to: URL(fileURLWithPath: output), options: .atomic) } catch {
    FileHandle.standardError.write(Data("embed-web: cannot write \(output): \(error)\n".utf8))
    exit(1)
}
