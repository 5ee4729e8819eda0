import Testing
@testable import NavSync
