/// Sizes showbatch refuses to go past, named once.
public enum Limits {
    /// The largest response body read (SPEC 7); a larger one is the row error 1401.
    public static let responseBody = 16 << 20
    /// The largest manifest read (a generated 50,000-request manifest is about 10 MB).
    public static let manifestFile = 64 << 20
}
