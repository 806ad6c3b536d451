import Foundation
import ShowbatchBasics
import ShowbatchYAML

// What names the night in a manifest: `${run.date}` and `${run.seq}` in output paths, and the
// header and trailer lines around an output's rows.
extension ManifestDecoder {
    /// The text of an output's path: environment references resolved, `${run.date}` and
    /// `${run.seq}` kept for the run to fill in, in the file name only (the folder holds the
    /// night's sequence state, so it must be one folder every night).
    /// `keeping` are further references kept as written (`${file}`).
    mutating func nightText(_ node: Node, _ what: @autoclosure () -> String, keeping: String? = nil) -> String? {
        guard var raw = rawText(node, what()) else { return nil }
        let keptMark = "\u{F1000}"
        if let keeping { raw = raw.replacingOccurrences(of: keeping, with: keptMark) }
        guard let (resolved, kept) = holdingRunReferences(raw, at: node, what(), parse: NightName.reference) else { return nil }
        var out = ""
        for scalar in resolved.unicodeScalars {
            if let index = Self.heldIndex(scalar, count: kept.count) {
                out += kept[index].text
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        if let keeping { out = out.replacingOccurrences(of: keptMark, with: keeping) }
        if let slash = out.lastIndex(of: "/"), out[..<slash].contains("${run.") {
            problem(node.mark, "\(what()) may name the night (${run.date}, ${run.seq}) in its file name only: the folder keeps the night's sequence state, so it is the same folder every night")
            return nil
        }
        return out
    }

    /// `raw` with its environment references resolved while each `${run.…}` is held aside (each
    /// parsed by `parse`): the resolved text, a held reference standing in it as one private-use
    /// character (`heldIndex`), and what each held reference is. A problem is reported at `node`.
    mutating func holdingRunReferences<Held>(_ raw: String, at node: Node, _ what: @autoclosure () -> String,
                                             parse: (Substring) -> Result<Held, TemplateSyntaxError>) -> (text: String, held: [Held])? {
        let found = NightName.runReferences(in: raw)
        var text = ""
        var last = raw.startIndex
        var held: [Held] = []
        for (range, name) in found {
            text += raw[last..<range.lowerBound]
            switch name.flatMap(parse) {
            case .success(let reference):
                text.unicodeScalars.append(Unicode.Scalar(0xF0000 + UInt32(held.count))!)
                held.append(reference)
            case .failure(let error):
                problem(node.mark, "\(what()): \(error.message)")
                return nil
            }
            last = range.upperBound
        }
        text += raw[last...]
        guard let resolved = resolvingEnvironment(text, at: node, what()) else { return nil }
        // The stand-ins must be exactly the references held: an environment value holding such a
        // character would otherwise be taken for one.
        let standIns = resolved.unicodeScalars.filter { (0xF0000..<0xF1000).contains($0.value) }.map { Int($0.value - 0xF0000) }
        guard standIns == Array(held.indices) else {
            problem(node.mark, "\(what()): an environment value holds a character of the private use area (U+F0000 to U+F0FFF), which showbatch cannot take here")
            return nil
        }
        return (resolved, held)
    }

    /// Which held reference `scalar` stands for (`holdingRunReferences`), if it is one.
    static func heldIndex(_ scalar: Unicode.Scalar, count: Int) -> Int? {
        scalar.value >= 0xF0000 && Int(scalar.value - 0xF0000) < count ? Int(scalar.value - 0xF0000) : nil
    }

    /// `output.header` and `output.trailer`: the file's envelope, for files that are lines of rows.
    mutating func envelope(_ map: KnownKeys, into spec: inout OutputSpec, _ context: String, path: String) {
        for key in ["header", "trailer"] {
            guard let node = map[key], let line = envelopeLine(node, "\(context).\(key)") else { continue }
            if spec.resolvedFormat == .json {
                problem(node.mark, "\(context).\(key) is for CSV and JSON Lines outputs: a JSON file is one array, and a line outside it would make it invalid JSON")
            } else if line.numbers && !NightName.numbers(path) {
                problem(node.mark, "\(context).\(key) writes ${run.seq}, the number of the output's nights, but \(context).path has no ${run.seq}; put it in the file name too")
            } else if key == "header" {
                spec.header = line
            } else {
                spec.trailer = line
            }
        }
    }

    /// `output.header` or `output.trailer`: one line of text and references to the file's totals
    /// and the night; `$${` writes a literal `${`.
    mutating func envelopeLine(_ node: Node, _ what: String) -> EnvelopeLine? {
        guard let raw = rawText(node, what) else { return nil }
        guard let (resolved, held) = holdingRunReferences(raw, at: node, what, parse: EnvelopeLine.reference) else { return nil }
        var parts: [EnvelopeLine.Part] = []
        var text = ""
        for scalar in resolved.unicodeScalars {
            if let index = Self.heldIndex(scalar, count: held.count) {
                if !text.isEmpty { parts.append(.text(text)) }
                text = ""
                parts.append(held[index])
            } else {
                text.unicodeScalars.append(scalar)
            }
        }
        if !text.isEmpty { parts.append(.text(text)) }
        // C0 and C1 controls (NEL among them) and the Unicode line and paragraph separators: each
        // would end the line for some reader.
        if resolved.unicodeScalars.contains(where: { ($0.value < 0x20 && $0 != "\t") || (0x7F...0x9F).contains($0.value) || $0.value == 0x2028 || $0.value == 0x2029 }) {
            problem(node.mark, "\(what) must be one line: it holds a line break or a control character")
            return nil
        }
        if parts.isEmpty {
            problem(node.mark, "\(what) is empty; give the line to write, or leave it out")
            return nil
        }
        return EnvelopeLine(parts: parts, mark: node.mark)
    }
}
