"""A git repository of an AML project for the tests (the branch head the validate and publish
operators read with ``git ls-remote``)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
                               "GIT_COMMITTER_EMAIL": "t@example.com", "PATH": "/usr/bin:/bin", "HOME": str(repo)})
    return done.stdout.strip()


def commit(repo: Path, text: str) -> str:
    """Commit ``text`` as the project's model file; the new head."""
    (repo / "orders.model.aml").write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", text)
    return git(repo, "rev-parse", "HEAD")


def aml_repository(folder: Path) -> Path:
    """A repository in ``folder`` with one commit on ``master``."""
    repo = folder / "aml-project"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "master")
    commit(repo, "Model orders {}")
    return repo
