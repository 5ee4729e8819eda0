import NavSync
extension ErrorCode {
    /// The HTTP API's status for an error of this code (docs/protocol.md, "HTTP").
    public var httpStatus: Int {
        switch self {
        case .badJSON, .badRequest: return 400
        case .forbidden: return 403
        case .unknownSession: return 404
        case .conflict, .busy, .idReused, .guarded, .redirectLoop, .refused: return 409
        case .gone: return 410
        case .tooLarge: return 413
        case .unknownRoute, .badParams, .invalidOp, .notFound: return 422
        case .rateLimited: return 429
        case .full, .unconfirmed, .unavailable: return 503
        case .internal: return 500
        // The clients' own; a server never answers them.
        case .offline, .tls, .rejected, .closed, .reset, .timeout: return 500
        }
    }
}
