"""``python -m analytics_provider.manage check|plan|apply PATH``: delivery files from CI, outside Airflow.

``check`` reads the files (a file, or a folder's ``*.yml``/``*.yaml``) and prints each finding as
``file:line:column: CODE message``; with ``--conn-id`` it also asks the service whether the
dashboards, reports and widgets named exist. ``plan`` checks, then prints what ``apply`` would
write; ``apply`` writes it. ``--scope NAME`` names the files' resources (``[managed: NAME/key]``):
only those are changed, and ``--prune`` (which needs it) deletes only those; ``--max-deletes`` and
``--allow-delete-all`` consent to deletes. The service is reached through an Airflow connection
(``--conn-id``, default ``analytics_default``: ``AIRFLOW_CONN_ANALYTICS_DEFAULT`` in the
environment does). Exit status: 0 done (or nothing found), 1 findings, a refused plan or a failed
write, 2 a usage error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from analytics_provider.deliveries.check import Declared, check, check_references
from analytics_provider.deliveries.files import load


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m analytics_provider.manage",
        description="Check, plan and apply delivery files from CI, outside Airflow.",  # plain text: not __doc__'s rST
        epilog="Exit status: 0 done (or nothing found), 1 findings or a failed write, 2 a usage error.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for name, text in (("check", "check the files (and with --conn-id, what they name on the service)"),
                       ("plan", "check, then show what apply would write"),
                       ("apply", "check, plan and write")):
        command = commands.add_parser(name, help=text, description=text)
        command.add_argument("path", help="a delivery file, or a folder of them")
        default = None if name == "check" else "analytics_default"
        command.add_argument("--conn-id", default=default,
                             help=f"the analytics connection (default {default or 'none: the files only'})")
        if name != "check":
            command.add_argument("--scope", help="the name these files' resources carry ([managed: <scope>/<key>]); "
                                                 "needed by --prune")
            command.add_argument("--prune", action="store_true",
                                 help="delete the resources of the scope that no file declares any more")
            command.add_argument("--max-deletes", type=int, metavar="N",
                                 help="refuse a plan that deletes more than N resources")
            command.add_argument("--allow-delete-all", action="store_true",
                                 help="allow a plan that deletes everything in scope, or files that declare nothing")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if not Path(args.path).exists():
        print(f"{args.path}: no such file or folder", file=sys.stderr)
        return 2
    problem = _usage_problem(args)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    declared, found = check(load(args.path))
    hook = None
    if not found and args.conn_id:
        from analytics_provider.hooks.analytics import AnalyticsHook

        hook = AnalyticsHook(args.conn_id)
        found = check_references(declared, hook)
    for diagnostic in found:
        print(diagnostic.format())
    if found:
        print(f"{len(found)} finding(s) in {args.path}", file=sys.stderr)
        return 1
    if args.command == "check":
        print(f"{len(declared)} object(s) in {args.path}: no finding")
        return 0
    return _plan_and_apply(args, hook, declared)


def _usage_problem(args: argparse.Namespace) -> str | None:
    from analytics_provider.deliveries.check import scope_problem

    if args.command == "check":
        return None
    problem = scope_problem(args.scope)
    if problem:
        return f"--scope must be {problem}; got {args.scope!r}"
    if args.max_deletes is not None and args.max_deletes < 0:
        return f"--max-deletes must be 0 or more; got {args.max_deletes}"
    if args.prune and args.scope is None:
        return ("--prune needs --scope: the name these files' resources carry ([managed: <scope>/<key>]), so that "
                "it deletes only what these files made (resources made without a scope are adopted, never pruned)")
    return None


def _plan_and_apply(args: argparse.Namespace, hook: Any, declared: list[Declared]) -> int:
    from analytics_provider.deliveries.plan import apply_deliveries, plan_deliveries
    from analytics_provider.plans.apply import SyncApplyError

    plan = plan_deliveries(hook, declared, scope=args.scope, prune=args.prune)
    print(plan.table())
    refusal = plan.refusal(args.max_deletes, args.allow_delete_all, ("--allow-delete-all", "--max-deletes"))
    if refusal:
        print(f"manage {args.command}: {refusal}", file=sys.stderr)
        return 1
    if args.command == "plan" or plan.is_empty:
        return 0
    try:
        applied = apply_deliveries(hook, plan, "manage apply")
    except SyncApplyError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"applied {applied} change(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
