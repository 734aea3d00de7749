"""vl-convert in a child process, so that its failures cannot take the linter down.

vl-convert panics in Rust on some input (a control character in a text it draws), and a panic aborts
the whole process. Here it runs in one long-lived child per process, started on first use (or by
:func:`start` ahead of it) and reused by every lint and preview after that; when the child dies, the
call that was running raises :class:`CompilerCrashed` with the signal and the panic's message, and
the next call starts a new child. A call given a ``timeout`` that the child does not answer within
raises :class:`CallTimedOut`: the child is killed and the next call starts a new one (a chart whose
data or transforms take minutes cannot hold a lint or a CI job). A call given a ``memory`` bound
likewise raises :class:`CallOverMemory` once the child's resident memory passes it (read ten times
a second from ``/proc``, on Linux; a chart's strings or rows took 1.5 GB within seconds). The child answers its first
message once vl-convert is loaded and warmed up, so no call's time includes that. The child's
standard error (the JavaScript engine's console included) goes to a temporary file that is read
only to explain a crash.

Messages are JSON, each preceded by its length (4 bytes, big-endian); :func:`serve` is the child's end.
The child's first message lists the Vega-Lite versions vl-convert ships.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import json
import math
import os
import select
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

_HEADER = struct.Struct(">I")
_ROOT = Path(__file__).resolve().parents[2]
"""The folder that holds the analytics_provider package: where the child is started."""


class CompilerCrashed(Exception):
    """The child running vl-convert died during a call; ``message`` says how (signal, panic)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class CallTimedOut(Exception):
    """The child did not answer within ``seconds``; it was killed (the next call starts another)."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"no answer within {seconds:g} s")
        self.seconds = seconds


class CallOverMemory(Exception):
    """The child's memory passed ``limit`` bytes during a call; it was killed (the next call starts another)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"more than {limit:,} bytes of memory")
        self.limit = limit


class CallFailed(Exception):
    """vl-convert rejected the input (a ValueError in the child); ``message`` is its text."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _write(stream: IO[bytes], message: Any) -> None:
    data = json.dumps(message).encode("utf-8")
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def _read(stream: IO[bytes]) -> Any:
    """The next message; EOFError when the other end has gone."""
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        raise EOFError
    size = _HEADER.unpack(header)[0]
    data = stream.read(size)
    if len(data) < size:
        raise EOFError
    return json.loads(data)


class _Child:
    def __init__(self) -> None:
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 (kept open for the child's life; closed by close())
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}  # the parent's packages
        # this file run on its own: the child needs none of the package, whose imports cost a quarter second
        self.process = subprocess.Popen(
            [sys.executable, "-c", "import runpy, sys; runpy.run_path(sys.argv[1])['serve']()", __file__],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, cwd=_ROOT, env=env,
        )
        self.pid = os.getpid()
        """The process that started the child: a forked copy of it must start its own."""
        self.versions: list[str] | None = None

    def call(self, op: str, timeout: float | None = None, memory: int | None = None, **args: Any) -> Any:
        assert self.process.stdin is not None and self.process.stdout is not None
        try:
            if self.versions is None:
                self.versions = _read(self.process.stdout)["versions"]
            if op == "versions":
                return self.versions
            _write(self.process.stdin, {"op": op, "args": args})
            try:
                answered = self._answers_within(timeout, memory) if timeout or memory else "answered"
            except BaseException:  # the child's answer would be read as the next call's: it goes
                self.kill()
                raise
            if answered != "answered":
                self.kill()
                raise CallTimedOut(timeout or 0) if answered == "time" else CallOverMemory(memory or 0)
            reply = _read(self.process.stdout)
        except (EOFError, OSError, ValueError):
            raise CompilerCrashed(self._death()) from None
        if "error" in reply:
            raise CallFailed(reply["error"])
        return reply["result"]

    def _answers_within(self, seconds: float | None, memory: int | None) -> str:
        """``"answered"`` when the child's reply starts (or the child ends: its reader says how) within
        ``seconds`` (None: no limit) and ``memory`` bytes of resident memory (None: no limit);
        ``"time"`` or ``"memory"`` when it passes one of them first."""
        assert self.process.stdout is not None
        end = None if seconds is None else time.monotonic() + seconds
        while True:
            left = math.inf if end is None else end - time.monotonic()
            if left <= 0:
                return "time"
            if memory is not None and _resident(self.process.pid) > memory:
                return "memory"
            with contextlib.suppress(InterruptedError):
                step = left if memory is None else min(left, MEMORY_LOOK)
                readable, _, _ = select.select([self.process.stdout], [], [], step)
                if readable:
                    return "answered"

    def kill(self) -> None:
        """End the child at once (it is in the middle of a call that takes too long)."""
        with contextlib.suppress(OSError):
            self.process.kill()
        self.close()

    def _death(self) -> str:
        """How the child ended, with what it said last: the first panic's message (the line after
        "thread ... panicked at ..."), else its last line."""
        try:
            code = self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        self.stderr.seek(0, os.SEEK_END)
        self.stderr.seek(max(0, self.stderr.tell() - 65536))
        lines = [line.strip() for line in self.stderr.read().decode("utf-8", "replace").splitlines() if line.strip()]
        first = next((i for i, line in enumerate(lines) if " panicked at " in line), None)
        panic = " ".join(lines[first:first + 2]) if first is not None else lines[-1] if lines else ""
        how = f"SIG{signal.Signals(-code).name.removeprefix('SIG')}" if code < 0 and -code in signal.valid_signals() \
            else f"exit status {code}"
        self.close()
        return f"vl-convert stopped ({how})" + (f": {panic[:300]}" if panic else "")

    def close(self) -> None:
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.stderr.close()


MEMORY_LOOK = 0.1
"""Seconds between two reads of the child's memory during a call with a ``memory`` bound."""


def _resident(pid: int) -> int:
    """The resident memory of process ``pid`` in bytes (0 where ``/proc`` cannot tell)."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


_child: _Child | None = None
_lock = threading.Lock()


def start() -> None:
    """Start the child now (it loads vl-convert while the caller does other work); no-op when running."""
    global _child
    with _lock:
        if _child is None or _child.pid != os.getpid() or _child.process.poll() is not None:
            _child = _Child()


def call(op: str, timeout: float | None = None, memory: int | None = None, **args: Any) -> Any:
    """Run ``op`` (versions, compile, render) in the child. Raises :class:`CallFailed` when vl-convert
    rejects the input, :class:`CompilerCrashed` when the child dies, :class:`CallTimedOut` when it
    does not answer within ``timeout`` seconds and :class:`CallOverMemory` when its memory passes
    ``memory`` bytes first (None: no limit); after any of these, the next call starts a new child."""
    global _child
    start()
    with _lock:
        child = _child
        assert child is not None
        try:
            return child.call(op, timeout, memory, **args)
        except (CompilerCrashed, CallTimedOut, CallOverMemory):
            _child = None
            raise


def child_pid() -> int | None:
    """The process id of this process's running child, if any (for measurements)."""
    with _lock:
        running = _child is not None and _child.pid == os.getpid() and _child.process.poll() is None
        return _child.process.pid if running and _child is not None else None


@atexit.register
def stop() -> None:
    """End the child (at exit, or to free its memory)."""
    global _child
    with _lock:
        if _child is not None and _child.pid == os.getpid():
            _child.close()
        _child = None


# -- the child's end --------------------------------------------------------------------------------------


def _compile(spec: dict[str, Any], vl_version: str) -> dict[str, Any]:
    """A Vega-Lite spec compiled to Vega (when ``vl_version`` is given), then run through Vega."""
    import vl_convert

    vega = vl_convert.vegalite_to_vega(spec, vl_version=vl_version) if vl_version else spec
    vl_convert.vega_to_scenegraph(vega, allowed_base_urls=[])
    return vega


TOO_MANY_PIXELS = "the picture would be "
"""How the child's refusal of a picture past ``max_pixels`` begins (the parent tells it by this)."""


def _render(vega: dict[str, Any], fmt: str, scale: float, max_pixels: int | None = None) -> str:
    """The chart as SVG text, or PNG bytes in base64; a PNG of more than ``max_pixels`` (its
    scene's size times ``scale``, squared) is refused before it is painted."""
    import vl_convert

    if fmt == "svg":
        return vl_convert.vega_to_svg(vega, allowed_base_urls=[])
    if max_pixels is not None:
        scene = vl_convert.vega_to_scenegraph(vega, allowed_base_urls=[])
        width, height = math.ceil(scene["width"] * scale), math.ceil(scene["height"] * scale)
        if width * height > max_pixels:
            raise ValueError(f"{TOO_MANY_PIXELS}{width:,} x {height:,} = {width * height:,} pixels")
    return base64.b64encode(bytes(vl_convert.vega_to_png(vega, scale=scale, allowed_base_urls=[]))).decode("ascii")


def serve() -> None:
    """Answer calls on standard input until it closes. Replies go to a copy of standard output, which
    itself is pointed at standard error: whatever the engine prints cannot garble a reply. The
    JavaScript engine is warmed up first (a second and more), while the parent runs its rules, and the
    first message (the versions) says it is ready."""
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    requests = sys.stdin.buffer
    import vl_convert

    versions = list(vl_convert.get_vegalite_versions())
    with contextlib.suppress(ValueError):
        _compile({"mark": "point", "data": {"values": [{"a": 1}]}}, versions[-1])
    _write(replies, {"versions": versions})  # ready: the first call's time is its own
    operations: dict[str, Callable[..., Any]] = {"compile": _compile, "render": _render}
    while True:
        try:
            request = _read(requests)
        except EOFError:
            return
        try:
            reply = {"result": operations[request["op"]](**request["args"])}
        except ValueError as exc:
            reply = {"error": str(exc)}
        _write(replies, reply)
