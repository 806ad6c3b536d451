import Foundation
import Testing
import TestSupport
import ShowbatchBasics
import ShowbatchYAML
@testable import showbatch

/// One YAML document of `samples/kubernetes`, parsed by showbatch's own YAML layer.
private struct KubernetesObject {
    let file: String
    let root: Node

    var kind: String { root.value(forKey: "kind")?.text ?? "" }
    var name: String { root.value(forKey: "metadata")?.value(forKey: "name")?.text ?? "" }

    /// The value at a dotted path of mapping keys.
    func at(_ path: String) -> Node? { root.at(path) }
}

extension Node {
    /// The value at a dotted path of mapping keys (`spec.jobTemplate.spec`).
    fileprivate func at(_ path: String) -> Node? {
        var node: Node? = self
        for key in path.split(separator: ".") { node = node?.value(forKey: String(key)) }
        return node
    }

    fileprivate var items: [Node] { sequence.map(Array.init) ?? [] }

    fileprivate var integer: Int? { if case .int(let value) = value { return value } else { return nil } }
}

/// The sample folder: every `.yaml`, `.yml` and `.yaml.example` file, in and under it (tests run
/// from the repository root).
private let sampleFolder = repository + "/samples/kubernetes"

private func sampleFiles() throws -> [String] {
    try FileManager.default.subpathsOfDirectory(atPath: sampleFolder)
        .filter { $0.hasSuffix(".yaml") || $0.hasSuffix(".yml") || $0.hasSuffix(".yaml.example") }.sorted()
}

/// The documents of a multi-document file: ShowbatchYAML reads one document per source (a
/// manifest is one), so the file is split at lines that are exactly `---`; a part that holds only
/// comments and blank lines is no document.
private func documents(_ text: String) -> [(firstLine: Int, text: String)] {
    var parts: [(Int, String)] = []
    var current: [Substring] = []
    var start = 1
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
    for (index, line) in lines.enumerated() {
        if line == "---" {
            parts.append((start, current.joined(separator: "\n") + "\n"))
            current = []
            start = index + 2
        } else {
            current.append(line)
        }
    }
    parts.append((start, current.joined(separator: "\n")))
    return parts.filter { part in
        part.1.split(separator: "\n").contains { line in
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            return !trimmed.isEmpty && !trimmed.hasPrefix("#")
        }
    }
}

private func sampleObjects() throws -> [KubernetesObject] {
    var objects: [KubernetesObject] = []
    for file in try sampleFiles() {
        let text = try String(contentsOfFile: sampleFolder + "/" + file, encoding: .utf8)
        for document in documents(text) {
            do {
                let root = try YAMLParser.parse(SourceFile(name: "\(file) (document from line \(document.firstLine))", text: document.text))
                objects.append(KubernetesObject(file: file, root: root))
            } catch {
                Issue.record("\(error.description)")
            }
        }
    }
    return objects
}

/// A Job's spec: a CronJob's job template, or a Job's own.
private func jobSpec(_ object: KubernetesObject) -> Node? {
    switch object.kind {
    case "CronJob": return object.at("spec.jobTemplate.spec")
    case "Job": return object.at("spec")
    default: return nil
    }
}

@Suite struct KubernetesSampleTests {
    @Test func everyDocumentParsesAndNamesItsKindAndName() throws {
        let objects = try sampleObjects()
        for object in objects {
            #expect(object.root.mapping != nil, "\(object.file): a document is a mapping")
            #expect(object.root.value(forKey: "apiVersion")?.text.isEmpty == false, "\(object.file): apiVersion")
            #expect(!object.kind.isEmpty, "\(object.file): kind")
            #expect(!object.name.isEmpty, "\(object.file): metadata.name")
        }
        let names = Set(objects.map { "\($0.kind)/\($0.name)" })
        for required in ["ConfigMap/showbatch-nightly", "ServiceAccount/showbatch", "CronJob/showbatch-shards",
                         "CronJob/showbatch-merge", "PersistentVolumeClaim/showbatch-data", "Secret/showbatch-reveal",
                         "ConfigMap/showbatch-recipients", "Secret/showbatch-state"] {
            #expect(names.contains(required), "\(required)")
        }
        #expect(names.count == objects.count, "no object is declared twice")
    }

    @Test func jobsSayHowTheyFailAndWhenTheyStop() throws {
        let objects = try sampleObjects()
        let jobs = objects.filter { jobSpec($0) != nil }
        #expect(jobs.count == 2)
        for object in jobs {
            let job = try #require(jobSpec(object))
            let what = "\(object.kind)/\(object.name)"
            #expect((job.at("activeDeadlineSeconds")?.integer ?? 0) > 0, "\(what): activeDeadlineSeconds")
            let pod = try #require(job.at("template.spec"))
            #expect(pod.at("restartPolicy")?.text == "Never", "\(what): podFailurePolicy needs restartPolicy Never")
            let containers = pod.at("containers")?.items ?? []
            let initContainers = pod.at("initContainers")?.items ?? []
            let main = try #require(containers.first, "\(what): a container")
            for container in containers + initContainers {
                #expect(container.at("image")?.text == main.at("image")?.text, "\(what): one image for every container")
            }
            #expect(main.at("image")?.text.isEmpty == false, "\(what): the container image")
            // What each exit code of the showbatch container does.
            var actions: [Int: String] = [:]
            for rule in job.at("podFailurePolicy.rules")?.items ?? [] {
                guard let codes = rule.at("onExitCodes"), codes.at("containerName")?.text == main.at("name")?.text,
                      codes.at("operator")?.text == "In" else { continue }
                for value in codes.at("values")?.items ?? [] {
                    if let code = value.integer, actions[code] == nil { actions[code] = rule.at("action")?.text }
                }
            }
            let arguments = (main.at("args")?.items ?? []).map(\.text)
            let stops: Set<String> = ["FailJob", "FailIndex"]
            // Every exit code the command has is treated deliberately, and no other is named.
            if arguments.first == "run" {
                // 1 (rows failed, the file is written) would reveal the shard again for nothing.
                #expect(actions[1].map(stops.contains) == true, "\(what): exit 1 is not retried (\(actions[1] ?? "no rule"))")
                // 2: fix the manifest; every retry would fail the same way.
                #expect(actions[2] == "FailJob", "\(what): exit 2 fails the Job (\(actions[2] ?? "no rule"))")
                // 3 (runtime), 4 (the endpoint or the credentials: retried with the Job's backoff) and
                // 130 (interrupted) resume from the journal.
                for code in [3, 4, 130] {
                    #expect(actions[code] == "Count", "\(what): exit \(code) is retried (\(actions[code] ?? "no rule"))")
                }
                #expect(Set(actions.keys) == [1, 2, 3, 4, 130], "\(what): rules for \(actions.keys.sorted())")
            } else {
                #expect(arguments.first == "merge", "\(what): runs showbatch run or showbatch merge")
                // merge sends nothing: it never exits 4; its 1 (the night beyond max_failed) would
                // merge the same rows again; its 5 (the merged file's delivery failed) is retried,
                // and the retry delivers without revealing anything; its 6 (a delivery only a
                // person can fix) is not.
                #expect(actions == [1: "FailJob", 2: "FailJob", 3: "Count", 5: "Count", 6: "FailJob", 130: "Count"], "\(what): \(actions)")
            }
            if actions.values.contains("FailIndex") {
                #expect(job.at("backoffLimitPerIndex")?.integer != nil && job.at("completionMode")?.text == "Indexed",
                        "\(what): FailIndex needs backoffLimitPerIndex in an Indexed Job")
            }
            // Pods that run at the same time share the volume: it must be ReadWriteMany.
            if (job.at("parallelism")?.integer ?? 1) > 1 {
                for volume in pod.at("volumes")?.items ?? [] {
                    guard let claim = volume.at("persistentVolumeClaim.claimName")?.text else { continue }
                    let pvc = try #require(objects.first { $0.kind == "PersistentVolumeClaim" && $0.name == claim }, "\(what): claim \(claim)")
                    #expect(pvc.at("spec.accessModes")?.items.map(\.text) == ["ReadWriteMany"], "\(what): claim \(claim) is ReadWriteMany")
                }
            }
        }
    }

    /// The shard and merge steps are command lines the real parser accepts, and they agree.
    @Test func theShardAndMergeStepsAreShowbatchCommandLines() throws {
        let objects = try sampleObjects()
        let shards = try #require(objects.first { $0.kind == "CronJob" && $0.name == "showbatch-shards" })
        let merge = try #require(objects.first { $0.kind == "CronJob" && $0.name == "showbatch-merge" })
        let shardJob = try #require(jobSpec(shards))
        let shardArguments = (shardJob.at("template.spec.containers")?.items.first?.at("args")?.items ?? []).map(\.text)
        guard case .run(let run) = try ArgumentParser.parse(shardArguments) else {
            Issue.record("the shard step is not showbatch run: \(shardArguments)")
            return
        }
        let count = try #require(run.shard.flatMap { $0.hasPrefix("auto/") ? Int($0.dropFirst(5)) : nil }, "--shard auto/N")
        #expect(shardJob.at("completions")?.integer == count && shardJob.at("parallelism")?.integer == count)
        #expect(shardJob.at("completionMode")?.text == "Indexed")

        let mergePod = try #require(jobSpec(merge)?.at("template.spec"))
        let mergeArguments = (mergePod.at("containers")?.items.first?.at("args")?.items ?? []).map(\.text)
        guard case .merge(let arguments) = try ArgumentParser.parse(mergeArguments) else {
            Issue.record("the merge step is not showbatch merge: \(mergeArguments)")
            return
        }
        #expect(arguments.manifest == run.manifest)
        #expect(arguments.shards == count)
        #expect(arguments.output == run.options.output && arguments.format == run.options.format)
        #expect(merge.at("spec.schedule")?.text == shards.at("spec.schedule")?.text)
        #expect(merge.at("spec.timeZone")?.text == shards.at("spec.timeZone")?.text)
        // The gate waits for the files the shards write.
        var gate: [String: String] = [:]
        for variable in mergePod.at("initContainers")?.items.first?.at("env")?.items ?? [] {
            gate[variable.at("name")?.text ?? ""] = variable.at("value")?.text
        }
        #expect(gate["SHARDS"] == String(count))
        let config = try #require(objects.first { $0.kind == "ConfigMap" && $0.name == "showbatch-nightly" })
        let manifest = try YAMLParser.parse(SourceFile(name: "manifest.yaml", text: config.at("data")?.value(forKey: "manifest.yaml")?.text ?? ""))
        #expect(gate["OUTPUT"] == manifest.at("output.path")?.text)
    }

    /// The merge pod's gate, run by bash as the pod runs it: it waits while a shard file of the
    /// night is missing, and lets the merge go once each is there, whatever number the night has
    /// (`${run.seq}` in the name is the shards' to fill in).
    @Test(arguments: ["customers-revealed-${run.date}.csv.pgp", "ACME_${run.date}_${run.seq:6}.csv.pgp"])
    func theGateWaitsForEachShardOfTheNight(output: String) async throws {
        let objects = try sampleObjects()
        let merge = try #require(objects.first { $0.kind == "CronJob" && $0.name == "showbatch-merge" }.flatMap(jobSpec))
        let gate = try #require(merge.at("template.spec.initContainers")?.items.first)
        let script = try #require(gate.at("args")?.items.first?.text)
        let work = Workspace(["gate.sh": script])
        defer { work.remove() }
        let minute = Int(Date().timeIntervalSince1970) / 60
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyyMMdd"
        formatter.timeZone = TimeZone(identifier: "UTC")
        let night = formatter.string(from: Date(timeIntervalSince1970: Double(minute * 60)))
        let name = output.replacingOccurrences(of: "${run.date}", with: night).replacingOccurrences(of: "${run.seq:6}", with: "000042")
            .replacingOccurrences(of: ".csv.pgp", with: "")
        work.write("out/\(name)-shard-0.csv.sealed", "")
        /// The gate's exit status; nil when it was still waiting at the end of `seconds` (killed).
        func runGate(seconds: Int) throws -> Int32? {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
            process.arguments = ["-s", "KILL", String(seconds), "/bin/bash", work.path + "/gate.sh"]
            process.environment = ["SHARDS": "2", "OUTPUT": work.path + "/out/" + output, "JOB_NAME": "showbatch-merge-\(minute)",
                                   "PATH": "/usr/bin:/bin"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            let killed = process.terminationReason == .uncaughtSignal || process.terminationStatus == 128 + SIGKILL
            return killed ? nil : process.terminationStatus
        }
        // Shard 1 is missing: still waiting when the time is up.
        let waiting = try runGate(seconds: 2)
        #expect(waiting == nil, "\(String(describing: waiting))")
        work.write("out/\(name)-shard-1.csv.sealed", "")
        #expect(try runGate(seconds: 20) == 0)
    }

    /// The sample as the cluster runs it, on this machine: the ConfigMap's manifest with /data in a
    /// work folder, each pod's command line with its JOB_COMPLETION_INDEX (against the emulator),
    /// then the merge step's: the merged file is the unsharded run's, byte for byte.
    @Test func theShardsAndTheMergeStepWriteWhatOneRunWrites() async throws {
        let objects = try sampleObjects()
        let config = try #require(objects.first { $0.kind == "ConfigMap" && $0.name == "showbatch-nightly" })
        let shardJob = try #require(objects.first { $0.kind == "CronJob" && $0.name == "showbatch-shards" }.flatMap(jobSpec))
        let mergeJob = try #require(objects.first { $0.kind == "CronJob" && $0.name == "showbatch-merge" }.flatMap(jobSpec))
        let work = Workspace()
        let server = try SFTPServer()
        defer { work.remove(); server.remove() }
        let text = try #require(config.at("data")?.value(forKey: "manifest.yaml")?.text)
        // The recipient is the test's key, whose secret key decrypts what the pods write; the
        // processor's server is the test's sshd, the merge pod's Secret its client key.
        work.write("config/manifest.yaml", text.replacingOccurrences(of: "/data/", with: work.path + "/")
            .replacingOccurrences(of: "/keys/", with: work.path + "/keys/")
            .replacingOccurrences(of: "sftp://sftp.processor.example:22/uploads/", with: server.url)
            .replacingOccurrences(of: "user: acme-merchant", with: "user: \(server.user)")
            .replacingOccurrences(of: "/secrets/sftp/id_ed25519", with: server.clientKey)
            .replacingOccurrences(of: "/config/known_hosts", with: server.knownHosts)
            .replacingOccurrences(of: "/etc/showbatch/secrets/", with: work.path + "/secrets/"))
        work.write("keys/processor.asc", try String(contentsOfFile: GPGFixture.shared.alice.file, encoding: .utf8))
        work.write("in/customers.csv", try String(contentsOfFile: repository + "/samples/data/customers.csv", encoding: .utf8))
        // What the Secrets hold, by name and key.
        let secrets = ["showbatch-reveal/token": "not-a-real-token", "showbatch-state/state_key": Data(repeating: 7, count: 32).base64EncodedString()]
        /// Mounts, in `secrets/`, what the pod's projected `secrets` volume gives it (only that).
        func mountSecrets(of job: Node) throws {
            try? FileManager.default.removeItem(atPath: work.path + "/secrets")
            let volume = try #require((job.at("template.spec.volumes")?.items ?? []).first { $0.at("name")?.text == "secrets" })
            for source in volume.at("projected.sources")?.items ?? [] {
                let name = try #require(source.at("secret.name")?.text)
                for item in source.at("secret.items")?.items ?? [] {
                    let key = "\(name)/\(item.at("key")?.text ?? "")"
                    let value: String = try #require(secrets[key], "the pod mounts \(key), which the sample does not declare")
                    work.write("secrets/" + (item.at("path")?.text ?? ""), value + "\n")
                }
            }
        }
        func local(_ arguments: [String]) -> [String] {
            arguments.map { $0 == "/config/manifest.yaml" ? work.path + "/config/manifest.yaml" : $0 }
        }

        // The unsharded night, written elsewhere (--output neither numbers nor delivers it).
        try mountSecrets(of: shardJob)
        let whole = try await showbatch(["run", work.path + "/config/manifest.yaml", "--emulate", "--quiet", "--output", work.path + "/whole/night.csv.pgp"],
                                        in: work.path)
        #expect(whole.status == 0, "\(whole.stderr)")
        let expected = try #require(GPGFixture.shared.decrypt(work.path + "/whole/night.csv.pgp"))

        let shardArguments = (shardJob.at("template.spec.containers")?.items.first?.at("args")?.items ?? []).map(\.text)
        let count = try #require(shardJob.at("completions")?.integer)
        for index in 0..<count {
            let pod = try await showbatch(local(shardArguments) + ["--emulate"], in: work.path, environment: ["JOB_COMPLETION_INDEX": String(index)])
            #expect(pod.status == 0, "shard \(index): \(pod.stderr)")
        }
        let mergeContainer = mergeJob.at("template.spec.containers")?.items.first
        let mergeArguments = (mergeContainer?.at("args")?.items ?? []).map(\.text)
        // The merge pod's own Secrets: the state key, and not the reveal token (merge sends nothing).
        try mountSecrets(of: mergeJob)
        #expect(!FileManager.default.fileExists(atPath: work.path + "/secrets/token"))
        #expect(mergeContainer?.at("env") == nil)
        let mergeEnvironment: [String: String] = [:]
        let merged = try await showbatch(local(mergeArguments), in: work.path, environment: mergeEnvironment)
        #expect(merged.status == 0, "\(merged.stderr)")
        // The night's file, named for its date, delivered; the shards' files gone.
        let files = try FileManager.default.contentsOfDirectory(atPath: work.path + "/out")
        let night = try #require(files.first { $0.hasPrefix("customers-revealed-") && $0.hasSuffix(".csv.pgp") })
        #expect(night.count == "customers-revealed-YYYYMMDD.csv.pgp".count)
        #expect(!files.contains { $0.contains("-shard-") })
        #expect(server.uploaded == [night, night + ".done"])
        // Compared here, so that a failure prints no revealed value.
        let same = GPGFixture.shared.decrypt(server.uploads + "/" + night) == expected
        #expect(same)
    }
}
