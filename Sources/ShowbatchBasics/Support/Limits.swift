/// Sizes showbatch refuses to go past, named once.
package enum Limits {
    /// The largest response body read; a larger one is the row error 1401.
    package static let responseBody = 16 << 20
    /// The longest record of a data file (a CSV record or a JSON line). A CSV record longer is an
    /// error in the file, found when the manifest is read: nothing in it marks where the next
    /// record would start. A longer JSON line fails alone (1490): its end is the next line break.
    package static let dataRecord = 16 << 20
    /// The most lines a quoted CSV field may span; a quote still open past them is an error in
    /// the file, found when the manifest is read.
    package static let quotedFieldLines = 10_000
    /// The most a request may have before its body: its URL and headers (curl builds the head
    /// of an HTTP/1.1 request in a buffer of 1 MiB, its own headers included). A data row that
    /// makes one longer fails alone (1490), unsent.
    package static let requestHead = 1_000_000
    /// The most of a URL a log line shows.
    package static let loggedURL = 2_000
    /// The largest manifest read (a generated 50,000-request manifest is about 10 MB).
    package static let manifestFile = 64 << 20
}
