"""The end-to-end run's ERROR scan: what it counts as an error record, and what it lets pass."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import e2e

LOG = """\
2026-11-25T13:11:39.154391Z [info     ] Started server process [20124] [uvicorn.error] loc=server.py:103
2026-11-25T13:19:45.734007Z [info     ] Secrets backends loaded for worker [supervisor]
--- Supervised process Last chance exception handler ---
Traceback (most recent call last):
  File "task_runner.py", line 1579, in _run_task_and_map_outcome
BrokenPipeError: [Errno 32] Broken pipe
2026-11-25T13:20:00.000000Z [error    ] Task failed with exception [task] error_detail=HTTP 403 on download
{"timestamp": "2026-11-25T13:20:01Z", "level": "error", "event": "XCom not found"}
2026-11-25T13:20:02.000000Z [warning  ] ERROR is only a word here? no: a WARNING record naming ERROR
"""


def test_records_keep_a_traceback_with_the_line_before_it() -> None:
    records = list(e2e.log_records(LOG))
    assert len(records) == 5
    assert records[1].startswith("2026-11-25T13:19:45") and records[1].endswith("Broken pipe")


def test_error_records_are_errors_tracebacks_and_json_errors_not_uvicorn_error_loggers() -> None:
    flagged = [r.splitlines()[0][:30] for r in e2e.log_records(LOG) if e2e.ERROR_RECORD.search(r)]
    assert flagged == [
        "2026-11-25T13:19:45.734007Z [i",  # the traceback's record
        "2026-11-25T13:20:00.000000Z [e",
        '{"timestamp": "2026-11-25T13:2',
        "2026-11-25T13:20:02.000000Z [w",  # an upper-case ERROR anywhere counts: better loud than blind
    ]


def test_only_the_injected_failures_are_explained() -> None:
    records = [r for r in e2e.log_records(LOG) if e2e.ERROR_RECORD.search(r)]
    explained = [next((why for why, p in e2e.EXPECTED_ERRORS.items() if p.search(r)), None) for r in records]
    assert explained[0] is None  # a broken pipe is nobody's plan
    assert explained[1] == "the injected 403 on the first download (its task retries)"
    assert explained[2] is None  # an XCom read that fails is a bug of the example
