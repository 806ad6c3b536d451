import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

private func dialect(escapeFormulas: Bool = false, delimiter: Character = ",", quoteAll: Bool = false, crlf: Bool = false,
                     header: Bool = true) -> CSVDialect {
    var dialect = CSVDialect()
    dialect.escapeFormulas = escapeFormulas
    dialect.delimiter = delimiter.asciiValue!
    dialect.quoteAll = quoteAll
    dialect.crlf = crlf
    dialect.header = header
    return dialect
}

@Suite struct CSVCellTests {
    @Test(arguments: [
        ("plain", false, "plain"), ("a,b", false, #""a,b""#), (#"say "hi""#, false, #""say ""hi""""#), ("two\nlines", false, "\"two\nlines\""),
        ("cr\r", false, "\"cr\r\""), ("=1+1", true, "'=1+1"), ("=1+1", false, "=1+1"), ("-1,5", true, #""'-1,5""#),
        (#"@"x""#, true, #""'@""x""""#), ("+", true, "'+"), ("", true, ""), ("café", false, "café"),
    ])
    func cells(text: String, escapeFormulas: Bool, expected: String) {
        var out: [UInt8] = []
        RowEncoding.appendCSVCell(text, dialect(escapeFormulas: escapeFormulas), to: &out)
        #expect(String(decoding: out, as: UTF8.self) == expected)
    }

    /// OWASP's CSV injection list, less the plain numbers a spreadsheet reads as numbers.
    @Test(arguments: [
        ("-12.50", "-12.50"), ("+5", "+5"), ("1e3", "1e3"), ("-1E-3", "-1E-3"), ("+.5", "+.5"), ("-0", "-0"), ("12", "12"),
        ("-", "'-"), ("+-1", "'+-1"), ("-1e", "'-1e"), ("-12.50.1", "'-12.50.1"), ("-2+3", "'-2+3"), ("+A1", "'+A1"),
        ("-cmd|' /C calc'!A0", "'-cmd|' /C calc'!A0"), ("=HYPERLINK(\"x\")", "\"'=HYPERLINK(\"\"x\"\")\""), ("@SUM(A1)", "'@SUM(A1)"),
        ("\tx", "'\tx"), ("\r=1", "\"'\r=1\""), ("a=1", "a=1"), ("1-2", "1-2"),
    ])
    func formulasAreEscapedAndNumbersAreNot(text: String, expected: String) {
        var out: [UInt8] = []
        RowEncoding.appendCSVCell(text, dialect(escapeFormulas: true), to: &out)
        #expect(String(decoding: out, as: UTF8.self) == expected)
    }

    @Test func aLineHasTheFixedColumnsThenTheLabels() {
        let row = ResultRow(ordinal: 0, request: "r,1", status: .partial, httpStatus: 200, attempts: 2,
                            labels: [("a", "x"), ("b", nil)],
                            errors: [RowError(code: .fieldNotFound, label: "b", message: "label b: no value at json.b")])
        var out: [UInt8] = []
        RowEncoding.csvLine(row, .standard(format: .csv, labels: ["b", "a", "c"], csv: CSVDialect()), to: &out)
        #expect(String(decoding: out, as: UTF8.self) == "\"r,1\",partial,200,2,1403 field_not_found: label b: no value at json.b,,x,\n")
    }

    /// Each dialect option on the same row and header.
    @Test(arguments: [
        (dialect(), "request,status,http_status,attempts,error,a;b\nr;1,failed,,0,\"1501 network: x, y\",v;w\n"),
        (dialect(delimiter: ";"), "request;status;http_status;attempts;error;\"a;b\"\n\"r;1\";failed;;0;1501 network: x, y;\"v;w\"\n"),
        (dialect(delimiter: "\t"), "request\tstatus\thttp_status\tattempts\terror\ta;b\nr;1\tfailed\t\t0\t1501 network: x, y\tv;w\n"),
        (dialect(delimiter: "|"), "request|status|http_status|attempts|error|a;b\nr;1|failed||0|1501 network: x, y|v;w\n"),
        (dialect(crlf: true), "request,status,http_status,attempts,error,a;b\r\nr;1,failed,,0,\"1501 network: x, y\",v;w\r\n"),
        (dialect(header: false), "r;1,failed,,0,\"1501 network: x, y\",v;w\n"),
        (dialect(quoteAll: true), "\"request\",\"status\",\"http_status\",\"attempts\",\"error\",\"a;b\"\n\"r;1\",\"failed\",\"\",\"0\",\"1501 network: x, y\",\"v;w\"\n"),
    ])
    func dialects(csv: CSVDialect, expected: String) {
        let row = ResultRow(ordinal: 0, request: "r;1", status: .failed, httpStatus: nil, attempts: 0, labels: [("a;b", "v;w")],
                            errors: [RowError(code: .network, label: nil, message: "x, y")])
        let layout = OutputLayout.standard(format: .csv, labels: ["a;b"], csv: csv)
        var out = RowEncoding.csvHeader(layout)
        RowEncoding.csvLine(row, layout, to: &out)
        #expect(String(decoding: out, as: UTF8.self) == expected)
    }
}
