"""``AnalyticsEmulator``: the service's HTTP API on loopback, its export files on a second origin."""

from __future__ import annotations

import json
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from analytics_provider.testing.emulator.api import PREFIX, ApiService
from analytics_provider.testing.emulator.control import ControlService, is_control
from analytics_provider.testing.emulator.faults import Fault, FaultPlan, check_operation
from analytics_provider.testing.emulator.files_origin import FilesService
from analytics_provider.testing.emulator.jobs import Job
from analytics_provider.testing.emulator.permissions import ROLE_ALIASES, ROLE_RANK
from analytics_provider.testing.emulator.ratelimit import RateLimiter
from analytics_provider.testing.emulator.records import RecordedRequest, RequestLog
from analytics_provider.testing.emulator.seed import KEYED_USERS, SEED_USERS
from analytics_provider.testing.emulator.server import EmulatorHTTPServer
from analytics_provider.testing.emulator.wire import Incoming, Outcome
from analytics_provider.testing.emulator.world import World

DEFAULT_HEADER = "X-Service-Key"  # the API document's name, which tests and connections send
KEY_HEADERS = (DEFAULT_HEADER, "X-Holistics-Key")  # accepted by default: the document's and the vendor's


class AnalyticsEmulator:
    """A local emulator of the analytics service. ``with AnalyticsEmulator() as emu: ...``

    :param host: address both origins listen on.
    :param port: port of the API origin (0: a free one).
    :param files_port: port of the files origin (0: a free one).
    :param api_key: the admin's key (default: a random one).
    :param job_duration: seconds a job takes from ``created`` to its final status.
    :param rate_limit_frame: seconds of a rate-limit frame.
    :param header_name: the one header that carries the key; by default either of ``KEY_HEADERS``
        is read (``header_name`` is then the document's, the one connections send).
    :param retry_after: ``"seconds"`` or ``"date"``: how ``Retry-After`` is written (after a
        :meth:`reset` too; :meth:`set_rate_limit` changes it until then).
    :param clock: the world's time in Unix seconds (default ``time.time``): when jobs were created
        and what status they have now. A test on a fake clock passes its ``time`` (or calls
        ``FakeClock.install(monkeypatch, emulator)``), and jobs end as that clock moves.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        files_port: int = 0,
        api_key: str | None = None,
        job_duration: float = 0.3,
        rate_limit_frame: float = 60.0,
        header_name: str | None = None,
        retry_after: str = "seconds",
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.host, self.port, self.files_port = host, port, files_port
        self.header_name = header_name or DEFAULT_HEADER
        self.key_headers = (header_name,) if header_name else KEY_HEADERS
        self.rate_limit_frame = rate_limit_frame
        keys = {uid: secrets.token_hex(20) for uid in KEYED_USERS}
        if api_key:
            keys[KEYED_USERS[0]] = api_key
        self._tmp = Path(tempfile.mkdtemp(prefix="analytics-emulator-"))
        self.world = World(keys, job_duration, self._tmp, clock or time.time)
        self.limiter = RateLimiter(rate_limit_frame)
        self.retry_after = retry_after
        self.limiter.configure(retry_after=retry_after)
        self.faults = FaultPlan()
        self.log = RequestLog()
        self._servers: list[EmulatorHTTPServer] = []
        self._lock = threading.Lock()

    # -- life cycle ------------------------------------------------------------------------------

    def start(self) -> AnalyticsEmulator:
        """Bind both origins and serve them from daemon threads."""
        with self._lock:
            if self._servers:
                return self
            self._tmp.mkdir(parents=True, exist_ok=True)  # again after a stop()
            api = ApiService(self.world, self.limiter, self.faults, self.key_headers)
            control = ControlService(self)

            def api_origin(request: Incoming) -> Outcome:
                return control.answer(request) if is_control(request.path) else api.answer(request)

            files = FilesService(self.world.exports, self.faults)
            api_server = EmulatorHTTPServer((self.host, self.port), api_origin, origin="api", log=self.log,
                                            key_headers=self.key_headers, recorded=lambda path: not is_control(path))
            files_server = EmulatorHTTPServer((self.host, self.files_port), files.answer, origin="files",
                                              log=self.log, key_headers=self.key_headers)
            self._servers = [api_server, files_server]
            self.port, self.files_port = api_server.port, files_server.port
            self.world.app_url = f"http://{self._url_host}:{self.port}"
            self.world.files_url = f"http://{self._url_host}:{self.files_port}"
            for server in self._servers:
                server.start()
        return self

    def stop(self) -> None:
        """Shut both origins down, end open connections, remove the export files."""
        with self._lock:
            servers, self._servers = self._servers, []
        for server in servers:
            server.close()
        shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> AnalyticsEmulator:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return bool(self._servers)

    @property
    def _url_host(self) -> str:
        return f"[{self.host}]" if ":" in self.host else self.host

    # -- addresses and keys ------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """The API's base address, ending in ``/api/v2``."""
        return f"http://{self._url_host}:{self.port}{PREFIX}"

    @property
    def files_url(self) -> str:
        return self.world.files_url

    @property
    def api_key(self) -> str:
        """The key of the seeded admin."""
        return self.world.keys[KEYED_USERS[0]]

    def key_for(self, role: str) -> str:
        """The key of a seeded active user with ``role`` (``viewer`` is an alias of ``user``)."""
        role = ROLE_ALIASES.get(role, role)
        if role not in ROLE_RANK:
            raise ValueError(f"unknown role {role!r}; roles: {', '.join(ROLE_RANK)}")
        user_id = next(uid for uid, _, user_role, _, _ in SEED_USERS if user_role == role and uid in KEYED_USERS)
        return self.world.keys[user_id]

    def connection_extra(self) -> dict[str, Any]:
        """The extras of an ``analytics`` Airflow connection to this emulator."""
        extra: dict[str, Any] = {"base_url": self.base_url}
        if self.header_name != DEFAULT_HEADER:
            extra["header_name"] = self.header_name
        return extra

    def connection_json(self, api_key: str | None = None) -> str:
        """The value of ``AIRFLOW_CONN_<ID>`` for this emulator (the admin's key unless given)."""
        return json.dumps({"conn_type": "analytics", "password": api_key or self.api_key,
                           "extra": self.connection_extra()})

    def info(self) -> dict[str, Any]:
        return {
            "base_url": self.base_url, "files_url": self.files_url, "api_key": self.api_key,
            "keys": {role: self.key_for(role) for role in ROLE_RANK}, "header_name": self.header_name,
            "key_headers": list(self.key_headers),
            "job_duration": self.job_duration, "rate_limit_frame": self.limiter.frame,
            "connection_json": self.connection_json(),
        }

    # -- inspection ----------------------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request both origins received (control endpoints excepted), in order."""
        return self.log.snapshot()

    def clear_requests(self) -> None:
        self.log.clear()

    @property
    def jobs(self) -> list[Job]:
        """Every job, oldest first; ``job.status`` is read from the clock."""
        with self.world.lock:
            return sorted(self.world.jobs.jobs.values(), key=lambda job: job.id)

    @property
    def job_duration(self) -> float:
        return self.world.job_duration

    @job_duration.setter
    def job_duration(self, seconds: float) -> None:
        """Duration of the jobs submitted from now on (until :meth:`reset`)."""
        if seconds < 0:
            raise ValueError("job_duration must not be negative")
        self.world.job_duration = float(seconds)

    # -- knobs ---------------------------------------------------------------------------------------

    def inject(
        self,
        operation_name: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        delay: float | None = None,
        drop: bool = False,
        truncate: bool = False,
        times: int = 1,
        body: Any = None,
        after: int = 0,
        rewrite: str | None = None,
    ) -> None:
        """The next ``times`` answers of an operation (or ``download_file``) fail as described
        (after ``after`` answers as usual: the third upsert of a sync, say).
        Faults of ``get_job`` reach ``list_jobs`` (a trigger's batched reads) too, unless it has
        its own. ``rewrite`` makes a 200 unusable (see :data:`~analytics_provider.testing.emulator.faults.REWRITES`)."""
        fault = Fault(status=status, retry_after=retry_after, delay=delay, drop=drop, truncate=truncate, body=body,
                      rewrite=rewrite)
        self.faults.add(operation_name, fault, times, after)

    def fail_next_job(self, operation_name: str, last_error_log: str = "Job failed",
                      error_lines: list[str] | None = None) -> None:
        """The next job started by ``operation_name`` ends in ``failure`` with this ``last_error_log``
        (its last ERROR log line, after ``error_lines``)."""
        check_operation(operation_name)
        with self.world.lock:
            self.world.jobs.fail_next(operation_name, last_error_log, error_lines or ())

    def script_next_job(self, operation_name: str, script: list[tuple[str, float]], *, by_reads: bool = False) -> None:
        """The next job started by ``operation_name`` passes through ``script``: ``[(status,
        seconds), ...]``, ending in ``success``, ``failure`` or ``cancelled`` (its seconds ignored),
        for example ``[("queued", 0.1), ("flow_pending", 0.3), ("running", 0.1), ("success", 0)]``.
        ``by_reads=True`` counts each step in reads of the job (Get Job, List Jobs) instead of seconds:
        ``[("flow_pending", 2), ("success", 0)]`` answers ``flow_pending`` to its first two reads,
        however slowly they come (for tests on a busy machine)."""
        check_operation(operation_name)
        with self.world.lock:
            self.world.jobs.script_next(operation_name, script, by_reads=by_reads)

    def set_publish_diagnostics(self, diagnostics: list[dict[str, Any]]) -> None:
        """From now on AML publish and validate jobs fail with these syntax-error diagnostics."""
        if not isinstance(diagnostics, list) or not all(isinstance(d, dict) for d in diagnostics):
            raise TypeError("diagnostics must be a list of dicts (category, code, message, file_path, start, end)")
        with self.world.lock:
            self.world.publish_diagnostics = [dict(d) for d in diagnostics]

    def clear_publish_diagnostics(self) -> None:
        with self.world.lock:
            self.world.publish_diagnostics = None

    def set_rate_limit(
        self, frame: float | None = None, quota: int | None = None, operation: str | None = None,
        retry_after: str | None = None,
    ) -> None:
        """Change the frame (counting restarts), or the quota of one operation (or of all); write
        ``Retry-After`` as ``"seconds"`` or as an HTTP ``"date"`` (both seen from the live service)."""
        self.limiter.configure(frame=frame, quota=quota, operation=operation, retry_after=retry_after)

    def set_export_size(self, widget_id: int | str, nbytes: int) -> None:
        """CSV exports of this widget submitted from now on are exactly ``nbytes`` long."""
        with self.world.lock:
            if str(widget_id) not in self.world.state.widgets:
                raise ValueError(f"no widget {widget_id!r}")
            if nbytes < 1:
                raise ValueError("nbytes must be positive")
            self.world.export_sizes[str(widget_id)] = int(nbytes)

    def add_users(self, n: int) -> list[int]:
        """Add ``n`` realistic active users (without keys); returns their ids."""
        return self.world.add_users(n)

    def add_dashboards(self, titles: list[str], like: int = 1) -> list[int]:
        """A dashboard per title (the same title twice makes two), each a copy of the seeded
        dashboard ``like`` under new ids: its widgets with their titles and data, its filters with
        their labels and options. Returns their ids."""
        return self.world.add_dashboards(list(titles), int(like))

    def set_answer_shapes(self, **shapes: bool) -> None:
        """What answers carry beyond what the document promises (until :meth:`reset`):
        ``widget_reports`` (default False), each dashboard widget's ``query_report`` in dashboard
        answers; ``data_set_reports`` (default True), a data set's ``reports`` when asked for;
        ``listed_widgets`` (default True), each dashboard's ``widgets`` in List Dashboards."""
        from analytics_provider.testing.emulator.world import ANSWER_SHAPES

        unknown = set(shapes) - set(ANSWER_SHAPES)
        if unknown or not all(isinstance(v, bool) for v in shapes.values()):
            raise ValueError(f"answer shapes are {', '.join(ANSWER_SHAPES)}, each True or False; got {shapes!r}")
        with self.world.lock:
            self.world.answer_shapes.update(shapes)

    def build_workspace(self, **sizes: Any) -> dict[str, Any]:
        """Add a large, consistent workspace: ``dashboards`` (5,000), ``widgets`` (20,000), ``models``
        (1,000, table ``schema_<i % 20>.table_<i:05d>``), ``data_sets`` (300), ``data_sources`` (3).
        Returns the ids added (:mod:`~analytics_provider.testing.emulator.workspace`)."""
        return self.world.build_workspace(**sizes)

    def add_jobs(self, count: int, seconds: float | None = None,
                 script: list[tuple[str, float]] | None = None) -> list[int]:
        """``count`` jobs of the admin's key that run ``seconds`` (the job duration unless given)
        from now, or pass through ``script`` (as :meth:`script_next_job`), made at once without a
        request each; returns their ids."""
        if count < 0:
            raise ValueError("count must not be negative")
        with self.world.lock:
            duration = self.world.job_duration if seconds is None else float(seconds)
            return self.world.jobs.add_many(int(count), KEYED_USERS[0], duration, script or ())

    def request_counts(self) -> dict[str, dict[str, int]]:
        """Requests received per operation (control endpoints excepted) and per answer status
        (``"dropped"``: no answer), since the start or :meth:`clear_requests`; kept while
        :meth:`set_recording` is off too."""
        return self.log.counts()

    def set_recording(self, enabled: bool) -> None:
        """Keep each request in :attr:`requests` (the default), or only count them (a benchmark's
        hundreds of thousands of polls)."""
        self.log.recording = bool(enabled)

    def reset(self) -> None:
        """Back to the seed: data, jobs, files, faults, rate-limit counters and settings, requests."""
        self.world.reset()
        self.faults.clear()
        self.limiter.reset(self.rate_limit_frame)
        self.limiter.configure(retry_after=self.retry_after)
        self.log.clear()
        self.log.recording = True
