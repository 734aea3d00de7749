"""From an Airflow connection to what a transport needs: base address, key, header, timeouts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

from analytics_provider.get_provider_info import DEFAULT_HEADER_NAME, REGIONS

REGION_BASE_URLS = {
    "apac": "https://secure.holistics.io/api/v2",
    "eu": "https://eu.holistics.io/api/v2",
    "us": "https://us.holistics.io/api/v2",
}
DEFAULT_REGION = "eu"
DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_READ_TIMEOUT = 60.0


class ConnectionLike(Protocol):
    password: str | None

    @property
    def extra_dejson(self) -> dict[str, Any]: ...


class ConnectionConfigError(ValueError):
    """The connection's settings cannot work; the text says which field and what is allowed."""


@dataclass(frozen=True)
class ConnectionSettings:
    base_url: str
    api_key: str = field(repr=False)
    header_name: str = DEFAULT_HEADER_NAME
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    read_timeout: float = DEFAULT_READ_TIMEOUT

    @classmethod
    def from_connection(cls, conn: ConnectionLike, conn_id: str = "") -> ConnectionSettings:
        extra = conn.extra_dejson
        where = f"connection {conn_id!r}" if conn_id else "the connection"
        if not conn.password:
            raise ConnectionConfigError(f"{where} has no API key: put the key in its password field")
        return cls(
            base_url=resolve_base_url(extra.get("region"), extra.get("base_url"), where=where),
            api_key=conn.password,
            header_name=str(extra.get("header_name") or DEFAULT_HEADER_NAME),
            connect_timeout=_positive(extra.get("connect_timeout"), DEFAULT_CONNECT_TIMEOUT, "connect_timeout", where),
            read_timeout=_positive(extra.get("timeout"), DEFAULT_READ_TIMEOUT, "timeout", where),
        )

    def url(self, path: str) -> str:
        return self.base_url + path

    def is_same_origin(self, url: str) -> bool:
        """Whether ``url`` points at the service itself: only there may the key be sent."""
        ours, theirs = urlsplit(self.base_url), urlsplit(url)
        return (ours.scheme, ours.hostname, ours.port) == (theirs.scheme, theirs.hostname, theirs.port)


def resolve_base_url(region: str | None, base_url: str | None, *, where: str = "the connection") -> str:
    """The base address: the override when given (it must end in ``/api/v2``), else the region's."""
    if base_url:
        url = str(base_url).strip().rstrip("/")
        parts = urlsplit(url)
        if parts.path.endswith("/api/v1"):
            raise ConnectionConfigError(
                f"{where}: base_url {url!r} is an API v1 address; v1 stopped working on 20 November 2023. "
                "Use the /api/v2 address of your region."
            )
        if parts.scheme not in ("http", "https") or not parts.hostname or not parts.path.endswith("/api/v2"):
            raise ConnectionConfigError(
                f"{where}: base_url must be an http(s) address ending in /api/v2, got {url!r}"
            )
        return url
    region = str(region or DEFAULT_REGION).strip().lower()
    if region not in REGION_BASE_URLS:
        raise ConnectionConfigError(f"{where}: region must be one of {', '.join(REGIONS)}; got {region!r}")
    return REGION_BASE_URLS[region]


def _positive(value: Any, default: float, name: str, where: str) -> float:
    if value in (None, ""):
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = 0.0
    if number <= 0:
        raise ConnectionConfigError(f"{where}: {name} must be a positive number of seconds, got {value!r}")
    return number
