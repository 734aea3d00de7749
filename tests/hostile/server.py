"""A small scripted HTTP server on 127.0.0.1, for the hook's and the async client's worst days.

Each test sets ``server.answer`` (a function from the recorded request to an :class:`Answer`)
and reads ``server.requests`` (what arrived on the wire: method, raw path, headers, body).
Answers can trickle, be gzip-encoded, lie about their length, come without one (chunked, or ended
by closing the connection), be cut short, or redirect to a second server.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import json
import socket
import ssl
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Seen:
    method: str
    path: str  # as sent, query included
    headers: dict[str, str]
    body: bytes

    @property
    def route(self) -> str:
        return self.path.split("?", 1)[0]


@dataclass
class Answer:
    status: int = 200
    body: bytes | str | dict[str, Any] | list[Any] = b""
    headers: dict[str, str] = field(default_factory=dict)
    trickle: float | None = None  # seconds between single bytes of the body
    gzip_if_asked: bool = False  # compress when the request accepts gzip (as many file hosts do)
    gzip_always: bool = False  # compress whatever the request asked
    content_length: int | None = None  # a lie about the length, when set
    delay: float = 0.0  # seconds before the status line (a stalled server)
    length_header: bool = True  # False: no Content-Length; the body ends when the connection closes
    chunked: bool = False  # Transfer-Encoding: chunked (no Content-Length)
    cut: int | None = None  # send this many bytes of the body, then close (a chunked body: no last chunk)
    stream: Callable[[], Iterable[bytes]] | None = None  # the body made as it is sent (huge ones), sent as is:
    # give its length in content_length, or chunked; no gzip, trickle or cut applies

    def payload(self) -> bytes:
        if isinstance(self.body, (dict, list)):
            return json.dumps(self.body).encode()
        return self.body.encode() if isinstance(self.body, str) else self.body


class HostileServer:
    """``tls``: a server-side ``ssl.SSLContext`` (its certificate made in the test); the origin
    is then ``https://`` on ``host``. ``open_connections`` counts the connections no client has
    hung up yet; ``answers_sent``, the answers written whole (a client that gave up first never
    gets one). Stalls and trickles end when the server closes."""

    def __init__(self, tls: ssl.SSLContext | None = None, host: str = "127.0.0.1") -> None:
        self.requests: list[Seen] = []
        self.open_connections = 0
        self.answers_sent = 0
        self._connections_changed = threading.Condition()
        self._closing = threading.Event()
        self.answer: Callable[[Seen], Answer] = lambda seen: Answer(404, {"message": "nothing here"})
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                outer._count_connection(+1)

            def finish(self) -> None:  # the client hung up (or the answer closed the connection)
                try:
                    super().finish()
                finally:
                    outer._count_connection(-1)

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                seen = Seen(self.command, self.path, dict(self.headers.items()), self.rfile.read(length))
                with outer._connections_changed:
                    outer.requests.append(seen)
                    outer._connections_changed.notify_all()
                answer = outer.answer(seen)
                body = answer.payload()
                headers = {"Content-Type": "application/json", **answer.headers}
                accepts = seen.headers.get("Accept-Encoding", "")
                if answer.stream is None and (answer.gzip_always or (answer.gzip_if_asked and "gzip" in accepts)):
                    body = gzip.compress(body)
                    headers["Content-Encoding"] = "gzip"
                if answer.chunked:
                    headers["Transfer-Encoding"] = "chunked"
                elif answer.length_header:
                    headers["Content-Length"] = str(answer.content_length if answer.content_length is not None
                                                     else len(body))
                else:
                    headers["Connection"] = "close"
                sent = body if answer.cut is None else body[: answer.cut]
                try:
                    if answer.delay:
                        outer._closing.wait(answer.delay)
                    self.send_response(answer.status)
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    if answer.stream is not None:
                        for piece in answer.stream():
                            if answer.chunked:
                                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                            else:
                                self.wfile.write(piece)
                        if answer.chunked:
                            self.wfile.write(b"0\r\n\r\n")
                    elif answer.chunked:
                        for i in range(0, len(sent), 512):
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(sent[i : i + 512]), sent[i : i + 512]))
                        if answer.cut is None:
                            self.wfile.write(b"0\r\n\r\n")
                    elif answer.trickle is None:
                        self.wfile.write(sent)
                    else:
                        for i in range(len(body)):
                            self.wfile.write(body[i : i + 1])
                            self.wfile.flush()
                            outer._closing.wait(answer.trickle)
                    self.wfile.flush()
                    with outer._connections_changed:
                        outer.answers_sent += 1
                except (BrokenPipeError, ConnectionResetError):
                    pass
                if answer.cut is not None or not (answer.length_header or answer.chunked) or (
                        answer.content_length is not None and answer.content_length != len(body)):
                    self.close_connection = True

            do_GET = do_POST = do_PUT = do_DELETE = _handle

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._httpd.handle_error = lambda request, client_address: None  # type: ignore[method-assign]
        if tls is not None:  # the handshake runs in the handler's thread, on its first read
            self._httpd.socket = tls.wrap_socket(self._httpd.socket, server_side=True, do_handshake_on_connect=False)
        self.port = self._httpd.server_address[1]
        self.origin = f"{'https' if tls else 'http'}://{host}:{self.port}"
        self.base_url = self.origin + "/api/v2"
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self) -> HostileServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._closing.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def _count_connection(self, change: int) -> None:
        with self._connections_changed:
            self.open_connections += change
            self._connections_changed.notify_all()

    def all_hung_up(self, within: float = 10.0) -> bool:
        """Whether every client's connection ends; waits up to ``within`` seconds for the
        handlers to read the end (an event: a connection left open never ends)."""
        with self._connections_changed:
            return self._connections_changed.wait_for(lambda: self.open_connections == 0, within)

    def seen(self, count: int, within: float = 10.0) -> bool:
        """Whether ``count`` requests have been read; waits up to ``within`` seconds for them (a client
        that gave up may have closed before this server's thread read its request)."""
        with self._connections_changed:
            return self._connections_changed.wait_for(lambda: len(self.requests) >= count, within)

    def routes(self) -> list[str]:
        return [f"{r.method} {r.route}" for r in self.requests]


def always(answer: Answer) -> Callable[[Seen], Answer]:
    return lambda seen: answer


def in_turn(*answers: Answer) -> Callable[[Seen], Answer]:
    """The answers one after the other; the last one again and again."""
    queue = list(answers)

    def next_answer(seen: Seen) -> Answer:
        return queue.pop(0) if len(queue) > 1 else queue[0]

    return next_answer


MiB = 1024 * 1024


@functools.cache
def gzip_of_zeros(size: int) -> bytes:
    """``size`` (a multiple of a MiB) zero bytes gzipped, about a thousandth of the size (deflate's
    best: a compression bomb). Made fast: after a full flush the compressor's state is the same at
    each MiB, so each MiB's compressed bytes are the same and are repeated; the trailer is the CRC
    and size of the whole."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(MiB)
    first = packer.compress(block) + packer.flush(zlib.Z_FULL_FLUSH)
    again = packer.compress(block) + packer.flush(zlib.Z_FULL_FLUSH)
    last = packer.flush()  # the final block and a trailer for 2 MiB, replaced below
    crc = 0
    for _ in range(size // MiB):
        crc = zlib.crc32(block, crc)
    return first + again * (size // MiB - 1) + last[:-8] + struct.pack("<II", crc, size & 0xFFFFFFFF)


def pieces(data: bytes, size: int = 64 * 1024) -> Iterator[bytes]:
    """``data`` in pieces, for an :class:`Answer`'s ``stream``."""
    for i in range(0, len(data), size):
        yield data[i : i + size]


class RawServer:
    """A server on 127.0.0.1 that answers every request with ``script(sock, closing)``: the raw
    bytes of its choice (a head dripped a byte at a time, a head of a million bytes). ``closing``
    is set when the server closes, to end a drip; ``requests`` counts the requests read."""

    def __init__(self, script: Callable[[socket.socket, threading.Event], None]) -> None:
        self.script = script
        self.requests = 0
        self.closing = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)
        self.port = self._listener.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}/api/v2"
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> RawServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.closing.set()
        self._thread.join(10)
        self._listener.close()

    def _serve(self) -> None:
        while not self.closing.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                continue
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            received = b""
            while b"\r\n\r\n" not in received:
                data = conn.recv(65536)
                if not data:
                    return
                received += data
            self.requests += 1
            with contextlib.suppress(OSError):  # the client gave up
                self.script(conn, self.closing)


def drip_head(every: float, for_seconds: float = 30.0) -> Callable[[socket.socket, threading.Event], None]:
    """A head one of whose header values comes a byte every ``every`` seconds for ``for_seconds``,
    then ends, with a job that succeeded (a client that waits it out gets a good answer)."""

    def script(conn: socket.socket, closing: threading.Event) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Slow: ")
        end = time.monotonic() + for_seconds
        while time.monotonic() < end and not closing.wait(every):
            conn.sendall(b"a")
        body = b'{"job": {"id": 1, "status": "success"}}'
        conn.sendall(b"\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))

    return script


def huge_head(size: int, line: int = 8000) -> Callable[[socket.socket, threading.Event], None]:
    """A head of ``size`` bytes of header lines of ``line`` bytes each, then a small JSON body."""

    def script(conn: socket.socket, closing: threading.Event) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
        sent = 0
        while sent < size and not closing.is_set():
            header = b"X-Big-%d: %s\r\n" % (sent, b"b" * (line - 20))
            conn.sendall(header)
            sent += len(header)
        body = b'{"job": {"id": 1, "status": "success"}}'
        conn.sendall(b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))

    return script


def head_and_large_body(lines: int = 20, line: int = 3000,
                        body_bytes: int = 600_000) -> Callable[[socket.socket, threading.Event], None]:
    """A good answer sent in one write: ``lines`` header lines of ``line`` bytes (a head within the
    bounds), then a JSON body of about ``body_bytes``, so that the head's end and much of the body
    arrive in one read."""

    def script(conn: socket.socket, closing: threading.Event) -> None:
        head = b"".join(b"X-Big-%d: %s\r\n" % (n, b"b" * (line - 20)) for n in range(lines))
        body = json.dumps({"job": {"id": 1, "status": "success", "note": "n" * body_bytes}}).encode()
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n"
                     b"Connection: close\r\n\r\n%s" % (head, len(body), body))

    return script


def endless_trailers(body: bytes = b'{"job": {"id": 1, "status": "success"}}',
                     for_seconds: float = 30.0) -> Callable[[socket.socket, threading.Event], None]:
    """A chunked answer whose body comes at once and whose trailer section goes on for
    ``for_seconds`` (lines of 1 KB, fifty every 10 ms), then ends: read whole, a good answer."""

    def script(conn: socket.socket, closing: threading.Event) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                     b"%x\r\n%s\r\n0\r\n" % (len(body), body))
        lines = b"X-Trailer: %s\r\n" % (b"t" * 1000) * 50
        end = time.monotonic() + for_seconds
        while time.monotonic() < end and not closing.wait(0.01):
            conn.sendall(lines)
        conn.sendall(b"\r\n")

    return script


def dripped_chunk_size(body: bytes = b'{"job": {"id": 1, "status": "success"}}', every: float = 0.2,
                       for_seconds: float = 30.0) -> Callable[[socket.socket, threading.Event], None]:
    """A chunked answer whose first chunk-size line comes a byte (of a chunk extension) every
    ``every`` seconds for ``for_seconds``, then the body: each read returns within any timeout."""

    def script(conn: socket.socket, closing: threading.Event) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                     b"%x;" % len(body))
        end = time.monotonic() + for_seconds
        while time.monotonic() < end and not closing.wait(every):
            conn.sendall(b"x")
        conn.sendall(b"\r\n%s\r\n0\r\n\r\n" % body)

    return script


def dripped_body(every: float = 0.2, for_seconds: float = 30.0) -> Callable[[socket.socket, threading.Event], None]:
    """An answer whose head comes at once, announcing 1,000 bytes of JSON that then come a space
    every ``every`` seconds for ``for_seconds``: each read returns within any timeout."""

    def script(conn: socket.socket, closing: threading.Event) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n[")
        end = time.monotonic() + for_seconds
        while time.monotonic() < end and not closing.wait(every):
            conn.sendall(b" ")

    return script


def early_hints(count: int) -> Callable[[socket.socket, threading.Event], None]:
    """``count`` informational answers (103 Early Hints), then a job that succeeded."""

    def script(conn: socket.socket, closing: threading.Event) -> None:
        conn.sendall(b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n" * count)
        body = b'{"job": {"id": 1, "status": "success"}}'
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                     b"Connection: close\r\n\r\n%s" % (len(body), body))

    return script
