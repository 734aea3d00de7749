"""Ship each exported file as soon as it is written: a DAG scheduled on the exports' asset alias.

``analytics_scheduled_exports`` writes its files to a templated destination (one folder a day),
so their URIs are known only once rendered. Its export task lists the asset alias
``analytics-scheduled-exports`` in its outlets and adds an asset event for every file it wrote;
this DAG is scheduled on that alias and receives the events, one per file, with the export's
details (job id, widget, format, bytes) in each event's extra.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pendulum
from airflow.providers.common.compat.sdk import AssetAlias
from airflow.sdk import DAG, Param, task

from analytics_provider.locations import StorageLocation

EXPORTS_ALIAS = "analytics-scheduled-exports"  # the alias analytics_scheduled_exports writes through
OUTBOX = str(Path(tempfile.gettempdir()) / "analytics-outbox")

with DAG(
    dag_id="analytics_ship_exported_files",
    description="Ship the files the scheduled exports wrote, as they arrive",
    schedule=[AssetAlias(EXPORTS_ALIAS)],
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["analytics", "example", "assets"],
    params={"outbox": Param(OUTBOX, type="string", description="where the files are shipped to")},
) as dag:

    @task
    def ship(params: dict[str, Any], triggering_asset_events: Any = None) -> list[str]:
        """Copy every file an asset event announced into the outbox (a stand-in for SFTP, e-mail...)."""
        outbox = Path(params["outbox"])
        outbox.mkdir(parents=True, exist_ok=True)
        shipped = []
        for events in (triggering_asset_events or {}).values():
            for event in events:
                location = StorageLocation.parse(event.asset.uri)
                if location.scheme != "file":
                    print(f"not a local file, left where it is: {event.asset.uri}")
                    continue
                target = outbox / Path(location.path).name
                shutil.copyfile(location.path, target)
                print(f"shipped {location.path} ({event.extra.get('bytes')} bytes, job {event.extra.get('job_id')})")
                shipped.append(str(target))
        return shipped

    ship()
