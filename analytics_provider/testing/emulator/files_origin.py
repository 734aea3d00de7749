"""The files origin: a stand-in for object storage serving export files by signed, expiring paths."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from xml.sax.saxutils import escape

from analytics_provider.testing.emulator.errors import whole_seconds
from analytics_provider.testing.emulator.exports import ExportStore
from analytics_provider.testing.emulator.faults import FILES_OPERATION, FaultPlan
from analytics_provider.testing.emulator.wire import Incoming, Outcome

PATH = re.compile(r"^/files/([^/]+)/([^/]+)$")
CODES = {403: "AccessDenied", 404: "NoSuchKey", 405: "MethodNotAllowed", 500: "InternalError", 503: "SlowDown"}


def xml_error(status: int, message: str) -> Outcome:
    """An error as object storage writes it: a small XML document."""
    code = CODES.get(status, "Error")
    body = '<?xml version="1.0" encoding="UTF-8"?>\n' + (
        f"<Error><Code>{code}</Code><Message>{escape(message)}</Message></Error>"
    )
    return Outcome(status, body.encode(), {"Content-Type": "application/xml"})


class FilesService:
    """Answers GET (and HEAD) of ``/files/<token>/<name>``; needs no key."""

    def __init__(self, exports: ExportStore, faults: FaultPlan, sleep: Callable[[float], None] = time.sleep) -> None:
        self.exports = exports
        self.faults = faults
        self._sleep = sleep

    def answer(self, request: Incoming) -> Outcome:
        outcome = self._answer(request)
        outcome.operation = FILES_OPERATION
        return outcome

    def _answer(self, request: Incoming) -> Outcome:
        if request.method not in ("GET", "HEAD"):
            return xml_error(405, f"{request.method} is not allowed here")
        fault = self.faults.take(FILES_OPERATION)
        if fault is not None:
            if fault.delay:
                self._sleep(fault.delay)
            if fault.drop:
                return Outcome(drop=True)
            if fault.status is not None:
                outcome = xml_error(fault.status, "Injected failure")
                if fault.retry_after is not None:
                    outcome.headers["Retry-After"] = str(whole_seconds(fault.retry_after))
                return outcome
        found = PATH.match(request.path)
        if found is None:
            return xml_error(404, "The specified key does not exist.")
        job_id, reason = self.exports.verify(found.group(1))
        spec = self.exports.spec(job_id) if job_id is not None else None
        if job_id is None or spec is None:
            return xml_error(403, "Request has expired" if reason == "expired" else "Signature does not match")
        path = self.exports.file(job_id)
        headers = {
            "Content-Type": spec.content_type,
            "Content-Disposition": f'attachment; filename="{spec.name}"',
            "Cache-Control": "private, max-age=0",
        }
        return Outcome(200, headers=headers, file=path, truncate=fault is not None and fault.truncate)
