// What an app names besides the navigator (`NavError`, `JSON`, `WebSocketURL`,
// `Operation`, `Ack`, `Flow`…) comes with `import NavSyncClient` alone.
@_exported import NavSync
