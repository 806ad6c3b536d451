import ShowbatchBasics
/// Where a run's bearer token comes from (the manifest's `auth` section).
package struct AuthSpec: Sendable, Equatable {
    /// The source of the token.
    package enum Source: Sendable, Equatable {
        /// OAuth 2.0 client credentials (RFC 6749 section 4.4).
        case clientCredentials(ClientCredentials)
        /// A file holding the token, re-read when it changes (a sidecar, a projected token).
        case tokenFile(String)
    }

    /// What a client-credentials grant needs.
    package struct ClientCredentials: Sendable, Equatable {
        /// The token endpoint.
        package var tokenURL: String
        /// The client's id.
        package var clientID: String
        /// The client's secret: never printed.
        package var clientSecret: String
        /// The `scope` asked for, if any.
        package var scope: String?
        /// The `audience` asked for, if any.
        package var audience: String?
        /// Send the client's id and secret as HTTP Basic (the default, which every server must
        /// support) or in the form body.
        package var inBody = false

        /// Credentials for `tokenURL`.
        package init(tokenURL: String, clientID: String, clientSecret: String) {
            self.tokenURL = tokenURL
            self.clientID = clientID
            self.clientSecret = clientSecret
        }
    }

    /// The header the token goes in, as `Bearer <token>`.
    package var header = "Authorization"
    /// Where tokens come from.
    package var source: Source

    /// A spec with its token from `source`.
    package init(source: Source) {
        self.source = source
    }
}
