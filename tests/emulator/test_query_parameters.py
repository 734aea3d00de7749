"""Every query parameter of every operation in the vendor's document: taken by the hook, read by the emulator.

For each operation and each of its query parameters (from the committed vendor facts), the hook's
method is called with that one option (plus the required ones) against the emulator over loopback;
the request must carry it in the vendor's form (``name[]=`` for arrays), and the emulator's handler
must read it. A parameter the hook's method lacks, or that the emulator ignores, fails the test.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from vendor_facts import vendor_document

from analytics_provider.api.wire.operations import OPERATIONS, QueryParam
from analytics_provider.hooks.analytics import AnalyticsHook
from analytics_provider.testing.emulator import api as api_module
from analytics_provider.testing.emulator.app import AnalyticsEmulator
from analytics_provider.testing.emulator.handlers import Call
from analytics_provider.testing.emulator.pagination import encode_cursor
from analytics_provider.testing.emulator.seed import TARGET_COMMIT

from .conftest import Api

VENDOR = vendor_document()


def vendor_query_parameters() -> dict[str, list[str]]:
    """``{operation name: [query parameter names]}`` for every vendor operation that has any."""
    by_route = {(op.method, op.path): name for name, op in OPERATIONS.items()}
    found: dict[str, list[str]] = {}
    for path, item in VENDOR["paths"].items():
        common = item.get("parameters", [])
        for method, op in item.items():
            if method not in ("get", "post", "put", "delete"):
                continue
            params = [VENDOR["components"]["parameters"][p["$ref"].split("/")[-1]] if "$ref" in p else p
                      for p in [*common, *op.get("parameters", [])]]
            names = [p["name"] for p in params if p["in"] == "query"]
            if names:
                found[by_route[(method.upper(), path)]] = names
    return found


VENDOR_QUERY = vendor_query_parameters()
PAIRS = [(name, param) for name, params in sorted(VENDOR_QUERY.items()) for param in params]

# values the seed makes meaningful; the others come from the parameter's type and choices
VALUES: dict[tuple[str, str], Any] = {
    ("get_dependants", "type"): "DataSource",
    ("is_email_used", "email"): "analyst@example.org",
    ("list_data_alerts", "source_id"): "101",
    ("list_data_models", "branch_name"): "master",
    ("list_data_models", "commit_oid"): TARGET_COMMIT,
    ("list_data_schedules", "source_type"): "Dashboard",
}
PATH_ARGS: dict[str, tuple[Any, ...]] = {
    "get_dashboard_widget": (101,), "get_data_set": (1,), "get_group": (1,), "get_query_report": (11,),
}


def value_for(name: str, param: QueryParam, job_id: int) -> Any:
    if (name, param.name) in VALUES:
        value = VALUES[(name, param.name)]
    elif param.name in ("after", "before"):
        value = encode_cursor(1)
    elif param.name in ("ids", "job_id"):
        value = job_id if name != "list_users" else 1
    elif param.choices:
        value = param.choices[0]
    elif param.kind is bool:
        value = True
    elif param.kind in (int, float) or param.name.endswith("_id"):
        value = 1
    else:
        value = "a"
    return [value] if param.many and not isinstance(value, list) else value


@dataclass
class Reads:
    """The query keys the emulator's handlers looked at, per operation."""

    seen: dict[str, set[str]]


class _RecordingQuery(dict[str, Any]):
    def __init__(self, data: dict[str, Any], seen: set[str]) -> None:
        super().__init__(data)
        self._seen = seen

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        self._seen.add(key)
        return super().get(key, default)

    def __getitem__(self, key: str) -> Any:
        self._seen.add(key)
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self._seen.add(str(key))
        return super().__contains__(key)


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[Reads]:
    recorded = Reads({})

    @dataclass
    class RecordingCall(Call):
        def __post_init__(self) -> None:
            self.query = _RecordingQuery(self.query, recorded.seen.setdefault(self.op.name, set()))

    monkeypatch.setattr(api_module, "Call", RecordingCall)
    yield recorded


def _call(hook: AnalyticsHook, name: str, kwargs: dict[str, Any], job_id: int, tmp_path: Path) -> None:
    method = getattr(hook, name)
    if name == "download_export":
        kwargs = {**kwargs, "destination": tmp_path / "export.csv"}
    result = method(*PATH_ARGS.get(name, (job_id,) if name == "get_job" else ()), **kwargs)
    if not isinstance(result, (dict, list, bool, Path, str)) and hasattr(result, "__iter__"):
        next(iter(result), None)  # a lazy list: fetch its first page


def test_every_vendor_query_parameter_is_taken_by_the_hook_and_read_by_the_emulator(
    emu: AnalyticsEmulator, api: Api, analytics_connection: str, reads: Reads, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    hook = AnalyticsHook(analytics_conn_id=analytics_connection)
    job_id = api.export()
    hook_lacks, not_sent, emulator_ignores = [], [], []
    for name, wire in PAIRS:
        op = OPERATIONS[name]
        param = op.query_param(wire)
        assert param is not None, f"{name}: the operations table lacks {wire}"
        if param.arg not in inspect.signature(getattr(AnalyticsHook, name)).parameters:
            hook_lacks.append(f"{name}({param.arg}=...)")
            continue
        required = {p.arg: value_for(name, p, job_id) for p in op.query if p.required}
        reads.seen.pop(name, None)
        before = len(emu.requests)
        _call(hook, name, {**required, param.arg: value_for(name, param, job_id)}, job_id, tmp_path)
        sent = [r for r in emu.requests[before:] if r.operation == name]
        key = f"{wire}[]" if param.many else wire
        if not sent or key not in sent[0].query:
            not_sent.append(f"{name}: {key}")
        if wire not in reads.seen.get(name, set()):
            emulator_ignores.append(f"{name}: {wire}")
    with capsys.disabled():
        print(f"\nvendor query parameters: {len(VENDOR_QUERY)} operations, {len(PAIRS)} parameters; "
              f"missing in the hook: {len(hook_lacks)}, not sent: {len(not_sent)}, "
              f"ignored by the emulator: {len(emulator_ignores)}")
    assert (hook_lacks, not_sent, emulator_ignores) == ([], [], [])


def test_the_completeness_check_can_fail(emu: AnalyticsEmulator, analytics_connection: str, reads: Reads) -> None:
    # the recorder sees what a handler reads, and only that: an unread option stays unseen
    hook = AnalyticsHook(analytics_conn_id=analytics_connection)
    next(iter(hook.list_groups(sort="id_desc")))
    assert "sort" in reads.seen["list_groups"] and "include_embed_info" not in reads.seen["list_groups"]
    assert "no_such_option" not in inspect.signature(AnalyticsHook.list_users).parameters
