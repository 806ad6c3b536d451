/// Sizes showbatch refuses to go past, named once.
package enum Limits {
    /// The largest response body read (SPEC 7); a larger one is the row error 1401.
    package static let responseBody = 16 << 20
    /// The longest record of a data file (a CSV record or a JSON line): one longer is a failed
    /// row (1490) and ends the reading of that file, since nothing in it marks where the next
    /// record would start.
    package static let dataRecord = 16 << 20
    /// The largest manifest read (a generated 50,000-request manifest is about 10 MB).
    package static let manifestFile = 64 << 20
}
