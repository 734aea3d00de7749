"""A small forward proxy on 127.0.0.1, as companies run at their egress: plain http requests
in absolute form are forwarded, https goes through a ``CONNECT`` tunnel whose bytes it relays
without reading them. It records what it saw (and every byte a client sent into a tunnel), and
may ask for credentials (``407`` without the right ``Proxy-Authorization``).
"""

from __future__ import annotations

import base64
import http.client
import selectors
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit


@dataclass
class ProxySeen:
    method: str
    target: str  # an absolute URL, or host:port for CONNECT
    headers: dict[str, str]


@dataclass
class ForwardProxy:
    credentials: tuple[str, str] | None = None
    seen: list[ProxySeen] = field(default_factory=list)
    tunnelled: bytearray = field(default_factory=bytearray)  # what clients sent through tunnels

    def __post_init__(self) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _allowed(self) -> bool:
                outer.seen.append(ProxySeen(self.command, self.path, dict(self.headers.items())))
                if outer.credentials is None:
                    return True
                token = base64.b64encode(":".join(outer.credentials).encode()).decode()
                if self.headers.get("Proxy-Authorization") == f"Basic {token}":
                    return True
                self.send_response(407)
                self.send_header("Proxy-Authenticate", 'Basic realm="egress"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return False

            def do_CONNECT(self) -> None:
                if not self._allowed():
                    return
                host, port = self.path.rsplit(":", 1)
                upstream = socket.create_connection((host, int(port)), timeout=10)
                self.send_response(200, "Connection established")
                self.end_headers()
                self.close_connection = True
                pair = {self.connection: upstream, upstream: self.connection}
                watch = selectors.DefaultSelector()  # not select.select: a long test run holds fds above 1024
                for sock in pair:
                    watch.register(sock, selectors.EVENT_READ)
                try:
                    while True:
                        ready = watch.select(10)
                        if not ready:
                            return
                        for key, _ in ready:
                            data = key.fileobj.recv(65536)  # type: ignore[union-attr]
                            if not data:
                                return
                            if key.fileobj is self.connection:
                                outer.tunnelled += data
                            pair[key.fileobj].sendall(data)
                except OSError:
                    return
                finally:
                    watch.close()
                    upstream.close()

            def _forward(self) -> None:
                if not self._allowed():
                    return
                target = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items() if not k.lower().startswith("proxy-")}
                upstream = http.client.HTTPConnection(target.hostname or "", target.port or 80, timeout=10)
                try:
                    path = target.path + (f"?{target.query}" if target.query else "")
                    upstream.request(self.command, path, body=body, headers=headers)
                    answer = upstream.getresponse()
                    payload = answer.read()
                finally:
                    upstream.close()
                self.send_response(answer.status)
                for name, value in answer.getheaders():
                    if name.lower() not in ("content-length", "transfer-encoding", "connection"):
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_DELETE = _forward

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._httpd.handle_error = lambda request, client_address: None  # type: ignore[method-assign]
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)

    def url(self, user: str | None = None, password: str | None = None) -> str:
        auth = f"{user}:{password}@" if user is not None else ""
        return f"http://{auth}127.0.0.1:{self.port}"

    def __enter__(self) -> ForwardProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def methods(self) -> list[str]:
        return [f"{s.method} {s.target}" for s in self.seen]
