"""Where a file is, spelled for Airflow assets and for OpenLineage.

A location is a local path, a ``file://`` URL or an object-storage URL (``s3://[conn_id@]bucket/key``,
as ``ObjectStoragePath`` writes it). The connection id in an object-storage URL says how to
reach the store, not where the file is, so both spellings drop it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import urlsplit

LOCAL_SCHEMES = ("", "file", "local")
# OpenLineage names a store by its canonical scheme: gs (not gcs), s3 (not s3a or s3n)
OPENLINEAGE_SCHEMES = {"gcs": "gs", "s3a": "s3", "s3n": "s3"}
# stores whose files are named by a path that keeps its leading "/" (the rest name an object key)
PATH_NAMED_SCHEMES = ("file", "hdfs", "webhdfs", "sftp", "ftp")
# Azure URLs name the container in the user part (container@account.dfs.core.windows.net)
USERINFO_IS_LOCATION = ("abfs", "abfss", "wasb", "wasbs")


@dataclass(frozen=True)
class StorageLocation:
    """A file's place: scheme, authority (bucket, container or host) and path."""

    scheme: str
    authority: str
    path: str

    @classmethod
    def parse(cls, location: str | os.PathLike[str]) -> StorageLocation:
        text = os.fspath(location)
        if "://" not in text:
            return cls("file", "", os.path.abspath(os.path.expanduser(text)))
        parts = urlsplit(text)
        scheme = parts.scheme.lower()
        if scheme in LOCAL_SCHEMES:
            return cls("file", "", os.path.abspath(parts.path or "/"))
        authority = parts.netloc
        if scheme not in USERINFO_IS_LOCATION:
            authority = authority.rpartition("@")[2]  # an ObjectStoragePath conn_id
        return cls(scheme, authority, parts.path or "/")

    @property
    def uri(self) -> str:
        """The URL of the file (an Asset's URI): ``file:///abs/path``, ``s3://bucket/key``."""
        return f"{self.scheme}://{self.authority}{self.path}"

    def openlineage_name(self) -> tuple[str, str]:
        """``(namespace, name)`` by the OpenLineage naming conventions.

        Local files: ``file`` and the absolute path; object stores: ``s3://bucket`` (``gs://``,
        ``abfss://``...) and the object key; HDFS-like stores: ``hdfs://host:port`` and the path.
        """
        if self.scheme == "file":
            return "file", self.path
        scheme = OPENLINEAGE_SCHEMES.get(self.scheme, self.scheme)
        name = self.path if scheme in PATH_NAMED_SCHEMES else self.path.lstrip("/")
        return f"{scheme}://{self.authority}", name
