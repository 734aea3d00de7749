"""Control endpoints under ``/_emulator/`` on the API origin: drive the emulator from another process.

They need no key, are not rate limited and are not recorded. Bodies and answers are JSON.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from analytics_provider.testing.emulator.wire import Incoming, Outcome, json_outcome

PREFIX = "/_emulator"


def is_control(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/")


class ControlService:
    """``GET /_emulator/info``, ``POST /_emulator/reset``, ``POST /_emulator/inject`` and the rest."""

    def __init__(self, emulator: Any) -> None:  # the AnalyticsEmulator (app.py) that made this service
        self.emulator = emulator
        self.routes: dict[tuple[str, str], Callable[[dict[str, Any]], Any]] = {
            ("GET", "info"): lambda body: self.emulator.info(),
            ("POST", "reset"): lambda body: self.emulator.reset(),
            ("POST", "inject"): lambda body: self.emulator.inject(body.pop("operation"), **body),
            ("GET", "faults"): lambda body: self.emulator.faults.pending(),
            ("GET", "requests"): lambda body: [r.to_dict() for r in self.emulator.requests],
            ("DELETE", "requests"): lambda body: self.emulator.clear_requests(),
            ("GET", "jobs"): lambda body: [
                {**j.to_json(self.emulator.world.clock()), "operation": j.operation, "params": j.params}
                for j in self.emulator.jobs
            ],
            ("POST", "fail_next_job"): lambda body: self.emulator.fail_next_job(
                body["operation"], last_error_log=body.get("last_error_log", "Job failed"),
                error_lines=body.get("error_lines"),
            ),
            ("POST", "script_next_job"): lambda body: self.emulator.script_next_job(
                body["operation"], body["script"], by_reads=bool(body.get("by_reads", False))),
            ("POST", "set_rate_limit"): lambda body: self.emulator.set_rate_limit(**body),
            ("POST", "set_publish_diagnostics"): lambda body: (
                self.emulator.set_publish_diagnostics(body["diagnostics"])
                if body.get("diagnostics") is not None
                else self.emulator.clear_publish_diagnostics()
            ),
            ("POST", "set_export_size"): lambda body: self.emulator.set_export_size(body["widget_id"], body["nbytes"]),
            ("POST", "add_users"): lambda body: self.emulator.add_users(int(body["count"])),
            ("GET", "request_counts"): lambda body: self.emulator.request_counts(),
            ("POST", "set_recording"): lambda body: self.emulator.set_recording(body["enabled"]),
            ("POST", "add_dashboards"): lambda body: self.emulator.add_dashboards(body["titles"],
                                                                                  body.get("like", 1)),
            ("POST", "set_answer_shapes"): lambda body: self.emulator.set_answer_shapes(**body),
            ("POST", "build_workspace"): lambda body: self.emulator.build_workspace(**body),
            ("POST", "add_jobs"): lambda body: self.emulator.add_jobs(int(body["count"]), body.get("seconds"),
                                                                      body.get("script")),
            ("POST", "set_job_duration"): lambda body: setattr(self.emulator, "job_duration", float(body["seconds"])),
        }

    def answer(self, request: Incoming) -> Outcome:
        name = request.path[len(PREFIX):].strip("/") or "info"
        if request.method == "GET" and name.startswith("jobs/") and name.endswith("/done"):
            return self._job_done(name.split("/")[1])
        handler = self.routes.get((request.method, name))
        if handler is None:
            known = ", ".join(f"{m} {PREFIX}/{n}" for m, n in self.routes)
            return json_outcome(404, {"type": "BaseError", "message": f"No control endpoint {name!r}; known: {known}"})
        try:
            body = json.loads(request.body) if request.body.strip() else {}
            if not isinstance(body, dict):
                raise TypeError("the body must be a JSON object")
            result = handler(body)
        except (KeyError, TypeError, ValueError) as exc:
            return json_outcome(400, {"type": "InvalidParameterError", "message": f"{type(exc).__name__}: {exc}"})
        return json_outcome(200, {"ok": True, "result": result})

    def _job_done(self, job_id: str) -> Outcome:
        """``GET /_emulator/jobs/{id}/done``: 404 until the job succeeded, then 200.

        The wait a plain HTTP sensor can do (it polls until an answer is not 404); the benchmarks
        use it to compare the http provider's trigger with ours on the same jobs.
        """
        with self.emulator.world.lock:
            job = self.emulator.world.jobs.jobs.get(int(job_id)) if job_id.isdigit() else None
            status = job.status_at(self.emulator.world.clock()) if job is not None else "unknown"
        return json_outcome(200 if status == "success" else 404, {"id": job_id, "status": status})
