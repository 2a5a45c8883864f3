import Foundation
import Testing

/// The CPython builds the Python-frame tests run against: pyenv's (shared libpython, with
/// debug info) and Debian's (static, stripped to `.dynsym`). A missing one skips its tests.
enum PythonInterpreters {
    static let pyenv311 = "/root/.pyenv/versions/3.11.7/bin/python3.11"
    static let pyenv312 = "/root/.pyenv/versions/3.12.1/bin/python3.12"
    static let pyenv313 = "/root/.pyenv/versions/3.13.0/bin/python3.13"
    static let debian311 = "/usr/bin/python3.11"
    /// Not supported (no `Py_Version`, pre-3.11 frames): for the unknown-version path.
    static let pyenv310 = "/root/.pyenv/versions/3.10.13/bin/python3.10"

    static func has(_ path: String) -> Bool { FileManager.default.isExecutableFile(atPath: path) }

    static func missing(_ path: String) -> Comment {
        Comment(rawValue: "\(path) is not installed (pyenv install 3.11.7 3.12.1 3.13.0 / apt-get install python3.11)")
    }

    /// Writes `text` to a fresh file named `name` in a temporary directory; returns its path.
    static func script(_ name: String, _ text: String) throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pyframes-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let url = directory.appendingPathComponent(name)
        try text.write(to: url, atomically: true, encoding: .utf8)
        return url.path
    }

    /// Line numbers matter: the tests assert them.
    static let nested = """
        import sys, time

        def inner(mode):
            if mode == "sleep":
                time.sleep(60)
            x = 0
            while True:
                x += 1

        def middle(mode):
            inner(mode)

        def outer(mode):
            middle(mode)

        print("ready", flush=True)
        outer(sys.argv[1])

        """

    /// An asyncio server with one handler that sleeps and one that burns CPU, 3 s each: long
    /// enough that the samples taken before the handler was entered have left the ring when
    /// the stall frame is chosen (at 1.5 s, a loaded machine named `handle`).
    static let asyncServer = """
        import asyncio, sys, time

        def slow_sleep_handler():
            time.sleep(3)
            return b"slept"

        def cpu_handler():
            end = time.monotonic() + 3
            n = 0
            while time.monotonic() < end:
                n += 1
            return b"burned"

        async def handle(reader, writer):
            line = (await reader.readline()).strip()
            body = slow_sleep_handler() if line == b"sleep" else cpu_handler() if line == b"cpu" else b"ok"
            writer.write(body + b"\\n")
            await writer.drain()
            writer.close()

        async def main():
            server = await asyncio.start_server(handle, "127.0.0.1", 0)
            print("ready port=%d" % server.sockets[0].getsockname()[1], flush=True)
            async with server:
                await server.serve_forever()

        asyncio.run(main())

        """

    static let client = """
        import socket, sys, time
        port = int(sys.argv[1])
        for command in sys.argv[2:]:
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(command.encode() + b"\\n")
            print(command, s.recv(100), flush=True)
            s.close()
            time.sleep(0.3)
        print("done", flush=True)

        """
}
