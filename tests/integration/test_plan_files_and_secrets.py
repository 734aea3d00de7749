"""Saved plans' files and secrets (issue 44, found by an attack): a webhook's token is masked wherever
people read a plan (rows, the resources it touches, a stale plan's refusal) while the apply sends it
whole, and a webhook moved to another path shows."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from analytics_provider import manage
from analytics_provider.deliveries.shown import compared, masked

from .test_deliveries import write, writes

TOKEN = "s3cr3tT0kenXYZ42"
ENDPOINT = f"https://hooks.example.com/services/T000/B000/{TOKEN}"
WEBHOOK = f"""\
alerts:
  - key: revenue-hook
    widget: 101
    repeat: "0 9 * * *"
    dest:
      type: WebhookDest
      endpoint: {ENDPOINT}
"""


@pytest.fixture
def hook(analytics_emulator, analytics_connection) -> Any:
    from analytics_provider.hooks.analytics import AnalyticsHook

    hook = AnalyticsHook(analytics_connection)
    yield hook
    hook.close()


def plan_to(files: Path, out: Path, capsys: Any) -> tuple[str, str]:
    """Plan the files of scope sales into ``out``: what it printed, and the digest."""
    assert manage.main(["plan", str(files), "--scope", "sales", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    return printed, re.findall(r", digest ([0-9a-f]{64}):", printed)[0]


def the_alert(hook: Any) -> dict[str, Any]:
    (found,) = [a for a in hook.list_data_alerts() if "[managed: sales/revenue-hook]" in (a.get("title") or "")]
    return found


def test_a_url_shows_its_host_and_path_with_only_secret_looking_parts_masked() -> None:
    assert masked(ENDPOINT) == "https://hooks.example.com/services/T000/B000/***"
    assert masked("https://hooks.example.com/services/TATTACKER/BEVIL/exfil") == \
        "https://hooks.example.com/services/TATTACKER/BEVIL/exfil"  # another path: shown as it is
    assert masked("https://user:pw@hooks.example.com:8443/in?token=abc&channel=ops#frag") == \
        "https://***@hooks.example.com:8443/in?token=***&channel=***#***"
    assert masked("https://h.example.com/webhook/123e4567-e89b-12d3-a456-426614174000/IncomingWebhook/x") == \
        "https://h.example.com/webhook/***/IncomingWebhook/x"
    assert masked("https://h.example.com/" + "a" * 24) == "https://h.example.com/***"  # long: a token
    assert masked("not a URL") == "not a URL" and masked(7) == 7
    # two values that differ only in what is masked: the row says so
    assert compared(ENDPOINT, ENDPOINT.replace(TOKEN, "an0therT0ken99")) == (
        "'https://hooks.example.com/services/T000/B000/***'",
        "'https://hooks.example.com/services/T000/B000/***' (differs in a masked part)")


def test_a_webhook_token_is_masked_in_the_saved_plan_and_the_stale_refusal_and_sent_whole(
        tmp_path, hook, analytics_emulator, capsys) -> None:
    files, saved = tmp_path / "deliveries", tmp_path / "plan.json"
    write(files, "hooks.yml", WEBHOOK)
    assert manage.main(["apply", str(files), "--scope", "sales"]) == 0
    assert TOKEN not in capsys.readouterr().out  # the create's row
    assert the_alert(hook)["dest"]["endpoint"] == ENDPOINT  # the apply sent the real value
    write(files, "hooks.yml", WEBHOOK.replace('"0 9 * * *"', '"0 10 * * *"'))
    printed, approved = plan_to(files, saved, capsys)
    plan = json.loads(saved.read_text())
    (touched,) = plan["touched"]
    assert TOKEN not in printed and TOKEN not in json.dumps(plan["touched"]) and TOKEN not in json.dumps(
        [{k: v for k, v in c.items() if k != "write"} for c in plan["changes"]])
    assert touched["fields"]["dest"]["endpoint"] == "https://hooks.example.com/services/T000/B000/***"
    assert plan["changes"][0]["write"]["fields"]["dest"]["endpoint"] == ENDPOINT  # what the apply sends
    # the token rotated on the service since the plan: stale, and the refusal does not show it
    alert = the_alert(hook)
    rotated = ENDPOINT.replace(TOKEN, "r0tatedT0ken77")
    kept = ("title", "source_type", "source_id", "schedule", "dynamic_filter_presets", "viz_conditions")
    hook.update_data_alert(alert["id"], {**{k: alert[k] for k in kept if k in alert},
                                         "dest": {**alert["dest"], "endpoint": rotated}})
    analytics_emulator.clear_requests()
    assert manage.main(["apply", "--plan", str(saved), "--digest", approved]) == 1
    out = capsys.readouterr()
    assert "stale plan: plan again" in out.err
    assert f"- data alert {alert['id']} (revenue-hook): a masked value changed (not shown)" in out.err
    assert TOKEN not in out.err + out.out and "r0tatedT0ken77" not in out.err + out.out
    assert writes(analytics_emulator) == []
    # planned again, applied: the file's token is sent whole
    printed, approved = plan_to(files, saved, capsys)
    assert "dest.endpoint 'https://hooks.example.com/services/T000/B000/***' (differs in a masked part)" in printed
    assert manage.main(["apply", "--plan", str(saved), "--digest", approved]) == 0
    assert the_alert(hook)["dest"]["endpoint"] == ENDPOINT


def test_a_webhook_moved_to_another_path_on_the_same_host_shows_in_the_row(tmp_path, hook, capsys) -> None:
    files = tmp_path / "deliveries"
    write(files, "hooks.yml", WEBHOOK)
    assert manage.main(["apply", str(files), "--scope", "sales"]) == 0
    write(files, "hooks.yml", WEBHOOK.replace(f"T000/B000/{TOKEN}", "TATTACKER/BEVIL/exfil"))
    capsys.readouterr()
    assert manage.main(["plan", str(files), "--scope", "sales"]) == 0
    (row,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("change")]
    assert ("dest.endpoint 'https://hooks.example.com/services/T000/B000/***'  "
            "dest.endpoint 'https://hooks.example.com/services/TATTACKER/BEVIL/exfil'") in row
