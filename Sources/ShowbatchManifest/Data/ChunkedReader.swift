import Foundation
import ShowbatchBasics

/// Reads a file forward in chunks so that memory stays bounded whatever its size.
struct ChunkedReader {
    private let file: FileDescriptor
    private var buffer: [UInt8]
    private var count = 0
    private var position = 0
    private var finished = false

    init(path: String, chunkSize: Int = 1 << 16) throws {
        do {
            file = try FileDescriptor.openInput(path)
        } catch {
            throw DataFileError(file: path, line: nil, message: "cannot be opened for reading: \(error.reason)")
        }
        buffer = [UInt8](repeating: 0, count: chunkSize)
    }

    /// Nothing to do: the file closes when the last copy of the reader goes.
    func close() {}

    /// The next byte, or nil at the end of the file.
    mutating func next() throws -> UInt8? {
        if position == count {
            if finished { return nil }
            do {
                count = try file.read(into: &buffer)
            } catch {
                throw DataFileError(file: file.path, line: nil, message: "cannot be read: \(error.reason)")
            }
            position = 0
            guard count > 0 else {
                finished = true
                return nil
            }
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
