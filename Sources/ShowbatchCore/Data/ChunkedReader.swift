import Foundation

/// Reads a file forward in chunks so that memory stays bounded whatever its size.
struct ChunkedReader {
    private let handle: FileHandle
    private var buffer: [UInt8] = []
    private var position = 0
    private var finished = false
    private let chunkSize: Int

    init(path: String, chunkSize: Int = 1 << 16) throws {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw DataFileError(file: path, line: nil, message: "cannot be opened for reading")
        }
        self.handle = handle
        self.chunkSize = chunkSize
    }

    func close() { try? handle.close() }

    /// The next byte, or nil at the end of the file.
    mutating func next() throws -> UInt8? {
        if position == buffer.count {
            if finished { return nil }
            guard let data = try handle.read(upToCount: chunkSize), !data.isEmpty else {
                finished = true
                return nil
            }
            buffer = Array(data)
            position = 0
        }
        let byte = buffer[position]
        position += 1
        return byte
    }

    /// The next byte without consuming it.
    mutating func peek() throws -> UInt8? {
        guard let byte = try next() else { return nil }
        position -= 1
        return byte
    }
}
