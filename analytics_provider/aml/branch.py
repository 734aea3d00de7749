"""The AML project's branch head, read from its git repository (the service's API has no call for it)."""

from __future__ import annotations

import os
import re
import subprocess
from urllib.parse import urlsplit, urlunsplit

COMMIT = re.compile(r"^[0-9a-f]{7,64}$")
"""A commit id as git writes it (abbreviated or whole, SHA-1 or SHA-256)."""

GIT_TIMEOUT = 60.0


class BranchHeadError(RuntimeError):
    """The branch's head could not be read (no such repository or branch, git missing or failing)."""


def shown(repository: str) -> str:
    """The repository as it may be logged: a URL's user and password (a token) left out."""
    parts = urlsplit(repository)
    if parts.scheme and parts.netloc and "@" in parts.netloc:
        return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))
    return repository


def branch_head(repository: str, branch: str) -> str:
    """The commit ``branch`` points at in ``repository`` (a URL or a path ``git ls-remote`` reads)."""
    ref = f"refs/heads/{branch}"
    try:
        done = subprocess.run(
            ["git", "ls-remote", "--exit-code", "--", repository, ref],
            capture_output=True, text=True, timeout=GIT_TIMEOUT, check=False,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},  # never wait for a password prompt
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BranchHeadError(f"git ls-remote {shown(repository)} {ref}: {type(exc).__name__}: {exc}") from None
    heads = [line.split("\t") for line in done.stdout.splitlines() if line.endswith("\t" + ref)]
    if done.returncode != 0 or len(heads) != 1:
        why = "no such branch" if done.returncode == 2 else (done.stderr.strip() or f"exit status {done.returncode}")
        why = why.replace(repository, shown(repository))
        raise BranchHeadError(f"branch {branch!r} of {shown(repository)} could not be read: {why}")
    return heads[0][0]
