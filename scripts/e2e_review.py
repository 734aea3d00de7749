"""Reviewed deliveries on a running Airflow (3.3+): three runs answered through the REST API, and the
review page in Airflow's UI seen by headless Chromium.

:func:`reviewed_runs` drives a stack that is already up (``make e2e``'s production shape calls it
with its :class:`Api` and :class:`Emulator`, the DAG ``scripts/e2e_support/e2e_reviewed.py`` and
``example_dags/deliveries`` in its DAGs folder): one run rejected (nothing written), one whose
service state is changed between the review and the apply (the apply refuses: nothing written),
one approved (exactly the plan's changes written). During the approved run's review it opens the
task's "required actions" page in Debian's headless Chromium (installed when missing), logged in
as the REST API is (the user's token as the UI's ``_token`` cookie), checks that the plan's rows
are on it and takes a screenshot.

Run alone (``python scripts/e2e_review.py [--screenshot PATH] [--docs]``), it starts a small stack
of its own first: SQLite, LocalExecutor, api-server, scheduler and dag-processor, the emulator as
its own process, the simple auth manager with a user and password as ``make e2e`` has it. Stops
everything it started, by process id.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parent))
from e2e import BIN, REPO, SUPPORT, Api, Emulator, Processes, debian_package, free_port, say, simple_auth, wait_for
from e2e_support.e2e_browser import Chromium

DAG_ID = "e2e_reviewed_deliveries"
REVIEW, APPLY = "deliveries.review", "deliveries.apply"
WRITES = ("create_data_schedule", "update_data_schedule", "delete_data_schedule", "create_data_alert",
          "update_data_alert", "delete_data_alert")
DOCS_PICTURE = REPO / "docs" / "_static" / "reviewed_changes_review_page.png"
SCREENSHOT = "review-page.png"
"""The review page's picture, in the run's folder (``make e2e``'s and this script's)."""
ROWS = ("weekly-sales", "revenue-by-region-watch")
"""The plan's rows the review page must show (the keys of ``example_dags/deliveries``)."""


def dags_folder(home: Path) -> Path:
    """The DAG and the delivery files it plans (what the production-shape e2e copies too)."""
    folder = home / "dags"
    folder.mkdir(exist_ok=True)
    shutil.copy(SUPPORT / "e2e_reviewed.py", folder / "e2e_reviewed.py")
    shutil.copytree(REPO / "example_dags" / "deliveries", folder / "deliveries", dirs_exist_ok=True)
    return folder


def writes(emulator: Emulator) -> list[str]:
    return [r["operation"] for r in emulator.requests() if r.get("operation") in WRITES]


def task_state(api: Api, run_id: str, task_id: str) -> str:
    return str(api.get(f"dags/{DAG_ID}/dagRuns/{run_id}/taskInstances/{task_id}").get("state"))


def run_state(api: Api, run_id: str) -> str:
    return str(api.get(f"dags/{DAG_ID}/dagRuns/{run_id}")["state"])


def answer(api: Api, run_id: str, option: str) -> None:
    path = f"{api.base}/api/v2/dags/{DAG_ID}/dagRuns/{run_id}/taskInstances/{REVIEW}/-1/hitlDetails"
    response = api.session.patch(path, json={"chosen_options": [option], "params_input": {}}, timeout=30)
    response.raise_for_status()


def one_run(api: Api, emulator: Emulator, scheduler_log: Callable[[], str], option: str, between: Any = None,
            page: Path | None = None) -> dict[str, Any]:
    """Trigger a run, wait for its review, (look at the page,) change the service (``between``),
    answer; the run's end, the tasks' states and the writes Airflow sent.

    The answer waits until the scheduler has taken the parked task's executor event ("TaskInstance
    Finished" in its log): Airflow 3.3.2 marks the review FAILED when an answer re-queues it first
    (the late event of the parking try is taken for the new one's)."""
    run_id = api.trigger(DAG_ID, {})
    wait_for(f"the review of {run_id}", lambda: task_state(api, run_id, REVIEW) == "awaiting_input", 300)
    finished = f"TaskInstance Finished: dag_id={DAG_ID}, task_id={REVIEW}, run_id={run_id},"
    wait_for(f"the scheduler to take {run_id}'s parked review", lambda: finished in scheduler_log(), 120, 0.2)
    detail = api.get(f"dags/{DAG_ID}/dagRuns/{run_id}/taskInstances/{REVIEW}/-1/hitlDetails")
    seen = screenshot(api, run_id, page) if page is not None else None
    if between is not None:
        between()
    before = len(writes(emulator))
    answer(api, run_id, option)
    # the answer took: the review left awaiting_input (an answer lost to the parking race would leave it
    # there with the response recorded, and the run waiting until its 300 s below ran out)
    wait_for(f"{run_id}'s review to take the answer {option!r} (it is still awaiting input)",
             lambda: task_state(api, run_id, REVIEW) != "awaiting_input", 120, 0.5)
    state = wait_for(f"{run_id} to finish", lambda: (s := run_state(api, run_id)) in ("success", "failed") and s, 300)
    states = {t: task_state(api, run_id, t) for t in ("deliveries.plan", REVIEW, APPLY)}
    return {"run_id": run_id, "answer": option, "state": state, "tasks": states, "subject": detail["subject"],
            "body": detail["body"], "writes": writes(emulator)[before:], "page": seen}


def reviewed_runs(api: Api, emulator: Emulator, scheduler_log: Callable[[], str],
                  screenshot_to: Path | None) -> list[str]:
    """The three reviewed runs on a stack that is up (``api`` logged in; ``scheduler_log``: the
    scheduler's log so far); the failures (none: all three went as they must, and the review page
    in the browser showed the plan's rows). ``screenshot_to`` None: no browser."""
    failures: list[str] = []

    def check(ok: bool, what: str) -> None:
        say(("ok    " if ok else "FAILED ") + what)
        if not ok:
            failures.append(what)

    wait_for(f"{DAG_ID} to be parsed", lambda: api.get(f"dags/{DAG_ID}")["dag_id"], 240)
    api.unpause(DAG_ID)
    rejected = one_run(api, emulator, scheduler_log, "Reject")
    check(rejected["tasks"][APPLY] == "skipped" and rejected["writes"] == [],
          f"rejected: apply {rejected['tasks'][APPLY]}, writes {rejected['writes']}")

    def made_meanwhile() -> None:  # another hand makes the reviewed schedule between review and apply
        key = json.loads(emulator.connection)["password"]
        response = emulator.session.post(f"{emulator.base_url}/data_schedules", headers={"X-Holistics-Key": key},
                                         json={"data_schedule": {
                                             "title": "Weekly sales [managed: sales/weekly-sales]",
                                             "source_type": "Dashboard", "source_id": 1,
                                             "schedule": {"repeat": "0 8 * * 1", "paused": False},
                                             "dest": {"type": "EmailDest", "recipients": ["ann@example.com"]}}},
                                         timeout=30)
        response.raise_for_status()

    stale = one_run(api, emulator, scheduler_log, "Approve", between=made_meanwhile)
    check(stale["tasks"][APPLY] == "failed" and stale["writes"] == [],
          f"changed between review and apply: apply {stale['tasks'][APPLY]}, writes {stale['writes']}")
    log = api.task_log(DAG_ID, stale["run_id"], APPLY, 1)
    check("stale plan: plan again" in log, "the apply's log says: stale plan: plan again")

    approved = one_run(api, emulator, scheduler_log, "Approve", page=screenshot_to)
    planned = [line for line in approved["body"].splitlines() if line.startswith("| create") or
               line.startswith("| change") or line.startswith("| remove")]
    check(approved["tasks"][APPLY] == "success" and len(approved["writes"]) == len(planned) > 0,
          f"approved: apply {approved['tasks'][APPLY]}, writes {approved['writes']} for {len(planned)} planned row(s)")
    if screenshot_to is not None:
        check(bool(approved["page"]) and all(approved["page"].values()),
              f"the review page shows the plan's rows: {approved['page']} ({screenshot_to})")
    for outcome in (rejected, stale, approved):
        print(json.dumps({k: outcome[k] for k in ("run_id", "answer", "state", "tasks", "writes")}))
    return failures


def screenshot(api: Api, run_id: str, path: Path) -> dict[str, bool]:
    """The review's page in headless Chromium, logged in with ``api``'s token (the ``_token`` cookie
    Airflow's login sets): which of the plan's rows the page shows (awaited up to a deadline), and a
    PNG of it at ``path``."""
    if api.token is None:
        raise SystemExit("e2e: the review page needs a login (Api.login) before the browser opens it")
    debian_package("chromium", "chromium")
    url = f"{api.base}/dags/{DAG_ID}/runs/{quote(run_id, safe=':+')}/tasks/{REVIEW}/required_actions"
    with Chromium() as browser:
        browser.set_cookie(api.base, "_token", api.token)
        browser.open(url)
        found = browser.wait_for_texts(ROWS, 120)
        if not browser.wait_quiet():
            say(f"review page: requests still going after 30 s ({sorted(set(browser.requests.values()))}); "
                "the picture is taken as it is")
        size = browser.screenshot(path)
        ended = browser.location()
    where = "" if ended == url else f" (the browser ended on {ended})"
    say(f"review page {url}{where}: {found}; screenshot {path} ({size} bytes)")
    return found


def environment(home: Path, dags: Path, port: int, connection: str) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.upper().endswith("_PROXY")}
    return {
        **keep,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__PARALLELISM": "4",
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db?timeout=30",
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__API__BASE_URL": f"http://127.0.0.1:{port}",
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
        "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),
        "AIRFLOW__API__SECRET_KEY": secrets.token_hex(32),
        **simple_auth(home),
        "AIRFLOW__WORKERS__MIN_HEARTBEAT_INTERVAL": "1",
        "AIRFLOW__SCHEDULER__DAG_DIR_LIST_INTERVAL": "5",
        "AIRFLOW_CONN_ANALYTICS_DEFAULT": connection,
        "NO_PROXY": "*",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--screenshot", type=Path, default=None,
                        help=f"where the PNG goes (default: {SCREENSHOT} in the run's folder, removed at the end "
                             "unless E2E_KEEP=1)")
    parser.add_argument("--docs", action="store_true",
                        help=f"when the run passes, copy the PNG to the docs: {DOCS_PICTURE.relative_to(REPO)}")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="analytics-e2e-review-"))
    say(f"AIRFLOW_HOME {home}")
    procs = Processes(home)
    with ExitStack() as cleanup:
        cleanup.callback(lambda: None if os.environ.get("E2E_KEEP") == "1" else shutil.rmtree(home, True))
        cleanup.callback(procs.stop_all)
        emulator = Emulator(procs)
        port = free_port()
        env = environment(home, dags_folder(home), port, emulator.connection)
        subprocess.run([str(BIN / "airflow"), "db", "migrate"], env=env, cwd=home, check=True, capture_output=True)
        airflow = str(BIN / "airflow")
        for name, command in (("api-server", [airflow, "api-server", "--port", str(port)]),
                              ("scheduler", [airflow, "scheduler"]), ("dag-processor", [airflow, "dag-processor"])):
            procs.start(name, command, env=env)
        api = Api(f"http://127.0.0.1:{port}")
        picture = args.screenshot or home / SCREENSHOT
        try:
            wait_for("the api-server", lambda: api.get("monitor/health")["metadatabase"]["status"] == "healthy", 240)
            api.login()
            wait_for("the DAG to be parsed", lambda: api.get(f"dags/{DAG_ID}")["dag_id"], 240)
            failures = reviewed_runs(api, emulator, lambda: "".join(procs.logs("scheduler").values()), picture)
        except SystemExit:
            procs.report()
            raise
        if args.docs and not failures:
            shutil.copy(picture, DOCS_PICTURE)
            say(f"copied the screenshot to {DOCS_PICTURE.relative_to(REPO)}")
    print("e2e review: PASSED" if not failures else f"e2e review: FAILED ({len(failures)}): {failures}")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
