"""A webhook's headers and secret-named fields in a saved plan (issue 44, third attack), as people read
it: a row, the plan's ``touched``, a stale plan's refusal, and the review operator's rendered ``plan``
(an operator, of Airflow 3.1 and later: this file runs on every Airflow, skipped before 3.1)."""

from __future__ import annotations

import json

import pytest

from analytics_provider import manage
from analytics_provider.operators.review import _MISSING

from .test_deliveries import write
from .test_plan_files_and_secrets import ENDPOINT, WEBHOOK, hook, plan_to, the_alert

__all__ = ["hook"]  # the fixture, shared

HEADERS = WEBHOOK.replace(f"endpoint: {ENDPOINT}", """endpoint: https://hooks.example.com/ingest
      headers: {Authorization: "Bearer hdrT0kenAAA1", X-Team: "teamS3cretBBB2"}
      options: {password: "pwS3cretCCC3"}""")


@pytest.mark.skipif(_MISSING is not None, reason="Airflow before 3.1: no human-in-the-loop")
def test_secrets_outside_urls_are_masked_wherever_a_plan_is_read_and_sent_whole(
        tmp_path, hook, analytics_emulator, capsys) -> None:
    """Third attack on issue 44: a webhook's headers (``Authorization``, any header) and a field with a
    secret's name (``options.password``) were shown whole in an update's row, a saved plan's
    ``touched``, a stale plan's refusal and the review's rendered ``plan``; the apply sends them."""
    from analytics_provider.operators.review import AnalyticsReviewPlanOperator

    secrets = ("hdrT0kenAAA1", "teamS3cretBBB2", "pwS3cretCCC3")
    rotated = ("hdrT0kenNEW9", "teamS3cretNEW9", "pwS3cretNEW9")
    files, saved = tmp_path / "deliveries", tmp_path / "plan.json"
    write(files, "hooks.yml", HEADERS)
    assert manage.main(["apply", str(files), "--scope", "sales"]) == 0
    assert the_alert(hook)["dest"]["headers"]["Authorization"] == "Bearer hdrT0kenAAA1"
    new = HEADERS
    for old, value in zip(secrets, rotated, strict=True):
        new = new.replace(old, value)
    write(files, "hooks.yml", new)
    printed, approved = plan_to(files, saved, capsys)
    plan = json.loads(saved.read_text())
    shown = printed + json.dumps(plan["touched"]) + json.dumps(
        [{k: v for k, v in c.items() if k != "write"} for c in plan["changes"]])
    assert [s for s in (*secrets, *rotated) if s in shown] == [], shown
    assert "dest.headers.Authorization '***'" in printed and "dest.options.password '***'" in printed
    assert plan["changes"][0]["write"]["fields"]["dest"]["headers"]["X-Team"] == "teamS3cretNEW9"  # sent whole
    review = AnalyticsReviewPlanOperator(task_id="review", plan={"saved": plan, "changes": plan["changes"]})
    review.render_template_fields({})
    assert [s for s in (*secrets, *rotated) if s in json.dumps(review.plan)] == []
    assert review.real_plan["saved"] == plan  # the task reads the real one
    # the header changed on the service since the plan: stale, and the refusal shows neither value
    alert = the_alert(hook)
    kept = ("title", "source_type", "source_id", "schedule", "dynamic_filter_presets", "viz_conditions")
    hook.update_data_alert(alert["id"], {**{k: alert[k] for k in kept if k in alert},
                                         "dest": {**alert["dest"], "headers": {"Authorization": "Bearer otherZZZ9"}}})
    assert manage.main(["apply", "--plan", str(saved), "--digest", approved]) == 1
    out = capsys.readouterr()
    assert "stale plan: plan again" in out.err and "otherZZZ9" not in out.err + out.out
    assert [s for s in (*secrets, *rotated) if s in out.err + out.out] == []


@pytest.mark.skipif(_MISSING is not None, reason="Airflow before 3.1: no human-in-the-loop")
def test_a_plan_stored_by_reference_is_reviewed_from_the_writes_it_stores(tmp_path, hook, analytics_emulator) -> None:
    """Fifth attack on issue 44: a dry run's plan kept in a file (max_xcom_bytes past), its XCom's counts
    and rows edited to nothing, the file untouched: the review said "changes nothing", approved unasked,
    and the apply made the file's two creates. The review reads the file back as the apply does."""
    import copy
    from pathlib import Path

    from analytics_provider.operators.deliveries import AnalyticsApplyDeliveriesOperator
    from analytics_provider.operators.review import AnalyticsReviewPlanOperator

    examples = Path(__file__).resolve().parents[2] / "example_dags" / "deliveries"
    dry_run = AnalyticsApplyDeliveriesOperator(task_id="plan", path=str(examples), scope="sales", dry_run=True,
                                               max_xcom_bytes=1, plan_storage=str(tmp_path / "plans"))
    result = dry_run.execute({})
    assert sum(result["counts"].values()) > 0 and "location" in result["saved"]  # stored by reference
    edited = copy.deepcopy(result)
    edited["counts"], edited["changes"] = dict.fromkeys(edited["counts"], 0), []
    edited["saved"]["counts"] = dict.fromkeys(edited["saved"]["counts"], 0)
    review = AnalyticsReviewPlanOperator(task_id="review", plan=edited)
    with pytest.raises(Exception, match=r"review: plan must be a plan whose counts .*are not its saved plan's"):
        review.execute({})
