"""Export files: what each export job will write, built on first download, served by signed paths."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analytics_provider.testing.emulator.writers import CONTENT_TYPES, write_export

LINK_TTL = 3600.0  # seconds a download link stays valid


@dataclass(frozen=True)
class ExportSpec:
    """What an export job writes: the rows as they were when it was submitted."""

    job_id: int
    output: str
    title: str
    name: str
    columns: list[str]
    rows: list[list[Any]]
    size: int | None = None

    @property
    def content_type(self) -> str:
        return CONTENT_TYPES[self.output]


class ExportStore:
    """The export files on disk (a private temporary folder), and their signed download paths."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._secret = secrets.token_bytes(32)
        self._lock = threading.Lock()
        self._specs: dict[int, ExportSpec] = {}
        self._files: dict[int, Path] = {}
        self._building: dict[int, threading.Lock] = {}

    def register(self, spec: ExportSpec) -> None:
        with self._lock:
            self._specs[spec.job_id] = spec

    def spec(self, job_id: int) -> ExportSpec | None:
        with self._lock:
            return self._specs.get(job_id)

    def file(self, job_id: int) -> Path:
        """The job's file, written now if it is not yet on disk (one writer per job)."""
        with self._lock:
            spec = self._specs[job_id]
            lock = self._building.setdefault(job_id, threading.Lock())
        with lock:
            path = self._files.get(job_id)
            if path is None or not path.exists():
                path = self.directory / f"job-{job_id}.{spec.output}"
                write_export(path, spec.output, spec.title, spec.columns, spec.rows, spec.size)
                with self._lock:
                    self._files[job_id] = path
        return path

    def signed_path(self, job_id: int, now: float | None = None) -> str:
        spec = self._specs[job_id]
        expires = int((time.time() if now is None else now) + LINK_TTL)
        return f"/files/{job_id}.{expires}.{self._signature(job_id, expires)}/{spec.name}"

    def verify(self, token: str, now: float | None = None) -> tuple[int | None, str]:
        """The job id a token grants, or None and the reason (``invalid`` or ``expired``)."""
        parts = token.split(".")
        if len(parts) != 3 or not parts[0].isdigit() or not parts[1].isdigit():
            return None, "invalid"
        job_id, expires = int(parts[0]), int(parts[1])
        if not hmac.compare_digest(parts[2], self._signature(job_id, expires)) or job_id not in self._specs:
            return None, "invalid"
        if expires < (time.time() if now is None else now):
            return None, "expired"
        return job_id, ""

    def _signature(self, job_id: int, expires: int) -> str:
        return hmac.new(self._secret, f"{job_id}:{expires}".encode(), hashlib.sha256).hexdigest()[:32]

    def clear(self) -> None:
        with self._lock:
            self._secret = secrets.token_bytes(32)  # links handed out before the reset stop working
            self._specs.clear()
            self._files.clear()
            self._building.clear()
            for child in self.directory.iterdir():
                if child.is_dir():
                    shutil.rmtree(child, ignore_errors=True)
                else:
                    child.unlink(missing_ok=True)
