"""``make help`` lists every target a user can run, each with what it does (its ``##`` comment)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_make_help_lists_every_phony_target_with_what_it_does() -> None:
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    phony = {name for line in re.findall(r"^\.PHONY:(.*)$", makefile, re.M) for name in line.split()}
    result = subprocess.run(["make", "--no-print-directory", "-s", "help"], cwd=REPO, capture_output=True,
                            text=True, check=True, timeout=60)
    listed = dict(re.findall(r"^\s*make (\S+)\s+(.+)$", result.stdout, re.M))
    assert set(listed) == phony, result.stdout
    assert "$(" not in result.stdout, result.stdout  # variables shown with their values
    # `make` alone is `make help` (PYTHON=false: were it the venv's target, it would fail, not install)
    plain = subprocess.run(["make", "--no-print-directory", "-s", "PYTHON=false"], cwd=REPO, capture_output=True,
                           text=True, check=True, timeout=60)
    assert plain.stdout == result.stdout
