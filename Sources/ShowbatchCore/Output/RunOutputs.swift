/// The files of one run: an output and its journal per target, opened together and then either
/// committed together (renamed into place, journals removed) or abandoned together (left as
/// `.partial` with their journals, for `--resume`).
///
/// One owner, so that `Runner.run` has one cleanup path, whatever ends the run.
final class RunOutputs {
    /// The outputs, by target.
    let files: [OutputFile]
    /// The journals, by target; nil for standard output.
    let journals: [Journal?]
    private var closed = false

    /// Opens every target's journal, then its output. Journals come first: taking a journal's
    /// lock is what keeps a second run off the output. On failure what was opened is closed again.
    init(targets: [OutputTarget], inputHash: UInt64, shard: Shard?, resume: Bool) throws(RunError) {
        var files: [OutputFile] = []
        var journals: [Journal?] = []
        do {
            for target in targets {
                guard target.path != "-" else {
                    journals.append(nil)
                    continue
                }
                let header = Journal.header(manifestHash: inputHash, shard: shard, output: target.path,
                                            format: target.format, labels: target.labels)
                journals.append(try Journal(output: target.path, header: header, resume: resume))
            }
            for target in targets {
                files.append(try OutputFile(path: target.path, format: target.format, labels: target.labels,
                                            escapeFormulas: target.escapeFormulas))
            }
        } catch {
            files.forEach { $0.abandon() }
            journals.forEach { $0?.close() }
            throw error
        }
        self.files = files
        self.journals = journals
    }

    /// Ends every output and renames it into place, then removes the journals. If an output
    /// cannot be finished, it and the ones after it stay `.partial` and every journal is kept.
    func commit() throws(RunError) {
        guard !closed else { return }
        closed = true
        for (index, file) in files.enumerated() {
            do {
                try file.finish()
            } catch {
                files[index...].forEach { $0.abandon() }
                journals.forEach { $0?.close() }
                throw error
            }
        }
        journals.forEach { $0?.remove() }
    }

    /// Leaves every output as `.partial` and keeps every journal (an interrupted or failed run).
    func abandon() {
        guard !closed else { return }
        closed = true
        files.forEach { $0.abandon() }
        journals.forEach { $0?.close() }
    }
}
