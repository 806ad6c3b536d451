import ShowbatchBasics

extension Manifest {
    /// The headers a request sends, as templates: manifest headers, then the request's (merged
    /// case-insensitively, later wins), HTTP Basic from `auth.username`/`password`, `Content-Type: application/json` with a payload, and a
    /// `vgs-client` header unless the manifest sets one. The same for every row of a request, so
    /// runs compute it once per request.
    package func sendHeaders(for spec: RequestSpec) -> [HeaderField] {
        var headers = mergeHeaders(self.headers, spec.headers)
        if let basicAuth, !headers.contains(where: { $0.name.lowercased() == "authorization" }) {
            headers.append(HeaderField(name: "Authorization", value: Template(literal: basicAuth.headerValue)))
        }
        if spec.payload != nil {
            headers = mergeHeaders(headers, [HeaderField(name: "Content-Type", value: Template(literal: "application/json"))])
        }
        if !headers.contains(where: { $0.name.lowercased() == "vgs-client" }) {
            headers.append(HeaderField(name: "vgs-client", value: Template(literal: "source=showbatch&medium=vgs-show&content=\(showbatchVersion)")))
        }
        return headers
    }
}
