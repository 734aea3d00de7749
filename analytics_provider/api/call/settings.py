"""From an Airflow connection to what a transport needs: base address, key, header, timeouts.

Both transports (the hook and the async client of the triggers) read their settings here, apply
the caller's overrides here (:class:`TransportOptions`) and send the same ``User-Agent``, so a
rule about the connection holds for both by construction.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import sys
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol
from urllib.parse import urlsplit

from analytics_provider import __version__
from analytics_provider.api.call.limits import BodyLimit, DownloadLimits, positive_int, ratio
from analytics_provider.api.call.network import Network, NetworkConfigError
from analytics_provider.get_provider_info import DEFAULT_HEADER_NAME, REGION_BASE_URLS, REGIONS, VENDOR_HEADER_NAME

VENDOR_HOSTS = frozenset(urlsplit(url).hostname for url in REGION_BASE_URLS.values())
DEFAULT_REGION = "eu"
DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_READ_TIMEOUT = 60.0
MIN_TIMEOUT = 0.1  # seconds; the connection form says the same
MAX_TIMEOUT = 86_400.0  # seconds (a day): a socket's timeout past it overflows (1e12 did), and no wait is that long
USER_AGENT = f"airflow-provider-analytics/{__version__}"


def user_agent(side: str) -> str:
    """What the service's logs see: the provider, the side that called (``worker`` or
    ``triggerer``) and Airflow's version, e.g. ``airflow-provider-analytics/0.1.0 (triggerer;
    Airflow 3.3.2)``."""
    try:
        from airflow import __version__ as airflow_version
    except ImportError:  # the emulator's own tools run without Airflow
        airflow_version = "unknown"
    return f"{USER_AGENT} ({side}; Airflow {airflow_version})"
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")  # an HTTP header name (RFC 9110 token)


class ConnectionLike(Protocol):
    password: str | None

    @property
    def extra_dejson(self) -> dict[str, Any]: ...


class ConnectionConfigError(ValueError):
    """The connection's settings cannot work; the text says which field and what is allowed.

    ``reason`` is the text without the connection id (a connection tested from the UI has a
    temporary id that means nothing to the user).
    """

    def __init__(self, where: str, reason: str) -> None:
        self.reason = reason
        super().__init__(f"{where}: {reason}")


@dataclass(frozen=True)
class ConnectionSettings:
    base_url: str
    api_key: str = field(repr=False)
    header_name: str = DEFAULT_HEADER_NAME
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    read_timeout: float = DEFAULT_READ_TIMEOUT
    network: Network = field(default_factory=Network)
    body_limit: BodyLimit = field(default_factory=BodyLimit)
    download_limits: DownloadLimits = field(default_factory=DownloadLimits)

    @classmethod
    def from_connection(cls, conn: ConnectionLike, conn_id: str = "") -> ConnectionSettings:
        extra = conn.extra_dejson
        where = f"connection {conn_id!r}" if conn_id else "the connection"
        base_url = resolve_base_url(extra.get("region"), extra.get("base_url"), where=where)
        header_name = str(extra.get("header_name") or default_header_name(base_url)).strip()
        if not _TOKEN.match(header_name):
            raise ConnectionConfigError(where, f"header_name must be an HTTP header name, got {header_name!r}")
        return cls(
            base_url=base_url,
            api_key=check_api_key(conn.password, where),
            header_name=header_name,
            connect_timeout=seconds_or_default(extra.get("connect_timeout"), DEFAULT_CONNECT_TIMEOUT,
                                               "connect_timeout", where),
            read_timeout=seconds_or_default(extra.get("timeout"), DEFAULT_READ_TIMEOUT, "timeout", where),
            network=network_of(extra, where),
            **limits_of(extra, where),
        )

    @functools.cached_property
    def secrets(self) -> tuple[str, ...]:
        """What no text may quote: the key and the proxies' passwords."""
        return (self.api_key, *self.network.secrets)

    def masked(self) -> ConnectionSettings:
        """These settings, their secrets registered with Airflow's log masker (both transports)."""
        for secret in self.secrets:
            mask_secret(secret)
        return self

    def is_same_origin(self, url: str) -> bool:
        """Whether ``url`` points at the service itself: only there may the key be sent."""
        if url.startswith(self.base_url + "/"):  # the common case, a path of the API (its authority is ours)
            return True
        ours, theirs = urlsplit(self.base_url), urlsplit(url)
        return (ours.scheme, ours.hostname, ours.port) == (theirs.scheme, theirs.hostname, theirs.port)

    @functools.cached_property
    def key_header(self) -> Mapping[str, str]:
        """The key's header: only for a request to the service itself (:meth:`is_same_origin`)."""
        return MappingProxyType({self.header_name: self.api_key})

    @functools.cached_property
    def api_proxy(self) -> str | None:
        """The proxy of every request to the API's own address (``no_proxy`` honoured)."""
        return self.network.proxy_for(self.base_url + "/")


def mask_secret(secret: str) -> None:
    """Register ``secret`` with Airflow's log masker."""
    log_masker_home().mask_secret(secret)


@functools.cache
def log_masker_home() -> Any:
    """The module whose ``mask_secret`` is Airflow's log masker, found once (a failed import is
    searched for anew each time, and common-compat's lazy module tries one at each look): the
    function is read from it at each call, so that a patch of it holds. ``airflow.sdk.log`` on
    Airflow 3 (the common-compat releases pinned for 3.1 and 3.2 do not offer it); on 2.11 the
    module common-compat finds it in, or 2.11's own where common-compat is older than 1.23."""
    try:
        import airflow.sdk.log as home
    except ImportError:
        try:
            from airflow.providers.common.compat.sdk import mask_secret as found
        except ImportError:
            import airflow.utils.log.secrets_masker as home  # type: ignore[no-redef,unused-ignore]
        else:
            home = sys.modules.get(found.__module__)  # type: ignore[assignment]
            if getattr(home, "mask_secret", None) is not found:
                home = types.SimpleNamespace(mask_secret=found)  # type: ignore[assignment]
    return home


def limits_of(extra: Any, where: str) -> dict[str, Any]:
    """The size limits the connection's extra sets (``max_answer_bytes``, ``max_header_bytes``,
    ``max_download_bytes``, ``max_decode_ratio``, ``max_download_seconds``): see
    :mod:`~analytics_provider.api.call.limits`."""
    given = {name: extra.get(name) for name in ("max_answer_bytes", "max_download_bytes", "max_decode_ratio",
                                                "max_header_bytes", "max_download_seconds")}
    try:
        answer, head = given["max_answer_bytes"], given["max_header_bytes"]
        body = BodyLimit(
            **({} if answer in (None, "") else {"answer": positive_int(answer, "max_answer_bytes")}),
            **({} if head in (None, "") else {"head": positive_int(head, "max_header_bytes")}))
        size, times, seconds = given["max_download_bytes"], given["max_decode_ratio"], given["max_download_seconds"]
        downloads = DownloadLimits().with_overrides(
            None if size in (None, "") else positive_int(size, "max_download_bytes"),
            None if times in (None, "") else ratio(times, "max_decode_ratio"),
            None if seconds in (None, "") else ratio(seconds, "max_download_seconds"),
            f"{where}'s extra")
    except ValueError as exc:
        raise ConnectionConfigError(where, str(exc)) from None
    return {"body_limit": body, "download_limits": downloads}


def network_of(extra: Any, where: str) -> Network:
    try:
        return Network.from_extra(extra)
    except NetworkConfigError as exc:
        raise ConnectionConfigError(where, exc.reason) from None


def default_header_name(base_url: str) -> str:
    """The key's header when the connection names none: the vendor's on its regional hosts.

    The vendor's hosts read ``X-Holistics-Key`` (its OpenAPI document and the clients seen in the
    wild send that); anything else (a gateway, the emulator) gets the API document's name.
    """
    return VENDOR_HEADER_NAME if urlsplit(base_url).hostname in VENDOR_HOSTS else DEFAULT_HEADER_NAME


def check_api_key(value: str | None, where: str) -> str:
    """The key without surrounding whitespace; refused (never echoed) when empty or not sendable."""
    key = (value or "").strip()
    if not key:
        raise ConnectionConfigError(where, "has no API key: put the key in its password field")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in key):
        raise ConnectionConfigError(
            where, "password (the API key) contains control characters (a line break or tab inside it?); "
            "paste the key again"
        )
    if not key.isascii():
        raise ConnectionConfigError(where, "password (the API key) contains characters outside ASCII; paste it again")
    return key


def resolve_base_url(region: str | None, base_url: str | None, *, where: str = "the connection") -> str:
    """The base address: the override when given (it must end in ``/api/v2``), else the region's."""
    if base_url:
        url = str(base_url).strip().rstrip("/")
        parts = urlsplit(url)
        if parts.path.endswith("/api/v1"):
            raise ConnectionConfigError(
                where,
                f"base_url {url!r} is an API v1 address; v1 stopped working on 20 November 2023. "
                "Use the /api/v2 address of your region.",
            )
        if parts.scheme not in ("http", "https") or not parts.hostname or not parts.path.endswith("/api/v2"):
            raise ConnectionConfigError(where, f"base_url must be an http(s) address ending in /api/v2, got {url!r}")
        return url
    region = str(region or DEFAULT_REGION).strip().lower()
    if region not in REGION_BASE_URLS:
        raise ConnectionConfigError(where, f"region must be one of {', '.join(REGIONS)}; got {region!r}")
    return REGION_BASE_URLS[region]


def seconds_or_default(value: Any, default: float, name: str, where: str, minimum: float = MIN_TIMEOUT,
                       maximum: float = MAX_TIMEOUT) -> float:
    """A duration setting: ``default`` when unset, else a number from ``minimum`` to ``maximum``."""
    if value is None or value == "":
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if isinstance(value, bool) or not math.isfinite(number) or not minimum <= number <= maximum:
        raise ConnectionConfigError(where, f"{name} must be a number of seconds of at least {minimum:g} and at most "
                                           f"{maximum:,g}, got {value!r}")
    return number


@dataclass(frozen=True)
class TransportOptions:
    """What a caller may override per hook or client: timeouts (the connection's otherwise).

    Checked here once for both transports: zero, negative or non-numeric values are refused
    by name, never replaced by a default.
    """

    connect_timeout: float | None = None
    read_timeout: float | None = None

    def __post_init__(self) -> None:
        for name, label in (("connect_timeout", "connect_timeout"), ("read_timeout", "timeout")):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, seconds_or_default(value, 0.0, label, "the hook"))

    def apply(self, settings: ConnectionSettings) -> ConnectionSettings:
        if self.connect_timeout is None and self.read_timeout is None:
            return settings
        return dataclasses.replace(
            settings,
            connect_timeout=self.connect_timeout or settings.connect_timeout,
            read_timeout=self.read_timeout or settings.read_timeout,
        )
