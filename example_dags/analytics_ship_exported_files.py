"""Ship each exported file as soon as it is written: a DAG scheduled on the exports' assets.

``analytics_scheduled_exports`` writes its files to a templated destination (one folder a day).
Each export (a widget in a format) is one stable asset, ``analytics://exports/<name>``; every file
written is an event on it, with the file's URI, day, job id and size in the event's extra. This DAG
is scheduled on any of those assets and receives the events, one per file.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pendulum
from airflow.providers.common.compat.sdk import DAG, AssetAny, Param, task

from analytics_provider.assets import export_asset
from analytics_provider.locations import StorageLocation

# The exports of analytics_scheduled_exports (their asset names). Scheduling on them declares
# them to Airflow before their first file; each day's files are new events on the same assets.
EXPORTS = [f"{name}.{output}" for name in ("revenue-by-region", "orders-by-channel", "campaign-performance")
           for output in ("xlsx", "pdf")]

OUTBOX = str(Path(tempfile.gettempdir()) / "analytics-outbox")

with DAG(
    dag_id="analytics_ship_exported_files",
    description="Ship the files the scheduled exports wrote, as they arrive",
    schedule=AssetAny(*(export_asset(name) for name in EXPORTS)),
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["analytics", "example", "assets"],
    params={"outbox": Param(OUTBOX, type="string", description="where the files are shipped to")},
) as dag:

    @task
    def ship(
        params: dict[str, Any], triggering_asset_events: Any = None, triggering_dataset_events: Any = None
    ) -> list[str]:
        """Copy every file an asset event announced into the outbox (a stand-in for SFTP, e-mail...).
        Airflow 2.11 names the events ``triggering_dataset_events``."""
        outbox = Path(params["outbox"])
        outbox.mkdir(parents=True, exist_ok=True)
        shipped = []
        for events in (triggering_asset_events or triggering_dataset_events or {}).values():
            for event in events:
                location = StorageLocation.parse(event.extra["uri"])  # the file; event.asset is the export
                if location.scheme != "file":
                    print(f"not a local file, left where it is: {event.extra['uri']}")
                    continue
                target = outbox / Path(location.path).name
                shutil.copyfile(location.path, target)
                print(f"shipped {location.path} of {event.extra.get('date')} "
                      f"({event.extra.get('bytes')} bytes, job {event.extra.get('job_id')})")
                shipped.append(str(target))
        return shipped

    ship()
