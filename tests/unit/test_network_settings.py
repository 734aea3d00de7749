"""The connection's network settings as read once for both transports: proxies and ``verify``,
from the extras or the environment, refused by name when they cannot work."""

from __future__ import annotations

from pathlib import Path

import pytest

from analytics_provider.api.call.network import Network, NetworkConfigError

NO_ENV: dict[str, str] = {}


def test_the_extras_proxies_win_and_no_proxy_is_theirs() -> None:
    net = Network.from_extra({"proxies": {"https": "http://p:3128", "no_proxy": "internal.example"}},
                             {"HTTPS_PROXY": "http://env:1", "NO_PROXY": "*"})
    assert net.proxy_for("https://eu.holistics.io/api/v2/jobs/1") == "http://p:3128"
    assert net.proxy_for("https://api.internal.example/api/v2") is None
    assert net.proxy_for("http://eu.holistics.io/") is None  # no http proxy named


def test_proxies_as_the_json_text_the_form_saves() -> None:
    net = Network.from_extra({"proxies": '{"all": "proxy.example:8080"}'}, NO_ENV)
    assert net.proxy_for("https://eu.holistics.io/x") == "http://proxy.example:8080"  # a bare host:port


def test_the_environment_in_either_case_when_the_connection_is_silent() -> None:
    net = Network.from_extra({}, {"https_proxy": "http://lower:1", "HTTP_PROXY": "http://upper:2",
                                  "NO_PROXY": "localhost,.corp"})
    assert net.proxy_for("https://a.example/") == "http://lower:1"
    assert net.proxy_for("http://a.example/") == "http://upper:2"
    assert net.proxy_for("https://db.corp/") is None and net.proxy_for("http://localhost:8080/") is None


@pytest.mark.parametrize(
    ("proxies", "message"),
    [
        ({"ftp": "http://p:1"}, "proxies takes the keys http, https, all, no_proxy; got 'ftp'"),
        ({"https": "socks5://p:1"}, "proxies['https'] must be an http:// or https:// proxy URL"),
        ("not json", "proxies must be a mapping of scheme to proxy URL"),
        (["http://p:1"], "proxies must be a mapping of scheme to proxy URL"),
    ],
)
def test_proxies_that_cannot_work_are_refused_by_name(proxies: object, message: str) -> None:
    with pytest.raises(NetworkConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        Network.from_extra({"proxies": proxies}, NO_ENV)


def test_a_proxy_password_is_in_no_repr_and_listed_for_redaction() -> None:
    net = Network.from_extra({"proxies": {"https": "http://user:p%40ss-w0rd@p:3128"}}, NO_ENV)
    assert "w0rd" not in repr(net) and "***@p:3128" in repr(net)
    assert set(net.secrets) == {"p%40ss-w0rd", "p@ss-w0rd"}


@pytest.mark.parametrize(("value", "expected"), [(True, True), ("true", True), (" TRUE ", True),
                                                 (False, False), ("false", False), ("False", False)])
def test_verify_takes_booleans_and_their_text(value: object, expected: bool) -> None:
    assert Network.from_extra({"verify": value}, NO_ENV).verify is expected


def test_verify_a_bundle_and_the_environment_order(tmp_path: Path) -> None:
    bundle, other = tmp_path / "ca.pem", tmp_path / "other.pem"
    bundle.write_text("x")
    other.write_text("y")
    assert Network.from_extra({"verify": str(bundle)}, {"REQUESTS_CA_BUNDLE": str(other)}).verify == str(bundle)
    assert Network.from_extra({}, {"SSL_CERT_FILE": str(bundle), "REQUESTS_CA_BUNDLE": str(other)}).verify == str(other)
    assert Network.from_extra({}, {"SSL_CERT_FILE": str(bundle)}).verify == str(bundle)
    assert Network.from_extra({}, NO_ENV).verify is True


def test_a_bundle_that_does_not_exist_is_named_with_its_setting(tmp_path: Path) -> None:
    with pytest.raises(NetworkConfigError, match="the connection's extra verify names a CA bundle that does not"):
        Network.from_extra({"verify": str(tmp_path / "nope.pem")}, NO_ENV)
    with pytest.raises(NetworkConfigError, match="SSL_CERT_FILE names a CA bundle that does not exist"):
        Network.from_extra({}, {"SSL_CERT_FILE": str(tmp_path / "nope.pem")})
