"""Where a request goes and whom it trusts: proxies and certificate checks, read once per connection.

The connection's extras decide: ``proxies`` (scheme to proxy URL, as ``requests`` and Airflow's
http provider take it, with an optional ``no_proxy``) and ``verify`` (``true``, ``false`` or the
path of a CA bundle; the strings ``"true"``/``"false"`` mean the booleans). Where they are
silent, the process's environment does: ``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``,
``NO_PROXY`` (either case), then ``REQUESTS_CA_BUNDLE``, ``CURL_CA_BUNDLE``, ``SSL_CERT_FILE``.
Without any of them, certificates are checked against certifi's bundle. Both transports take
their answers from here, so they cannot disagree.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import ssl
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

log = logging.getLogger(__name__)

PROXY_KEYS = ("http", "https", "all", "no_proxy")
CA_VARIABLES = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE")
_warned_unverified: set[str] = set()


class NetworkConfigError(ValueError):
    """A proxy or certificate setting that cannot work; ``reason`` names the setting and the value."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


@dataclass(frozen=True)
class Network:
    """Proxies and the certificate check of one connection (``verify``: True, False or a bundle path).

    ``verify_source`` names where ``verify`` came from, for error texts. The proxy URLs may hold
    credentials: the repr shows none, and :attr:`secrets` lists them for redaction.
    """

    proxies: Mapping[str, str] = field(default_factory=dict, repr=False)
    no_proxy: str = ""
    verify: bool | str = True
    verify_source: str = "the default (certifi's CA bundle)"
    proxy_source: str = ""

    def __repr__(self) -> str:
        shown = {scheme: redact_proxy(url) for scheme, url in self.proxies.items()}
        return f"Network(proxies={shown!r}, no_proxy={self.no_proxy!r}, verify={self.verify!r})"

    @classmethod
    def from_extra(cls, extra: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> Network:
        """The connection's settings, the environment's where it has none; bad values raise
        :class:`NetworkConfigError` naming the extra (or variable) and the value."""
        env = os.environ if environ is None else environ
        proxies, no_proxy, proxy_source = _proxies(extra.get("proxies"), env)
        verify, verify_source = _verify(extra.get("verify"), env)
        return cls(proxies, no_proxy, verify, verify_source, proxy_source)

    def proxy_for(self, url: str) -> str | None:
        """The proxy a request to ``url`` goes through (None: straight), ``no_proxy`` honoured."""
        if not self.proxies:
            return None
        parts = urlsplit(url)
        host = parts.hostname or ""
        if self.no_proxy and urllib.request.proxy_bypass_environment(  # type: ignore[attr-defined]
            f"{host}:{parts.port}" if parts.port else host, {"no": self.no_proxy}
        ):
            return None
        return self.proxies.get(parts.scheme) or self.proxies.get("all")

    @functools.cached_property
    def secrets(self) -> tuple[str, ...]:
        """Proxy passwords (as written and decoded): never in a log, an error or a repr."""
        found: list[str] = []
        for url in self.proxies.values():
            password = urlsplit(url).password
            if password:
                found += [password, unquote(password)]
        return tuple(found)

    @functools.cached_property
    def ssl_context(self) -> ssl.SSLContext | bool:
        """For aiohttp: False when certificates are not checked, else a context on the bundle."""
        if self.verify is False:
            return False
        return _context(self.verify if isinstance(self.verify, str) else _default_bundle())

    def warn_if_unverified(self, conn_id: str, host: str) -> None:
        """Once per connection: certificates are not checked. ``requests``' own warning per
        request to that host is silenced (this one says it)."""
        if self.verify is not False or conn_id in _warned_unverified:
            return
        _warned_unverified.add(conn_id)
        log.warning(
            "Connection %r has verify set to false: the certificates of %s and of every host it "
            "redirects to are not checked, so anyone on the path can read the API key.", conn_id, host,
        )
        import re
        import warnings

        warnings.filterwarnings("ignore", message=f"Unverified HTTPS request is being made to host '{re.escape(host)}'")

    def tls_advice(self) -> str:
        """Which setting makes a certificate trusted, for a TLS failure's error text."""
        return (
            f"certificates are checked against {self.verify_source}; if the service (or a proxy "
            "that inspects TLS) uses a private CA, set the connection's extra verify to the path "
            "of that CA's bundle (or REQUESTS_CA_BUNDLE / SSL_CERT_FILE for the whole process)"
        )


SECRET_LOOKING = re.compile(r"(?=[^/]*[0-9])(?=[^/]*[A-Za-z])[^/]{8,}|[^/]{16,}|(?:%[0-9A-Fa-f]{2}){2,}")
"""A path segment (or host label) masked as a token: eight characters or more mixing letters and digits
(``SECRETTOKEN1``, ``T024BE7LD``, a UUID), any of sixteen or more (``SuperSecretPassword``), or
one spelled wholly in percent-escapes (``%73%65%63...``); words (``services``,
``IncomingWebhook``, ``notifications``, ``api``, ``v2``) and short ids (``T000``) are shown."""


def masked_path(path: str, hidden: str = "***") -> str:
    """``path`` with each segment that looks like a token (:data:`SECRET_LOOKING`) shown as ``hidden``."""
    return "/".join(hidden if SECRET_LOOKING.fullmatch(segment) else segment for segment in path.split("/"))


def redact_proxy(url: str) -> str:
    """A proxy URL without its credentials."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def _proxies(value: Any, env: Mapping[str, str]) -> tuple[dict[str, str], str, str]:
    if value in (None, "", {}):
        return _env_proxies(env)
    if isinstance(value, str):
        import json

        try:
            value = json.loads(value)
        except ValueError:
            value = None
    if not isinstance(value, Mapping):
        raise NetworkConfigError(
            "proxies must be a mapping of scheme to proxy URL, such as "
            '{"https": "http://proxy.example:3128", "no_proxy": "localhost"}'
        )
    unknown = sorted(set(value) - set(PROXY_KEYS))
    if unknown:
        raise NetworkConfigError(f"proxies takes the keys {', '.join(PROXY_KEYS)}; got {', '.join(map(repr, unknown))}")
    proxies = {scheme: _proxy_url(str(url), f"proxies[{scheme!r}]") for scheme, url in value.items()
               if scheme != "no_proxy" and url}
    return proxies, str(value.get("no_proxy") or ""), "the connection's extra proxies"


def _env_proxies(env: Mapping[str, str]) -> tuple[dict[str, str], str, str]:
    found: dict[str, str] = {}
    for scheme in ("http", "https", "all"):
        for name in (f"{scheme}_proxy", f"{scheme.upper()}_PROXY"):
            if env.get(name):
                found[scheme] = _proxy_url(env[name], name)
                break
    no_proxy = env.get("no_proxy") or env.get("NO_PROXY") or ""
    return found, no_proxy, "the environment" if found else ""


def _proxy_url(url: str, name: str) -> str:
    url = url.strip()
    if "://" not in url:
        url = f"http://{url}"  # as requests and curl read a bare host:port
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise NetworkConfigError(f"{name} must be an http:// or https:// proxy URL, got {redact_proxy(url)!r}")
    return url


def _verify(value: Any, env: Mapping[str, str]) -> tuple[bool | str, str]:
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        value = value.strip().lower() == "true"
    if isinstance(value, bool):
        return value, "the default (certifi's CA bundle)" if value else "nothing (verify is false)"
    if value not in (None, ""):
        if not isinstance(value, str):
            raise NetworkConfigError(f"verify must be true, false or the path of a CA bundle, got {value!r}")
        return _bundle(value.strip(), "the connection's extra verify"), f"the CA bundle {value.strip()} (extra verify)"
    for name in CA_VARIABLES:
        if env.get(name):
            return _bundle(env[name], name), f"the CA bundle {env[name]} ({name})"
    return True, "the default (certifi's CA bundle)"


def _bundle(path: str, name: str) -> str:
    if not os.path.exists(path):
        raise NetworkConfigError(f"{name} names a CA bundle that does not exist: {path!r}")
    return path


def _default_bundle() -> str:
    import certifi

    return str(certifi.where())


@functools.lru_cache(maxsize=16)
def _context(bundle: str) -> ssl.SSLContext:
    """One context per bundle for the whole process (making one reads the bundle: ~20 ms)."""
    if os.path.isdir(bundle):
        return ssl.create_default_context(capath=bundle)
    return ssl.create_default_context(cafile=bundle)
