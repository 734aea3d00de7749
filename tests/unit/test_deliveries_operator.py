"""The deliveries operator refuses, when the DAG is parsed, what could touch another scope's resources."""

from __future__ import annotations

import pytest

from analytics_provider.exceptions import AnalyticsParameterError
from analytics_provider.operators import AnalyticsApplyDeliveriesOperator


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"prune": True}, "apply: scope must be a name with prune=True (the name these files' resources carry); "
                          "got None"),
        ({"scope": "sales/ops"}, "apply: scope must be letters, digits, '_', '.', '-' (up to 40), starting with a "
                                 "letter or digit; got 'sales/ops'"),
        ({"scope": "sales", "max_deletes": True}, "apply: max_deletes must be a number of removals (0 or more) or "
                                                  "None; got True"),
    ],
    ids=["prune-without-scope", "scope-with-slash", "max-deletes"],
)
def test_wrong_arguments_are_refused_at_parse_time(tmp_path, kwargs, message) -> None:
    with pytest.raises(AnalyticsParameterError) as refused:
        AnalyticsApplyDeliveriesOperator(task_id="apply", path=str(tmp_path), **kwargs)
    assert str(refused.value) == message


def test_a_saved_plan_beyond_max_deletes_or_a_bad_approved_digest_is_refused_at_parse() -> None:
    """Issue 44: the consent to deletes holds for a saved plan given to the apply task, as on the CLI."""
    from analytics_provider.plans.saved import FORMAT

    removal = {"action": "remove", "subject": "data schedule 7", "target": "weekly-sales", "before": "in no file",
               "after": "", "write": {"kind": "data_schedules", "id": 7, "fields": None}}
    saved = {"format": FORMAT, "what": "deliveries", "changes": [removal], "counts": {"remove": 1},
             "consent": {"scope": "scope 'sales'", "declared": 1, "kept": 1}}
    with pytest.raises(AnalyticsParameterError) as refused:
        AnalyticsApplyDeliveriesOperator(task_id="apply", plan={"saved": saved}, max_deletes=0)
    assert str(refused.value) == (
        "apply: deliveries: the plan deletes 1, more than max_deletes (0): data schedule 7: weekly-sales; nothing "
        "was written. If that is meant: allow_delete_all=True (or a higher max_deletes)")
    AnalyticsApplyDeliveriesOperator(task_id="apply", plan={"saved": saved}, max_deletes=1)  # consented
    with pytest.raises(AnalyticsParameterError, match="apply: approved must be the review task's output"):
        AnalyticsApplyDeliveriesOperator(task_id="apply", plan={"saved": saved}, max_deletes=1, approved="yes")
