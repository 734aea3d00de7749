"""Operators that make the service's access follow a table: user attributes and group members."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from analytics_provider.access.rows import AttributeColumns, MemberColumns, given_rows, query_rows
from analytics_provider.api.wire.choices import USER_ROLES
from analytics_provider.exceptions import naming_the_task, refused
from analytics_provider.lineage_mixin import LineageFunction
from analytics_provider.operators.analytics import is_templated
from analytics_provider.operators.as_code import AsCodeOperator

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context

    from analytics_provider.access.attributes import UserAttributeSync
    from analytics_provider.access.groups import GroupMemberSync


class _AccessSyncOperator(AsCodeOperator):
    """Read rows, plan, log the plan, apply it (unless ``dry_run``); return the plan as XCom.

    :param analytics_conn_id: the ``analytics`` connection (templated).
    :param sql: a query whose rows the service should follow (templated; a ``.sql`` file too);
        needs ``sql_conn_id``.
    :param sql_conn_id: any Airflow connection of a SQL database (``common.sql``: PostgreSQL,
        Snowflake, BigQuery, SQLite, ...).
    :param parameters: the query's parameters.
    :param rows: rows given instead of a query (a list, or an XCom): mappings by column name, or
        sequences in the order of the columns.
    :param delete_missing: also remove what the rows no longer hold (off: only add and change).
    :param invite_role: invite the users the rows name by e-mail that the service does not know,
        with this role (off: they are reported).
    :param dry_run: plan and log, write nothing. The result then holds the plan to apply later as
        it is (``saved``): a review shows it, an apply task takes it.
    :param plan: apply exactly this saved plan (templated: ``plan_task.output``, the result of a
        task with ``dry_run=True``) instead of reading rows and planning: the users (and groups) it
        touches are read again first and, if any changed since, nothing is written ("stale plan:
        plan again"). Not with ``sql`` or ``rows``.

    The result (XCom ``return_value``): the plan's counts, its first 1,000 changes, the unknown
    users, and ``applied``. Nothing is retried blindly: a run that fails part-way says what was
    applied, and the next run reads the service again and plans only what is left.
    """

    template_fields: Sequence[str] = (*AsCodeOperator.template_fields, "sql", "sql_conn_id", "parameters", "rows",
                                      "plan")
    template_ext: Sequence[str] = (".sql",)
    template_fields_renderers: ClassVar[dict[str, str]] = {"sql": "sql", "rows": "py"}
    ui_color = "#e8f5e9"

    def __init__(
        self,
        *,
        sql: str | None = None,
        sql_conn_id: str | None = None,
        parameters: Any = None,
        rows: Any = None,
        delete_missing: bool = False,
        invite_role: str | None = None,
        plan: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.sql = sql
        self.sql_conn_id = sql_conn_id
        self.parameters = parameters
        self.rows = rows
        self.delete_missing = delete_missing
        self.invite_role = invite_role
        self.plan = plan
        if plan is not None:
            given = {name: value for name, value in (("sql", sql), ("rows", rows), ("dry_run", self.is_dry_run),
                                                     ("delete_missing", delete_missing),
                                                     ("invite_role", invite_role)) if value not in (None, False)}
            if given:
                raise refused(self.task_id, ", ".join(given), given,
                              "left out with plan= (the saved plan holds what it applies)")
            self.check_saved_plan(plan)
            return
        if (sql is None) == (rows is None):
            raise refused(self.task_id, "sql or rows", {"sql": sql, "rows": rows}, "one of the two (not both)")
        if sql is not None and not sql_conn_id:
            raise refused(self.task_id, "sql_conn_id", sql_conn_id, "the connection of the database sql runs on")
        self.check_flags(delete_missing=delete_missing)
        if invite_role is not None and invite_role not in USER_ROLES:
            raise refused(self.task_id, "invite_role", invite_role, f"one of {', '.join(USER_ROLES)} or None")

    def make_sync(self) -> UserAttributeSync | GroupMemberSync:
        raise NotImplementedError

    def check_inputs(self) -> None:
        """Refuse bad rendered parameters before any request."""
        if self.rows is not None and not is_templated(self.rows):
            given_rows(self.rows, self.task_id)

    def execute(self, context: Context) -> dict[str, Any]:
        self.check_storage_at_start()
        if self.plan is not None:
            return self._apply_saved(context)
        with self.closing_hook():
            with naming_the_task(self.task_id):
                self.check_inputs()
                sync = self.make_sync()
                if self.sql is not None:
                    assert self.sql_conn_id is not None
                    rows: Iterable[Any] = query_rows(self.sql_conn_id, self.sql, self.parameters)
                    source = f"the query on {self.sql_conn_id}"
                else:
                    rows, source = given_rows(self.rows, self.task_id), "rows"
                plan = sync.plan(rows, source)
            self.lineage_targets = sync.targets()

            def apply() -> int:
                from analytics_provider.access.saved import apply_held

                try:
                    return apply_held(sync, plan, self.task_id, self.consent(context).once)
                finally:
                    self.lineage_targets = sync.targets()  # with what it created

            result = self.log_and_apply(plan, apply)
            if self.is_dry_run:
                result["saved"] = self.kept_small(self.save(sync, plan))
            return result

    def save(self, sync: Any, plan: Any) -> dict[str, Any]:
        """The plan as a saved plan."""
        raise NotImplementedError

    def apply_saved(self, saved: Any, consent: Any) -> int:
        """Apply a saved plan exactly (or nothing); the number applied."""
        raise NotImplementedError

    def bound(self) -> Any:
        """What this task manages, read from the service (None: it names nothing: the plan's own)."""
        return self.make_sync().read_managed()

    managed_parameters: ClassVar[tuple[str, ...]] = ()

    def writes_bounded_by(self) -> str:
        names = " or ".join(f"{name}=" for name in self.managed_parameters)
        if any(getattr(self, name) is not None for name in self.managed_parameters):
            return f"what this task manages ({names})"
        return f"what the plan says it manages (this task gives no {names} to bound it)"

    def _apply_saved(self, context: Context) -> dict[str, Any]:
        """Apply the saved plan exactly (or nothing: stale, edited, another version's)."""
        saved, changes = self.saved_changes(self.plan)
        writes = [c["write"] for c in changes if isinstance(c.get("write"), dict)]
        self.lineage_targets = sorted(
            {("groups", w["membership"]["group"]) for w in writes
             if isinstance((w.get("membership") or {}).get("group"), int)}
            | {("user_attributes", int(w["entry"]["user_attribute_id"])) for w in writes if w.get("entry")})
        with self.closing_hook():
            applied = self.apply_saved(saved, self.consent(context))
        return self.saved_result(saved, changes, applied)


class AnalyticsSyncUserAttributesOperator(_AccessSyncOperator):
    """Make the service's user attribute entries follow rows: ``(user, attribute, value)``.

    A user is an e-mail or an id; an attribute a name or an id; a value a string (several rows,
    or a list, give several values). Values are set as the user's own (``manual``) entry;
    ``delete_missing`` resets entries the rows do not hold to ``inherit`` (the values of the
    user's groups), for the managed attributes only.

    :param attributes: the attributes this task manages (default: those the rows name); rows
        naming another are refused. Needed by ``delete_missing``.
    :param user_column: the column naming the user (default ``user``).
    :param attribute_column: the column naming the attribute (default ``attribute``).
    :param value_column: the column holding a value (default ``value``); an empty value is no value.

    Requests: one per 100 users to list them, one per user read (the values they have), one more
    per user who has other values than the rows' (their own entries), one per 100 entries written.
    A user who already has the rows' values (their own, or their groups') gets no write.
    """

    template_fields: Sequence[str] = (*_AccessSyncOperator.template_fields, "attributes")
    managed_parameters = ("attributes",)
    describe_lineage = LineageFunction("describe_access_sync")
    takes_saved_plan = True

    def save(self, sync: Any, plan: Any) -> dict[str, Any]:
        from analytics_provider.access.saved import save_user_attributes

        return save_user_attributes(sync, plan)

    def apply_saved(self, saved: Any, consent: Any) -> int:
        from analytics_provider.access.saved import apply_saved_user_attributes

        return apply_saved_user_attributes(self.hook, saved, self.task_id, consent, self.applying, self.bound())

    def __init__(
        self,
        *,
        attributes: Sequence[Any] | None = None,
        user_column: str = "user",
        attribute_column: str = "attribute",
        value_column: str = "value",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.attributes = attributes
        self.columns = AttributeColumns(user_column, attribute_column, value_column)
        if self.delete_missing and attributes is None:
            raise refused(self.task_id, "attributes", attributes, "the attributes this task manages, with "
                          "delete_missing=True (those the rows name would leave out one whose values all became empty)")

    def make_sync(self) -> UserAttributeSync:
        from analytics_provider.access.attributes import UserAttributeSync

        attributes = [self.attributes] if isinstance(self.attributes, (str, int)) else self.attributes
        return UserAttributeSync(self.hook, self.task_id, columns=self.columns, attributes=attributes,
                                 delete_missing=self.delete_missing, invite_role=self.invite_role)


class AnalyticsSyncGroupMembersOperator(_AccessSyncOperator):
    """Make the service's group membership follow rows: ``(user, group)``.

    A user is an e-mail or an id; a group is named (a name of digits, ``"2024"``, is a name), or
    given by its id in a column of its own (``group_id_column``). ``delete_missing`` removes users
    from the managed groups the rows do not put them in.

    :param groups: the names of the groups this task manages (default: those the rows name).
        ``delete_missing`` needs them (or ``group_ids``).
    :param group_ids: the ids of groups this task manages (with ``groups`` or instead).
    :param create_missing_groups: create the groups rows name that do not exist (off: refused).
    :param user_column: the column naming the user (default ``user``).
    :param group_column: the column naming the group (default ``group``).
    :param group_id_column: a column holding the group's id instead (then ``group_column`` is not read).

    Requests: one per 100 users (their groups come with them), one per membership written.
    """

    template_fields: Sequence[str] = (*_AccessSyncOperator.template_fields, "groups", "group_ids")
    managed_parameters = ("groups", "group_ids")
    describe_lineage = LineageFunction("describe_access_sync")
    takes_saved_plan = True

    def save(self, sync: Any, plan: Any) -> dict[str, Any]:
        from analytics_provider.access.saved import save_group_members

        return save_group_members(sync, plan)

    def apply_saved(self, saved: Any, consent: Any) -> int:
        from analytics_provider.access.saved import apply_saved_group_members

        return apply_saved_group_members(self.hook, saved, self.task_id, consent, self.applying, self.bound())

    def __init__(
        self,
        *,
        groups: Sequence[Any] | None = None,
        group_ids: Sequence[Any] | None = None,
        create_missing_groups: bool = False,
        user_column: str = "user",
        group_column: str = "group",
        group_id_column: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.groups = groups
        self.group_ids = group_ids
        self.create_missing_groups = create_missing_groups
        self.columns = MemberColumns(user_column, group_column, group_id_column)
        if self.delete_missing and groups is None and group_ids is None:
            raise refused(self.task_id, "groups", groups, "the groups this task manages (or group_ids), with "
                          "delete_missing=True (those the rows name would leave out one whose last member left)")
        if not isinstance(create_missing_groups, bool):
            raise refused(self.task_id, "create_missing_groups", create_missing_groups, "True or False")

    def bound(self) -> Any:
        sync = self.make_sync()
        sync.create_missing_groups = True  # a group the plan creates is named by the task, not yet known
        return sync.read_managed()

    def make_sync(self) -> GroupMemberSync:
        from analytics_provider.access.groups import GroupMemberSync

        groups = [self.groups] if isinstance(self.groups, (str, int)) else self.groups
        group_ids = [self.group_ids] if isinstance(self.group_ids, (str, int)) else self.group_ids
        return GroupMemberSync(self.hook, self.task_id, columns=self.columns, groups=groups, group_ids=group_ids,
                               delete_missing=self.delete_missing,
                               create_missing_groups=self.create_missing_groups, invite_role=self.invite_role)


__all__ = ["AnalyticsSyncGroupMembersOperator", "AnalyticsSyncUserAttributesOperator"]
