"""What other tools relay or ask: git webhook events (the service checks their signature, not the
key) and the AI's skills."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from analytics_provider.api.operations import GITHUB_EVENTS, GITLAB_EVENTS
from analytics_provider.exceptions import AnalyticsParameterError
from analytics_provider.hooks.resources.base import Json, ResourceMethods, check_choice


class IntegrationMethods(ResourceMethods):
    def send_github_event(
        self, payload: Mapping[str, Any] | bytes, *, event: str, hook_id: str, signature: str
    ) -> list[Json]:
        """Relay a GitHub webhook delivery: ``payload`` as received (bytes keep the signed bytes exact)."""
        check_choice("send_github_event", "event", event, GITHUB_EVENTS)
        headers = {"X-GitHub-Event": event, "X-GitHub-Hook-ID": hook_id, "X-Hub-Signature-256": signature}
        return self._send_event("send_github_event", payload, headers) or []

    def send_gitlab_event(self, payload: Mapping[str, Any] | bytes, *, event: str, token: str) -> list[Json]:
        """Relay a GitLab webhook delivery (``token``: its ``X-Gitlab-Token``)."""
        check_choice("send_gitlab_event", "event", event, GITLAB_EVENTS)
        return self._send_event("send_gitlab_event", payload, {"X-Gitlab-Event": event, "X-Gitlab-Token": token}) or []

    def send_github_app_event(self, payload: Mapping[str, Any] | bytes, *, event: str, signature: str) -> Json:
        """Relay a GitHub App webhook delivery; answers ``{status: skipped or processed, data}``."""
        headers = {"X-GitHub-Event": event, "X-Hub-Signature-256": signature}
        return self._send_event("send_github_app_event", payload, headers)

    def _send_event(self, name: str, payload: Mapping[str, Any] | bytes, headers: Mapping[str, str]) -> Any:
        from analytics_provider.hooks.upload import send_json_with_headers

        for header, value in headers.items():
            if not isinstance(value, str) or not value:
                raise AnalyticsParameterError(f"{name}: the {header} header value must be a non-empty string")
        body = payload if isinstance(payload, bytes) else json.dumps(dict(payload)).encode("utf-8")
        return send_json_with_headers(self, name, body, headers)

    def list_ai_skills(self) -> list[Json]:
        return self.call("list_ai_skills") or []
