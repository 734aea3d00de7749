"""The command-line tools' ``--help`` is plain text, not reStructuredText, and imports no Airflow
(a help page is read at once: Airflow takes seconds to import)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

# double backticks, an interpreted-text role (":class:`X`", ":doc:`x`"), strong emphasis
MARKUP = re.compile(r"``|:[a-z]+(?::[a-z]+)?:`|\*\*")


@pytest.mark.parametrize(
    "command",
    [
        ["analytics_provider.testing.emulator", "--help"],
        ["analytics_provider.aml", "--help"],
        ["analytics_provider.aml", "lint", "--help"],
        ["analytics_provider.aml", "preview", "--help"],
        ["analytics_provider.manage", "--help"],
        ["analytics_provider.manage", "check", "--help"],
        ["analytics_provider.manage", "plan", "--help"],
        ["analytics_provider.manage", "apply", "--help"],
    ],
    ids=["emulator", "aml", "aml-lint", "aml-preview", "manage", "manage-check", "manage-plan", "manage-apply"],
)
def test_help_is_plain_text_and_imports_no_airflow(command: list[str]) -> None:
    # as a user runs it: not in the suite's unit-test mode, in which Airflow logs loading its test
    # configuration to the standard output the first time a process of a fresh home imports it
    env = {k: v for k, v in os.environ.items() if k != "AIRFLOW__CORE__UNIT_TEST_MODE"}
    result = subprocess.run([sys.executable, "-X", "importtime", "-m", *command],
                            capture_output=True, text=True, check=True, env=env)
    assert result.stdout.startswith("usage: python -m ")
    assert MARKUP.findall(result.stdout) == []
    lines = result.stderr.splitlines()
    imported = [line.rpartition("|")[2].strip() for line in lines if line.startswith("import time:")]
    assert "analytics_provider" in imported  # -X importtime listed the imports
    assert [name for name in imported if name == "airflow" or name.startswith("airflow.")] == []
