"""``python -m analytics_provider.manage check|plan|apply PATH``: delivery files from CI, outside Airflow.

``check`` reads the files (a file, or a folder's ``*.yml``/``*.yaml``) and prints each finding as
``file:line:column: CODE message``; with ``--conn-id`` it also asks the service whether the
dashboards, reports and widgets named exist. ``plan`` checks, then prints what ``apply`` would
write; ``apply`` writes it. ``--scope NAME`` names the files' resources (``[managed: NAME/key]``):
only those are changed, and ``--prune`` (which needs it) deletes only those; ``--max-deletes`` and
``--allow-delete-all`` consent to deletes. The service is reached through an Airflow connection
(``--conn-id``, default ``analytics_default``: ``AIRFLOW_CONN_ANALYTICS_DEFAULT`` in the
environment does). ``plan --out PLAN.json`` saves the plan and prints its digest (a new file, or
over a saved plan; ``--force`` over another file; never over an input, into the input folder or
through a symbolic link); ``apply --plan
PLAN.json --digest DIGEST`` applies exactly that plan (no files read) when its content has that
digest and it was made through a connection to the same service and account, after reading
again each resource it touches: if one changed since, it writes nothing ("stale plan: plan
again"). Both applies take the same apply locks, in ``--plan-storage`` (docs/reviewed_changes.rst
says which), and read each resource again before writing it. Exit status: 0 done (or nothing
found), 1 findings, a refused or stale plan or a failed write, 2 a usage error.
"""

from __future__ import annotations

import argparse
import getpass
import os
import re
import shlex
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from analytics_provider.deliveries.check import Declared


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
        command.add_argument("path", nargs="?" if name == "apply" else None,
                             help="a delivery file, or a folder of them" + (" (not with --plan)" if name == "apply"
                                                                            else ""))
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
        if name == "plan":
            command.add_argument("--out", metavar="PLAN.json",
                                 help="save the plan, for apply --plan, to a new file or over a saved plan (never "
                                      "an input, a file in the input folder, a folder or a link); its digest is "
                                      "printed")
            command.add_argument("--force", action="store_true",
                                 help="with --out: replace an existing file that is not a saved plan")
        if name == "apply":
            command.add_argument("--plan", metavar="PLAN.json",
                                 help="apply exactly this saved plan (refused if what it touches changed since)")
            command.add_argument("--digest", metavar="SHA256",
                                 help="with --plan: the digest plan --out printed (what the review approved); a "
                                      "plan whose content differs is refused")
            command.add_argument("--plan-storage", metavar="FOLDER",
                                 help="the folder (a path, or an object-storage URL) of the apply locks and, with "
                                      "--plan, of the records of the plans applied, shared by whatever else may "
                                      "apply them (a plan recorded there is refused); default: the Airflow plan "
                                      "storage ([common.io] xcom_objectstorage_path, else "
                                      "$AIRFLOW_HOME/analytics_provider/plans)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        return _run(args)
    except Exception as exc:  # the service unreachable, or refusing a read: said, not a traceback
        from analytics_provider.exceptions import AnalyticsApiError

        if not isinstance(exc, AnalyticsApiError):
            raise
        print(f"manage {args.command}: {exc}", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace) -> int:
    if getattr(args, "plan", None) is not None:
        return _apply_saved(args)
    if args.path is None:
        print("manage apply: give the files' PATH, or --plan PLAN.json", file=sys.stderr)
        return 2
    # imported once the arguments are read: they import Airflow (our errors are AirflowExceptions), which
    # ``--help`` and a usage error do without
    from analytics_provider.deliveries.check import check, check_references
    from analytics_provider.deliveries.files import load

    if not Path(args.path).exists():
        print(f"{args.path}: no such file or folder", file=sys.stderr)
        return 2
    problem = _usage_problem(args) or _out_problem(args)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    args.replace_out = getattr(args, "out", None) is not None and Path(args.out).exists()
    declared, found = check(load(args.path))
    hook = None
    titles: dict[tuple[str, int], str] = {}
    if not found and args.conn_id:
        from analytics_provider.hooks.analytics import AnalyticsHook

        hook = AnalyticsHook(args.conn_id)
        found = check_references(declared, hook, titles)
    for diagnostic in found:
        print(diagnostic.format())
    if found:
        print(f"{len(found)} finding(s) in {args.path}", file=sys.stderr)
        return 1
    if args.command == "check":
        print(f"{len(declared)} object(s) in {args.path}: no finding")
        return 0
    return _plan_and_apply(args, hook, declared, titles)


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
    return _storage_problem(args)


def _out_problem(args: argparse.Namespace) -> str | None:
    """Why ``--out`` cannot take the plan: a symbolic link (never followed nor replaced), a folder,
    a missing folder, an input or a file in the input folder, anything but a regular file, or a file
    that is not a saved plan (unless ``--force``)."""
    from analytics_provider.deliveries.files import files_under
    from analytics_provider.plans.saved import is_saved_plan

    out = getattr(args, "out", None)
    if out is None:
        if getattr(args, "force", False):
            return "--force is for --out: it lets a plan replace an existing file that is not a saved plan"
        return None
    target = Path(out)
    if target.is_symlink():
        return f"--out {out}: a symbolic link (to {os.readlink(target)}): not followed nor replaced; name a file"
    if target.is_dir():
        return f"--out {out}: a folder; name the plan's file (plan.json)"
    if not target.parent.is_dir():
        return f"--out {out}: the folder {target.parent} does not exist"
    inputs = [Path(args.path), *files_under(args.path)]
    if target.exists() and any(target.samefile(p) for p in inputs if p.exists()):
        return f"--out {out}: one of the input files; name another file for the plan"
    folder, parent = Path(args.path).resolve(), target.parent.resolve()
    if folder.is_dir() and folder in (parent, *parent.parents):
        return (f"--out {out}: inside the input folder {args.path}, among the files checked and planned; write the "
                "plan outside it")
    if target.exists() and not target.is_file():
        return f"--out {out}: not a regular file; name a file for the plan"
    if target.exists() and not args.force and not is_saved_plan(target):
        return f"--out {out}: an existing file that is not a saved plan: not replaced (--force replaces it)"
    return None


def _plan_and_apply(args: argparse.Namespace, hook: Any, declared: list[Declared],
                    titles: dict[tuple[str, int], str]) -> int:
    from analytics_provider.deliveries.plan import plan_deliveries
    from analytics_provider.deliveries.saved import apply_deliveries
    from analytics_provider.plans.apply import SyncApplyError
    from analytics_provider.plans.saved import SavedPlanError

    seen: dict[tuple[str, int], Any] = {}
    plan = plan_deliveries(hook, declared, scope=args.scope, prune=args.prune, seen=seen, titles=titles)
    print(plan.table())
    refusal = plan.refusal(args.max_deletes, args.allow_delete_all, ("--allow-delete-all", "--max-deletes"))
    if refusal:
        print(f"manage {args.command}: {refusal}", file=sys.stderr)
        return 1
    if getattr(args, "out", None):
        from analytics_provider.deliveries.saved import save_deliveries
        from analytics_provider.plans.saved import digest, write_file

        saved = save_deliveries(hook, plan, seen, scope=args.scope, prune=args.prune)
        try:  # over the file --out named only if it was there when checked (a saved plan, or --force)
            write_file(saved, args.out, replace=args.replace_out)
        except (OSError, SavedPlanError) as exc:
            print(f"manage {args.command}: the plan was not saved to {args.out}: {exc}", file=sys.stderr)
            return 1
        command = (f"python -m analytics_provider.manage apply --plan {shlex.quote(str(args.out))} "
                   f"--digest {digest(saved)}")  # quoted: it is copied into a shell
        print(f"plan saved to {args.out}, digest {digest(saved)}: once reviewed, apply it with `{command}`")
    if args.command == "plan" or plan.is_empty:
        return 0
    try:
        applied = apply_deliveries(hook, plan, seen, "manage apply", scope=args.scope, prune=args.prune,
                                   once=_applied_plans(args, f"manage apply {args.path}"))
    except (SavedPlanError, SyncApplyError) as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"applied {applied} change(s)")
    return 0


def _apply_saved(args: argparse.Namespace) -> int:
    """``apply --plan PLAN.json --digest D``: the saved plan applied exactly, or nothing (not the
    approved one, made elsewhere, stale, another version's)."""
    given = [flag for flag, value in (("PATH", args.path), ("--prune", args.prune)) if value not in (None, False)]
    if given:
        print(f"manage apply --plan: {', '.join(given)} cannot be given with --plan (the saved plan holds what it "
              "applies)", file=sys.stderr)
        return 2
    problem = _saved_usage_problem(args)
    if problem:
        print(f"manage apply --plan: {problem}", file=sys.stderr)
        return 2
    from analytics_provider.deliveries.saved import apply_saved_deliveries
    from analytics_provider.hooks.analytics import AnalyticsHook
    from analytics_provider.plans.apply import SyncApplyError
    from analytics_provider.plans.saved import Consent, SavedPlanError, not_a_plan, read_file

    try:
        data = read_file(args.plan)
    except SavedPlanError as exc:
        print(exc, file=sys.stderr)
        return 1
    problem = not_a_plan(data)
    if problem:  # before anything is said of it
        print(f"manage apply --plan {args.plan}: {problem}", file=sys.stderr)
        return 2
    params = _part(data, "params")
    if args.scope is not None and args.scope != params.get("scope"):
        print(f"manage apply --plan: --scope {args.scope!r} is not the plan's scope ({params.get('scope')!r}): "
              "nothing was written", file=sys.stderr)
        return 2
    print(_described(args.plan, data))
    consent = Consent(args.digest.lower(), args.max_deletes, args.allow_delete_all,
                      ("--allow-delete-all", "--max-deletes"),
                      once=_applied_plans(args, f"manage apply --plan {args.plan}"))
    try:
        applied = apply_saved_deliveries(AnalyticsHook(args.conn_id), data, f"manage apply --plan {args.plan}",
                                         consent=consent, ready=lambda: print("no change since the plan: applying it"))
    except (SavedPlanError, SyncApplyError) as exc:
        print(exc, file=sys.stderr)
        return 1
    for change in data["changes"]:
        print(f"{change['action']}  {change['subject']}  {change['target']}")
    print(f"applied {applied} change(s) of the saved plan {args.plan}")
    return 0


def _saved_usage_problem(args: argparse.Namespace) -> str | None:
    if not Path(args.plan).is_file():
        return f"{args.plan}: no such file"
    if args.digest is None:
        return ("--digest is needed: the digest `manage plan --out` printed, which the review approved (the plan "
                "file's own sha256 proves nothing: whoever edits the file can recompute it)")
    if not re.fullmatch(r"[0-9a-fA-F]{64}", args.digest):
        return f"--digest must be the 64 hex digits `manage plan --out` printed; got {args.digest!r}"
    if args.max_deletes is not None and args.max_deletes < 0:
        return f"--max-deletes must be 0 or more; got {args.max_deletes}"
    return _storage_problem(args)


def _applied_plans(args: argparse.Namespace, by: str) -> Any:
    """The plan storage of ``--plan-storage`` (or Airflow's): its locks and records of applied plans."""
    from analytics_provider.plans.once import AppliedPlans, default_plan_storage

    return AppliedPlans(args.plan_storage or default_plan_storage(), f"{by} ({_who()})")


def _storage_problem(args: argparse.Namespace) -> str | None:
    if getattr(args, "plan_storage", None) is None:
        return None
    from analytics_provider.plans.by_reference import served_problem, storage_problem

    problem = storage_problem(args.plan_storage) or served_problem(args.plan_storage)
    # the locks and the record that a plan was applied must be found by the next apply, wherever it runs
    return f"--plan-storage {args.plan_storage}: {problem}" if problem else None


def _who() -> str:
    """Who runs this command, where: ``user@host``."""
    try:
        user = getpass.getuser()
    except (OSError, KeyError):  # no login name, no password entry (a container's numeric user)
        user = f"uid {os.getuid()}" if hasattr(os, "getuid") else "(unknown user)"
    return f"{user}@{socket.gethostname()}"


def _described(path: str, data: Any) -> str:
    """The saved plan's first line: where it was made, its kind, scope and counts (before any request)."""
    made, params, counts = _part(data, "origin"), _part(data, "params"), _part(data, "counts")
    scope = f"scope {params['scope']!r}" if params.get("scope") else "no scope"
    return (f"saved plan {path}: {data.get('what')} of {scope}{', prune' if params.get('prune') else ''}, made "
            f"against {made.get('service')} as {made.get('user')}: "
            + (", ".join(f"{n} to {action}" for action, n in counts.items() if n) or "nothing to change"))


def _part(data: Any, name: str) -> dict[str, Any]:
    found = data.get(name) if isinstance(data, dict) else None
    return found if isinstance(found, dict) else {}


if __name__ == "__main__":
    sys.exit(main())
