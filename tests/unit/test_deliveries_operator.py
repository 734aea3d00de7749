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
