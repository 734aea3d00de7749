"""``make demo`` keeps the output of each ``airflow dags test`` (the task logs: that command runs the
tasks in its own process and logs them to its output, not to files) where it says it does."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import demo


def test_a_commands_output_is_kept_whole_in_its_log(tmp_path, capsys) -> None:
    log = tmp_path / "logs" / "dags-test-x.log"
    script = "import sys; print('task log line 1'); print('task log line 2'); print('a warning', file=sys.stderr)"
    output = demo.run(["python", "-c", script], dict(os.environ), "ran", log=log)
    assert output.splitlines() == ["task log line 1", "task log line 2"]
    assert log.read_text(encoding="utf-8").splitlines() == ["task log line 1", "task log line 2", "a warning"]
    assert "task log line" not in capsys.readouterr().out  # the console gets the demo's summary only


def test_a_failed_commands_output_is_kept_too(tmp_path) -> None:
    log = tmp_path / "dags-test-y.log"
    with pytest.raises(SystemExit, match="exit status 3"):
        demo.run(["python", "-c", "print('the task failed here'); raise SystemExit(3)"], dict(os.environ), "ran",
                 log=log)
    assert "the task failed here" in log.read_text(encoding="utf-8")


def test_the_task_logs_are_under_the_demos_airflow_home() -> None:
    assert Path(demo.AIRFLOW_ENV["AIRFLOW_HOME"]) / "logs" == demo.LOGS
    assert demo.LOGS.is_relative_to(demo.DEMO)
