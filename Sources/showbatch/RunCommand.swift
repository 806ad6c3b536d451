import ShowbatchCore

enum RunCommand {
    static func execute(_ run: RunArguments) async -> Int32 {
        Console.err("showbatch: error: run is not yet available\n")
        return ExitCode.usage
    }
}

