import CZlib
import Foundation

/// gzip through the system's zlib: pprof readers expect the profile gzipped, and zlib is on
/// every machine that runs the agent already (libdw links it).
public enum Gzip {
    public enum Failure: Error, CustomStringConvertible {
        case zlib(operation: String, code: Int32)

        public var description: String {
            switch self {
            case .zlib(let operation, let code): return "zlib \(operation) failed (\(code))"
            }
        }
    }

    public static func compress(_ data: Data, level: Int32 = 6) throws -> Data {
        var stream = z_stream()
        guard czlib_deflate_init_gzip(&stream, level) == Z_OK else { throw Failure.zlib(operation: "deflateInit2", code: -1) }
        defer { deflateEnd(&stream) }
        // A full output buffer with input left (Z_BUF_ERROR) means only: call again.
        let (output, status) = pump(data, &stream) { code, stream in
            code == Z_OK || code == Z_BUF_ERROR && stream.avail_out == 0
        } step: {
            deflate(&$0, Z_FINISH)
        }
        guard status == Z_STREAM_END else { throw Failure.zlib(operation: "deflate", code: status) }
        return output
    }

    /// For tests and for reading a profile back.
    public static func decompress(_ data: Data) throws -> Data {
        var stream = z_stream()
        guard czlib_inflate_init_gzip(&stream) == Z_OK else { throw Failure.zlib(operation: "inflateInit2", code: -1) }
        defer { inflateEnd(&stream) }
        let (output, status) = pump(data, &stream) { code, _ in
            code == Z_OK
        } step: {
            inflate(&$0, Z_NO_FLUSH)
        }
        guard status == Z_STREAM_END else { throw Failure.zlib(operation: "inflate", code: status) }
        return output
    }

    /// Feeds `data` through `step` (deflate or inflate) in 64 KiB output chunks while `again`
    /// says so; the output and zlib's last status.
    private static func pump(
        _ data: Data, _ stream: inout z_stream, again: (Int32, z_stream) -> Bool, step: (inout z_stream) -> Int32
    ) -> (Data, Int32) {
        var output = Data()
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var input = [UInt8](data)
        let status: Int32 = input.withUnsafeMutableBufferPointer { source in
            stream.next_in = source.baseAddress
            stream.avail_in = uInt(source.count)
            var code = Z_OK
            repeat {
                code = chunk.withUnsafeMutableBufferPointer { buffer in
                    stream.next_out = buffer.baseAddress
                    stream.avail_out = uInt(buffer.count)
                    let result = step(&stream)
                    output.append(buffer.baseAddress!, count: buffer.count - Int(stream.avail_out))
                    return result
                }
            } while again(code, stream)
            return code
        }
        return (output, status)
    }
}
