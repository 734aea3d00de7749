"""A deferred task resumes after an upgrade: Airflow stores a trigger's class path and arguments
with the task, and a triggerer running a later version of the provider rebuilds the trigger from
them. The rows below were written by the provider before the package was rearranged (issue 35):
``AnalyticsJobTrigger(...).serialize()``, then the arguments as Airflow stores them (Airflow 3's
``serde`` form, which ``Trigger.encrypt_kwargs`` encrypts, and the ``BaseSerialization`` form of
earlier versions, which Airflow still reads). Do not regenerate them: they are the old version's
output.
"""

from __future__ import annotations

import json
from importlib import import_module
from typing import Any

import pytest

OLD_CLASSPATH = "analytics_provider.triggers.analytics.AnalyticsJobTrigger"
OLD_ROWS = {
    "serde": '{"analytics_conn_id": "analytics_default", "job_id": 1, "poll_interval": 0.1, '
             '"end_time": 4102444800.0, "max_outage": 600.0, "try_number": 1}',
    "base serialization": '{"__var": {"analytics_conn_id": "analytics_default", "job_id": 1, "poll_interval": '
                          '0.1, "end_time": 4102444800.0, "max_outage": 600.0, "try_number": 1}, "__type": "dict"}',
}


def read_row(form: str) -> dict[str, Any]:
    """The arguments of a stored row, read as Airflow reads them (``Trigger._decrypt_kwargs`` after
    the decryption: ``serde`` where this Airflow has it, ``BaseSerialization`` for the older form)."""
    stored = json.loads(OLD_ROWS[form])
    if form == "base serialization":
        from airflow.serialization.serialized_objects import BaseSerialization

        return BaseSerialization.deserialize(stored)
    try:
        from airflow.sdk.serde import deserialize
    except ImportError:  # Airflow 2.11 writes the other form; plain values read the same
        return stored
    return deserialize(stored)


@pytest.mark.parametrize("form", sorted(OLD_ROWS))
async def test_a_trigger_row_of_the_old_version_runs_to_the_jobs_end(
    form: str, analytics_emulator, analytics_connection
) -> None:
    assert analytics_emulator.add_jobs(1, 0.3) == [1]  # the job the stored row waits on
    kwargs = read_row(form)
    module, _, name = OLD_CLASSPATH.rpartition(".")  # as the triggerer imports a row's class
    trigger = getattr(import_module(module), name)(**kwargs)

    assert trigger.serialize() == (OLD_CLASSPATH, kwargs)  # stored again unchanged (a restart mid-wait)
    events = [event.payload async for event in trigger.run()]
    assert events == [{"status": "success", "job_id": 1, "job_status": "success", "message": "job 1 succeeded",
                       "last_error_log": None, "try_number": 1}]
