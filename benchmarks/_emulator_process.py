"""The emulator in a child process, so that a benchmark measures only its own process."""

from __future__ import annotations

import multiprocessing as mp
from multiprocessing.connection import Connection
from typing import Any


def _serve(conn: Connection, kwargs: dict[str, Any]) -> None:
    from analytics_provider.testing import AnalyticsEmulator

    with AnalyticsEmulator(**kwargs) as emulator:
        conn.send({"base_url": emulator.base_url, "api_key": emulator.api_key,
                   "connection_json": emulator.connection_json()})
        while True:
            method, args, call_kwargs = conn.recv()
            if method is None:
                return
            try:
                value = getattr(emulator, method)
                result = value(*args, **call_kwargs) if callable(value) else value
                conn.send(("ok", _plain(result)))
            except Exception as exc:  # handed back to the benchmark
                conn.send(("error", repr(exc)))


def _plain(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "__dict__") and not isinstance(value, type):
        return {k: _plain(v) for k, v in vars(value).items() if not k.startswith("_")}
    return value


class EmulatorProcess:
    """``with EmulatorProcess(job_duration=...) as emu: emu.call("inject", ...)``."""

    def __init__(self, **kwargs: Any) -> None:
        self._kwargs = kwargs
        context = mp.get_context("spawn")
        self._conn, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child, kwargs), daemon=True)

    def __enter__(self) -> EmulatorProcess:
        self._process.start()
        info = self._conn.recv()
        self.base_url: str = info["base_url"]
        self.api_key: str = info["api_key"]
        self.connection_json: str = info["connection_json"]
        return self

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        self._conn.send((method, args, kwargs))
        status, value = self._conn.recv()
        if status == "error":
            raise RuntimeError(f"emulator.{method} failed: {value}")
        return value

    def __exit__(self, *exc_info: object) -> None:
        self._conn.send((None, (), {}))
        self._process.join(timeout=10)
        if self._process.is_alive():
            self._process.terminate()
