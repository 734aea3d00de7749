"""Every morning, check that the service's revenue for yesterday equals the warehouse's.

A query on the sales data set gives the service's figure (a handful of rows: returned through
XCom); the same figure is read from the warehouse; a check fails the run when they differ, naming
both. A second query writes yesterday's revenue by region to a csv file for the finance team.

The warehouse side here is a stand-in reading a SQLite file (``warehouse_db``); in production use
your warehouse's hook (``PostgresHook(...).get_first(sql)``, ``SnowflakeHook``...). When the file
does not exist, the stand-in writes one holding the orders the local emulator's sales data set
models, so that the example runs by hand against the emulator. The query's date field and day are
params: by default ``orders.created_at`` and yesterday (``ds`` - 1).
"""

from __future__ import annotations

import math
import re
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pendulum
from airflow.providers.common.compat.sdk import DAG, AirflowFailException, Param, task

from analytics_provider.operators import AnalyticsQueryDataSetOperator

EXPORT_DIR = str(Path(tempfile.gettempdir()) / "analytics-revenue")
WAREHOUSE_DB = str(Path(tempfile.gettempdir()) / "analytics-warehouse.sqlite")
# yesterday unless the run names a day (the run's run_after; on Airflow 2.11 its logical date)
DAY = "{{ params.day or macros.ds_add(dag_run.run_after | default(logical_date) | ds, -1) }}"
YESTERDAY = {"field": "{{ params.date_field }}", "operator": "is", "values": [DAY]}



def demo_warehouse(path: str) -> None:
    """A stand-in warehouse: the orders by day that the emulator's sales data set models."""
    from analytics_provider.testing.emulator.tables import daily_orders

    orders = daily_orders()
    print(f"no warehouse at {path}: writing the demo warehouse (the emulator's orders by day)")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as warehouse:
        warehouse.execute(f"CREATE TABLE orders ({', '.join(orders.columns)})")
        warehouse.executemany(f"INSERT INTO orders VALUES ({', '.join('?' * len(orders.columns))})", orders.rows)


with DAG(
    dag_id="analytics_revenue_check",
    description="Check the service's revenue for yesterday against the warehouse's",
    schedule="0 7 * * *",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["analytics", "example", "data quality"],
    params={
        "data_set_id": Param(1, type="integer", description="the data set holding the orders model"),
        "date_field": Param("orders.created_at", type="string", description="the date the day filters on"),
        "day": Param("", type="string", description="the day to check; empty: yesterday"),
        "warehouse_db": Param(WAREHOUSE_DB, type="string", description="the stand-in warehouse (SQLite)"),
        "export_dir": Param(EXPORT_DIR, type="string"),
    },
    default_args={"poll_interval": 1.0},
) as dag:
    service_revenue = AnalyticsQueryDataSetOperator(
        task_id="service_revenue",
        data_set_id="{{ params.data_set_id }}",
        query={
            "metrics": [{"id": "revenue", "field": "orders.revenue", "aggregation": "sum"}],
            "filters": [YESTERDAY],
        },
        max_return_rows=10,
    )

    revenue_by_region = AnalyticsQueryDataSetOperator(
        task_id="revenue_by_region",
        data_set_id="{{ params.data_set_id }}",
        query={
            "dimensions": [{"id": "region", "field": "orders.region"}],
            "metrics": [{"id": "revenue", "field": "orders.revenue", "aggregation": "sum"}],
            "filters": [YESTERDAY],
            "order": [{"id": "revenue", "order": "desc"}],
        },
        destination="{{ params.export_dir }}/" + DAY + "/revenue-by-region.csv",
    )

    @task
    def warehouse_revenue(params: dict[str, Any], dag_run: Any, logical_date: Any = None) -> float:
        """Stand-in for your warehouse query: the day's revenue in the orders table."""
        column = params["date_field"].rsplit(".", 1)[-1]
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", column):
            raise ValueError(f"date_field must end in a column name, got {params['date_field']!r}")
        run_after = getattr(dag_run, "run_after", None) or logical_date  # Airflow 2.11: the logical date
        day = params["day"] or pendulum.instance(run_after).subtract(days=1).to_date_string()
        if not Path(params["warehouse_db"]).is_file():
            demo_warehouse(params["warehouse_db"])
        with sqlite3.connect(params["warehouse_db"]) as warehouse:
            sql = f"SELECT COALESCE(SUM(revenue), 0) FROM orders WHERE {column} = ?"
            (revenue,) = warehouse.execute(sql, (day,)).fetchone()
        return float(revenue)

    @task
    def check(service: dict[str, Any], warehouse: float) -> float:
        """Fail the run (without retries) when the two figures differ by a cent or more."""
        rows = service["rows"]
        figure = float(rows[0]["revenue"] or 0) if rows else 0.0
        if not math.isclose(figure, warehouse, abs_tol=0.005):
            raise AirflowFailException(
                f"revenue differs: the service says {figure:.2f}, the warehouse {warehouse:.2f} "
                f"(query job {service['job_id']} on data set {service['data_set_id']})"
            )
        print(f"revenue matches: {figure:.2f}")
        return figure

    check(service_revenue.output, warehouse_revenue())
