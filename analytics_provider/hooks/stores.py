"""Object-storage destinations: whether the filesystem of a URL's scheme is installed, and which
package to install when it is not (checked before any request; nothing connects to the store)."""

from __future__ import annotations

from typing import Any

from analytics_provider.exceptions import AnalyticsParameterError

STORE_PACKAGES = {
    "s3": "apache-airflow-providers-amazon[s3fs]",
    "s3a": "apache-airflow-providers-amazon[s3fs]",
    "gs": "apache-airflow-providers-google",
    "gcs": "apache-airflow-providers-google",
    "abfs": "apache-airflow-providers-microsoft-azure",
    "abfss": "apache-airflow-providers-microsoft-azure",
    "adl": "apache-airflow-providers-microsoft-azure",
}
"""The package that gives Airflow the filesystem of an object store's URL scheme."""


def check_store(remote: Any, shown: str) -> None:
    """Refuse an object-storage destination whose filesystem is not installed, naming the package.

    An ``ObjectStoragePath`` (what a URL becomes) writes through the filesystem an Airflow provider
    registers for its scheme; every path reads through fsspec's class for it. Both are looked up
    (classes imported, none created: nothing connects to the store here).
    """
    protocol = remote.protocol if isinstance(remote.protocol, str) else remote.protocol[0]
    package = STORE_PACKAGES.get(protocol)
    install = f"install {package} where the tasks run" if package else (
        "no provider this package knows supplies one; those it knows: "
        + ", ".join(f"{'/'.join(s for s, p in STORE_PACKAGES.items() if p == name)} ({name})"
                    for name in dict.fromkeys(STORE_PACKAGES.values())))
    from airflow.providers.common.compat.sdk import ObjectStoragePath

    registered = isinstance(remote, ObjectStoragePath) and _airflow_has_fs(protocol)
    if isinstance(remote, ObjectStoragePath) and not registered:
        raise AnalyticsParameterError(
            f"destination {shown!r}: there is no Airflow filesystem for '{protocol}://' here ({install})")
    import fsspec

    try:
        fsspec.get_filesystem_class(protocol)
    except ValueError:
        if not registered:
            raise AnalyticsParameterError(
                f"destination {shown!r}: '{protocol}://' is no scheme of a filesystem installed here") from None
    except ImportError as exc:
        raise AnalyticsParameterError(
            f"destination {shown!r}: the filesystem for '{protocol}://' is not installed ({exc}; "
            f"{install or 'install the package it names'})") from None


def _airflow_has_fs(protocol: str) -> bool:
    try:
        from airflow.sdk.io import has_fs
    except ImportError:  # Airflow 2
        from airflow.io import has_fs  # type: ignore[no-redef,attr-defined,unused-ignore]
    return bool(has_fs(protocol))
