"""The dbt hand-off: upload ``manifest.json`` files after ``dbt build``, then wait for the sync job;
and the reading of a run's ``run_results.json`` and ``manifest.json`` for refresh by impact."""

from __future__ import annotations

import os
from collections.abc import Sequence
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from analytics_provider.api.wire.choices import MAX_MANIFEST_FILES
from analytics_provider.exceptions import AnalyticsParameterError
from analytics_provider.lineage_mixin import LineageFunction
from analytics_provider.locations import StorageLocation
from analytics_provider.operators.analytics import is_templated
from analytics_provider.operators.base import AnalyticsJobOperator

if TYPE_CHECKING:
    from airflow.sdk import Context


def manifest_locations(manifests: Any, task_id: str) -> list[str]:
    """One to five locations (a single string is one), each a non-empty string."""
    found = [manifests] if isinstance(manifests, (str, os.PathLike)) else manifests
    if not isinstance(found, Sequence) or isinstance(found, (bytes, str)):
        raise AnalyticsParameterError(
            f"{task_id}: manifests must be a path or URL, or a list of 1 to {MAX_MANIFEST_FILES} of them; "
            f"got {manifests!r}"
        )
    if not 1 <= len(found) <= MAX_MANIFEST_FILES:
        raise AnalyticsParameterError(
            f"{task_id}: manifests must name 1 to {MAX_MANIFEST_FILES} manifest.json files; got {len(found)}"
        )
    locations = []
    for index, item in enumerate(found):
        if not isinstance(item, (str, os.PathLike)) or not os.fspath(item).strip():
            raise AnalyticsParameterError(f"{task_id}: manifests[{index}] must be a path or URL, got {item!r}")
        locations.append(os.fspath(item).strip())
    return locations


class AnalyticsUploadDbtManifestOperator(AnalyticsJobOperator):
    """Upload dbt ``manifest.json`` files for a data source, then wait for the service's sync job.

    :param manifests: one to five manifests: local paths, ``file://`` URLs or object-storage URLs
        such as ``s3://bucket/dbt/target/manifest.json`` (templated; a single string is one manifest).
        They are sent in one request, streamed from where they are, never read into memory whole.
    :param data_source_name: the data source the manifests describe (templated); the account's
        default data source when None.

    Returns ``{"job_id", "status", "data_source_name", "manifests"}``. A malformed manifest fails
    the sync job, and the task with the service's messages (the job's last error and ERROR logs).
    """

    describe_lineage = LineageFunction("describe_dbt_upload")
    template_fields: Sequence[str] = (*AnalyticsJobOperator.template_fields, "manifests", "data_source_name")
    ui_color = "#f5e6d8"

    def __init__(self, *, manifests: Any, data_source_name: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.manifests = manifests
        self.data_source_name = data_source_name
        if not is_templated(manifests) and not _holds_xcom_arg(manifests):
            manifest_locations(manifests, self.task_id)

    def check_inputs(self) -> None:
        self.manifests = manifest_locations(self.manifests, self.task_id)
        for index, location in enumerate(self.manifests):
            where = StorageLocation.parse(location)
            if where.scheme == "file" and not os.path.isfile(where.path):
                raise AnalyticsParameterError(f"{self.task_id}: manifests[{index}] is not a file: {where.path}")
        if self.data_source_name is not None and (
            not isinstance(self.data_source_name, str) or not self.data_source_name.strip()
        ):
            raise AnalyticsParameterError(
                f"{self.task_id}: data_source_name must be a data source's name, or None for the default one"
            )

    def submit(self, context: Context) -> dict[str, Any]:
        with ExitStack() as opened:
            files = [self._open(location, opened) for location in self.manifests]
            source = self.data_source_name or "(the default)"
            self.log.info("Uploading %d manifest(s) for data source %s", len(files), source)
            return self.hook.upload_dbt_manifests(files, data_source_name=self.data_source_name)

    @staticmethod
    def _open(location: str, opened: ExitStack) -> Any:
        """A local path as it is; an object as ``(file name, its stream)``, read as it is sent."""
        where = StorageLocation.parse(location)
        if where.scheme == "file":
            return where.path
        from airflow.providers.common.compat.sdk import ObjectStoragePath

        path = ObjectStoragePath(location)
        return os.path.basename(where.path), opened.enter_context(path.open("rb"))

    def on_success(self, context: Context, job_id: int) -> dict[str, Any]:
        return {
            "job_id": job_id,
            "status": "success",
            "data_source_name": self.data_source_name,
            "manifests": manifest_locations(self.manifests, self.task_id),  # this instance may be a resumed one
        }


MAX_DBT_FILE_BYTES = 2**31
"""The most a dbt artifact is read (2 GiB: the largest manifests of real projects are a few hundred MB)."""


def read_dbt_file(value: Any, where: str, name: str, object_pairs_hook: Any = None) -> Any:
    """A dbt artifact, parsed: ``value`` a path, a URL or an ``ObjectStoragePath``. An unreadable
    file, anything but a regular file (a device, a pipe), a file past :data:`MAX_DBT_FILE_BYTES`,
    text that is not JSON and nesting deeper than the JSON reader's bound are refused with
    :class:`AnalyticsParameterError` naming the task (``where``), the parameter and the file.
    The file's text is held whole while it is parsed (``object_pairs_hook`` may drop what is not
    needed as it goes)."""
    import json
    import stat

    try:
        if hasattr(value, "open"):
            opened = value.open("rb")
        elif StorageLocation.parse(value).scheme == "file":
            opened = open(StorageLocation.parse(value).path, "rb")  # noqa: SIM115 (closed below)
            if not stat.S_ISREG(os.fstat(opened.fileno()).st_mode):
                opened.close()
                raise AnalyticsParameterError(f"{where}: {name} ({value}) is not a regular file (a device or a "
                                              "pipe?): not read")
        else:
            from airflow.providers.common.compat.sdk import ObjectStoragePath

            opened = ObjectStoragePath(os.fspath(value)).open("rb")
        with opened as handle:
            data = handle.read(MAX_DBT_FILE_BYTES + 1)
        if len(data) > MAX_DBT_FILE_BYTES:
            raise AnalyticsParameterError(f"{where}: {name} ({value}) has more than {MAX_DBT_FILE_BYTES:,} bytes, "
                                          "more than a dbt artifact has: not read further")
        return json.loads(data, object_pairs_hook=object_pairs_hook)
    except RecursionError:
        raise AnalyticsParameterError(f"{where}: {name} ({value}) is nested deeper than a dbt artifact is "
                                      f"(more levels than the JSON reader allows)") from None
    except (OSError, ValueError) as exc:
        raise AnalyticsParameterError(f"{where}: {name} could not be read as JSON from {value}: "
                                      f"{type(exc).__name__}: {exc}") from None


def dbt_run(run_results: Any, manifest: Any, where: str) -> Any:
    """What the run of ``run_results`` built (:class:`~analytics_provider.impact.dbt.DbtRun`), the
    manifest filling in what its results lack; errors name the task, the parameter and the file."""
    from analytics_provider.impact.dbt import built_relations, slim_manifest_object

    return built_relations(
        read_dbt_file(run_results, where, "dbt_run_results"),
        None if manifest is None else read_dbt_file(manifest, where, "dbt_manifest", slim_manifest_object),
        where, run_results_name=f"dbt_run_results ({run_results})", manifest_name=f"dbt_manifest ({manifest})")


def _holds_xcom_arg(value: Any) -> bool:
    """Whether a value is, or lists, another task's output (resolved only when the task runs)."""
    from airflow.providers.common.compat.sdk import XComArg

    items = value if isinstance(value, (list, tuple)) else [value]
    return any(isinstance(item, XComArg) for item in items)
