"""The permission bits of a file the provider writes (``file_mode``), checked when a DAG file is
parsed: here, not with the download (:mod:`analytics_provider.hooks.download`), which only a
running task imports."""

from __future__ import annotations

from typing import Any

from analytics_provider.exceptions import AnalyticsParameterError

FILE_MODE_RULE = "an int from 0 to 0o777 (such as 0o640), or None for what a plain write gives"


def check_file_mode(file_mode: Any) -> int | None:
    """``file_mode`` as given, or :class:`AnalyticsParameterError`: permission bits only (no
    setuid, setgid or sticky bit), as an int (``0o640``, not the text ``"0640"``)."""
    if file_mode is not None and (isinstance(file_mode, bool) or not isinstance(file_mode, int)
                                  or not 0 <= file_mode <= 0o777):
        raise AnalyticsParameterError(f"file_mode must be {FILE_MODE_RULE}; got {file_mode!r}")
    return file_mode
