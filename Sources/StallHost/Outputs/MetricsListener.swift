import Foundation

import StallProc
#if canImport(Glibc)
import Glibc
#endif

/// Serves `GET /metrics` for Prometheus on its own thread. Hand-written rather than taken
/// from an HTTP framework: it answers one fixed document, the monitor loop is synchronous and
/// must stay free of an async runtime, and a scrape is one request per connection. Each
/// connection is answered on its own short-lived thread within one overall deadline (reading
/// the request and sending the answer together), so a slow client — one byte a second
/// resets no timeout here — neither holds its thread for long nor delays anyone else's scrape;
/// past `maxClients` connections at once, new ones are closed at once.
// Unchecked: `activeClients` is used only under `clients`, `stopped` and `thread` only under `stopFlag`; `Thread` is not Sendable.
public final class MetricsListener: @unchecked Sendable {
    /// Seconds one connection may take in all.
    public static let clientDeadline = 2.0
    public static let maxClients = 16
    private let clients = NSLock()
    private var activeClients = 0
    public let address: String
    public let port: UInt16
    private let fd: Int32
    private let render: @Sendable () -> String
    private var thread: Thread?
    private let stopFlag = NSLock()
    private var stopped = false

    /// Binds `address` ("HOST:PORT", "[::1]:PORT", ":PORT" for all interfaces; port 0 picks one).
    public init(address: String, render: @escaping @Sendable () -> String) throws {
        self.address = address
        self.render = render
        guard let colon = address.lastIndex(of: ":"), let port = UInt16(address[address.index(after: colon)...]) else {
            throw StallAgentError.invalidArgument("--metrics-listen: '\(address)' is not HOST:PORT (e.g. 127.0.0.1:9464)")
        }
        var host = String(address[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        var hints = addrinfo()
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host.isEmpty ? nil : host, String(port), &hints, &result)
        guard rc == 0, let info = result else {
            throw StallAgentError.invalidArgument("--metrics-listen: cannot resolve '\(host)': \(String(cString: gai_strerror(rc)))")
        }
        defer { freeaddrinfo(result) }
        let socketFD = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard socketFD >= 0 else { throw StallAgentError.listen(address: address, errno: errno) }
        var one: Int32 = 1
        setsockopt(socketFD, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard bind(socketFD, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0, listen(socketFD, 16) == 0 else {
            let code = errno
            close(socketFD)
            throw StallAgentError.listen(address: address, errno: code)
        }
        fd = socketFD
        var bound = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        withUnsafeMutablePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getsockname(socketFD, $0, &length) }
        }
        self.port = withUnsafePointer(to: &bound) { pointer in
            pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
        }
    }

    deinit { close(fd) }

    public func start() {
        let thread = Thread { [self] in serve() }
        thread.name = "stallagent-metrics"
        stopFlag.withLock { self.thread = thread }
        thread.start()
    }

    public func stop() {
        stopFlag.withLock { stopped = true }
        shutdown(fd, Int32(SHUT_RDWR))
    }

    private func serve() {
        while !stopFlag.withLock({ stopped }) {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 500) > 0 else { continue }
            let client = accept(fd, nil, nil)
            if client < 0 { continue }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            let admitted = clients.withLock {
                guard activeClients < Self.maxClients else { return false }
                activeClients += 1
                return true
            }
            guard admitted else {
                close(client)
                continue
            }
            let worker = Thread { [self] in
                answer(client, deadline: MonotonicTime.seconds() + Self.clientDeadline)
                close(client)
                clients.withLock { activeClients -= 1 }
            }
            worker.name = "stallagent-metrics-client"
            worker.stackSize = 256 << 10
            worker.start()
        }
    }

    /// Waits for `events` on `client` until the deadline; false when it passed.
    private static func wait(_ client: Int32, for events: Int32, until deadline: Double) -> Bool {
        while true {
            let remaining = deadline - MonotonicTime.seconds()
            guard remaining > 0 else { return false }
            var poller = pollfd(fd: client, events: Int16(events), revents: 0)
            let ready = poll(&poller, 1, Int32(max(1, remaining * 1000)))
            if ready > 0 { return true }
            if ready < 0 && errno == EINTR { continue }
            if ready == 0 { return false }
            return false
        }
    }

    private func answer(_ client: Int32, deadline: Double) {
        var request: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        // The request line and headers; the body of a GET is empty.
        while request.count < 16_384, !MetricsListener.hasHeaderEnd(request) {
            guard Self.wait(client, for: Int32(POLLIN), until: deadline) else { return }
            let n = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n < 0 && (errno == EAGAIN || errno == EINTR) { continue }
            if n <= 0 { break }
            request += buffer[0..<n]
        }
        let line = String(decoding: request.prefix { $0 != UInt8(ascii: "\r") && $0 != UInt8(ascii: "\n") }, as: UTF8.self)
        let parts = line.split(separator: " ")
        let response: String
        if parts.count >= 2, parts[0] == "GET" || parts[0] == "HEAD",
            parts[1] == "/metrics" || parts[1].hasPrefix("/metrics?") || parts[1] == "/"
        {
            let body = parts[1] == "/" ? "stallagent metrics: /metrics\n" : render()
            let contentType = parts[1] == "/" ? "text/plain; charset=utf-8" : "text/plain; version=0.0.4; charset=utf-8"
            response =
                "HTTP/1.1 200 OK\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n"
                + (parts[0] == "HEAD" ? "" : body)
        } else if parts.count >= 2, parts[0] != "GET", parts[0] != "HEAD" {
            response = "HTTP/1.1 405 Method Not Allowed\r\nAllow: GET, HEAD\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        } else {
            let body = "not found; metrics are at /metrics\n"
            response = "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
        }
        let bytes = Array(response.utf8)
        var offset = 0
        while offset < bytes.count {
            guard Self.wait(client, for: Int32(POLLOUT), until: deadline) else { return }
            let n = bytes[offset...].withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            if n < 0 && (errno == EAGAIN || errno == EINTR) { continue }
            if n <= 0 { break }
            offset += n
        }
    }

    static func hasHeaderEnd(_ bytes: [UInt8]) -> Bool {
        guard bytes.count >= 4 else { return bytes.count >= 2 && bytes.suffix(2) == [10, 10] }
        return bytes.suffix(4) == [13, 10, 13, 10] || bytes.suffix(2) == [10, 10]
    }
}
