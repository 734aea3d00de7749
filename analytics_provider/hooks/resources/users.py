"""Users: who they are, invitations, soft deletes, API keys."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from analytics_provider.api.operations import USER_ROLES
from analytics_provider.exceptions import AnalyticsParameterError
from analytics_provider.hooks.resources.base import Id, Json, ResourceMethods, check_choice, given

if TYPE_CHECKING:
    from analytics_provider.api.pagination import Pages


class UserMethods(ResourceMethods):
    def get_current_user(self) -> Json:
        """The user the API key belongs to."""
        return self.call("get_current_user")

    def list_users(
        self,
        *,
        search_term: str | None = None,
        status: str | None = None,
        statuses: Sequence[str] | None = None,
        ids: Sequence[int] | None = None,
        role: str | None = None,
        has_authentication_token: bool | None = None,
        exclude_deleted: bool | None = None,
        sort: str | None = None,
        limit: int | None = None,
        after: str | None = None,
        before: str | None = None,
    ) -> Pages:
        """Users (lazily, page by page); ``status`` (or several ``statuses``): active, deleted, pending;
        ``ids`` narrows to those users. The live service was seen to ignore ``statuses`` and ``ids``
        (it answered every user): filter the items again where it matters."""
        return self.paginate("list_users", {
            "search_term": search_term, "status": status, "statuses": statuses, "ids": ids, "role": role,
            "has_authentication_token": has_authentication_token, "exclude_deleted": exclude_deleted,
            "sort": sort, "limit": limit, "after": after, "before": before,
        })

    def update_user(self, user_id: Id, user: Mapping[str, Any]) -> Json:
        return self.call("update_user", user_id, body=dict(user))

    def delete_user(self, user_id: Id) -> Json:
        """Soft-delete a user: access is revoked, their resources stay theirs."""
        return self.call("delete_user", user_id)

    def restore_user(self, user_id: Id) -> Json:
        """Undo a soft delete; answers ``{message}``."""
        return self.call("restore_user", user_id)

    def invite_users(
        self,
        emails: Sequence[str],
        role: str,
        *,
        allow_authentication_token: bool | None = None,
        enable_export_data: bool | None = None,
        group_ids: Sequence[int] | None = None,
        message: str | None = None,
    ) -> Json:
        """Invite users by e-mail; starts a job. Never retried once it may have been received."""
        if not emails or isinstance(emails, str):
            raise AnalyticsParameterError("invite_users: emails must be a non-empty list of addresses")
        check_choice("invite_users", "role", role, USER_ROLES)
        body = {"emails": list(emails), "role": role, **given({
            "allow_authentication_token": allow_authentication_token, "enable_export_data": enable_export_data,
            "group_ids": group_ids, "message": message,
        })}
        return self.call("invite_users", body=body)

    def resend_user_invite(self, user_id: Id) -> Json:
        """E-mail a pending user's invitation again; returns the Job. Never re-sent once received."""
        return self.call("resend_user_invite", user_id)

    def is_email_used(self, email: str) -> bool:
        return bool(self.call("is_email_used", query={"email": email}))

    def revoke_user_api_key(self, user_id: Id) -> Json:
        """The user's API key stops working at once (an admin may revoke anyone's, a user their own)."""
        return self.call("revoke_user_api_key", user_id)
