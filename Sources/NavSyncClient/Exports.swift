// What an app names besides the navigator (`NavError`, `JSON`, `WebSocketURL`,
// `NavOperation`, `Ack`, `Flow`…) comes with `import NavSyncClient` alone.
@_exported import NavSync
