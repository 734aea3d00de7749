"""The command-line tools' ``--help`` is plain text, not reStructuredText."""

from __future__ import annotations

import subprocess
import sys

import pytest

MARKUP = ("``", ":class:", ":doc:", ":meth:", ":ref:", "**")


@pytest.mark.parametrize(
    "command",
    [
        ["analytics_provider.testing.emulator", "--help"],
        ["analytics_provider.aml", "--help"],
        ["analytics_provider.aml", "lint", "--help"],
    ],
    ids=["emulator", "aml", "aml-lint"],
)
def test_help_is_plain_text(command: list[str]) -> None:
    result = subprocess.run([sys.executable, "-m", *command], capture_output=True, text=True, check=True)
    assert result.stdout.startswith("usage: python -m ")
    assert [m for m in MARKUP if m in result.stdout] == []
