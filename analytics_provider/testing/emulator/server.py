"""HTTP plumbing: a threaded HTTP/1.1 server with keep-alive that hands requests to a service."""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import tempfile
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from analytics_provider.testing.emulator.records import RecordedRequest, RequestLog, mask_headers
from analytics_provider.testing.emulator.wire import Incoming, Outcome, json_outcome

CHUNK = 64 * 1024
SPOOL_IN_MEMORY = 1024 * 1024
Service = Callable[[Incoming], Outcome]


class EmulatorHTTPServer(ThreadingHTTPServer):
    """One origin. Daemon threads, one per connection; :meth:`close` also ends idle keep-alive ones."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024  # many waits connecting at once must queue, not be reset

    def __init__(
        self,
        address: tuple[str, int],
        service: Service,
        *,
        origin: str,
        log: RequestLog,
        key_headers: tuple[str, ...],
        recorded: Callable[[str], bool] = lambda path: True,
    ) -> None:
        self.service = service
        self.origin = origin
        self.log = log
        self.key_headers = key_headers
        self.recorded = recorded
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        super().__init__(address, EmulatorRequestHandler)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def get_request(self) -> tuple[Any, Any]:
        conn, address = super().get_request()
        with self._connections_lock:
            self._connections.add(conn)
        return conn, address

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away (reset, closed mid-request) is not an error of the emulator."""
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)

    def start(self) -> None:
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.1},
                                        name=f"analytics-emulator-{self.origin}", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop accepting, close the listening socket, and end every open connection."""
        self.shutdown()
        self.server_close()
        with self._connections_lock:
            connections, self._connections = list(self._connections), set()
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)


class EmulatorRequestHandler(BaseHTTPRequestHandler):
    """Reads a request whole, asks the service, writes the answer (or drops or truncates it)."""

    protocol_version = "HTTP/1.1"
    server_version = "AnalyticsEmulator/1.0"
    disable_nagle_algorithm = True  # headers and body leave at once: no 40 ms delayed-ACK stalls
    server: EmulatorHTTPServer

    def do_GET(self) -> None:
        self._serve()

    do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_GET

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read emulator.requests
        pass

    def _serve(self) -> None:
        try:
            body = self._read_body()
        except ValueError as exc:
            self.close_connection = True
            self._write(json_outcome(400, {"type": "InvalidParameterError", "message": str(exc)}))
            return
        url = urlsplit(self.path)
        headers = {name.lower(): value for name, value in self.headers.items()}
        stream = body if not isinstance(body, bytes) else None
        request = Incoming(self.command, url.path, parse_qs(url.query, keep_blank_values=True), headers,
                           body if stream is None else b"", self.client_address[0], stream)
        record = self._record(request) if self.server.recorded(url.path) else None
        try:
            outcome = self.server.service(request)
        finally:
            if stream is not None:
                stream.close()
        if record is not None:
            record.operation = outcome.operation
            record.status = None if outcome.drop else outcome.status
            self.server.log.count(record.operation, record.status)
        if outcome.drop:
            self._drop()
        else:
            self._write(outcome)

    def _record(self, request: Incoming) -> RecordedRequest:
        headers, carried = mask_headers(self.headers, self.server.key_headers)
        try:
            payload = json.loads(request.body) if request.body.strip() else None
        except (ValueError, UnicodeDecodeError):
            payload = request.body.decode("utf-8", "replace")
        return self.server.log.add(RecordedRequest(
            self.server.origin, request.method, request.path, request.query, headers, carried, payload
        ))

    def _read_body(self) -> Any:
        """The body as bytes; a multipart one (an upload) as a temporary file, never whole in memory."""
        if self.headers.get("Content-Type", "").lower().startswith("multipart/") and not self._chunked():
            return self._spool()
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            parts: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        length = self.headers.get("Content-Length")
        if length is None:
            return b""
        if not length.strip().isdigit():
            raise ValueError(f"invalid Content-Length {length!r}")
        return self.rfile.read(int(length))

    def _chunked(self) -> bool:
        return "chunked" in self.headers.get("Transfer-Encoding", "").lower()

    def _spool(self) -> Any:
        length = self.headers.get("Content-Length", "0").strip()
        if not length.isdigit():
            raise ValueError(f"invalid Content-Length {length!r}")
        spooled = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY)  # noqa: SIM115 (closed by _serve)
        remaining = int(length)
        while remaining > 0:
            chunk = self.rfile.read(min(CHUNK * 16, remaining))
            if not chunk:
                break
            spooled.write(chunk)
            remaining -= len(chunk)
        spooled.seek(0)
        return spooled

    def _drop(self) -> None:
        """Close the connection without a byte of answer."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def _write(self, outcome: Outcome) -> None:
        size = outcome.file.stat().st_size if outcome.file is not None else len(outcome.body)
        self.send_response(outcome.status)
        for name, value in outcome.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(size))
        self.end_headers()
        if self.command == "HEAD":
            return
        limit = size // 2 if outcome.truncate else size
        try:
            if outcome.file is None:
                self.wfile.write(outcome.body[:limit])
            else:
                self._stream(outcome, limit)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            return
        if outcome.truncate:
            self._drop()

    def _stream(self, outcome: Outcome, limit: int) -> None:
        assert outcome.file is not None
        sent = 0
        with outcome.file.open("rb") as source:
            while sent < limit:
                chunk = source.read(min(CHUNK, limit - sent))
                if not chunk:
                    break
                self.wfile.write(chunk)
                sent += len(chunk)
