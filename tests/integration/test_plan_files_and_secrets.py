"""Saved plans' files and secrets (issue 44, found by an attack): a webhook's token is masked wherever
people read a plan (rows, the resources it touches, a stale plan's refusal) while the apply sends it
whole, and a webhook moved to another path shows; ``--out`` replaces only a saved plan (or with
``--force``), never an input, a file in the input folder or a link; a plan file past its bound,
or anything but a regular file, is refused unread."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from analytics_provider import manage
from analytics_provider.deliveries.saved import apply_saved_deliveries
from analytics_provider.deliveries.shown import compared, masked
from analytics_provider.plans import saved as saved_module
from analytics_provider.plans.by_reference import REFERENCE_FORMAT, resolved
from analytics_provider.plans.saved import MAX_PLAN_BYTES, SavedPlanError, read_file, write_file

from .test_deliveries import SALES, write, writes

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
ONE = SALES.split("alerts:")[0]


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


def test_out_replaces_only_a_saved_plan_and_never_an_input_a_link_or_a_file_beside_the_inputs(
        tmp_path, analytics_emulator, analytics_connection, capsys) -> None:
    files = tmp_path / "deliveries"
    sales = write(files, "sales.yml", ONE)
    notes, other = tmp_path / "notes.json", tmp_path / "other.txt"
    notes.write_text("my notes\n")
    other.write_text("other\n")
    (tmp_path / "to-other").symlink_to(other)
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere" / "x")
    (tmp_path / "to-input").symlink_to(sales)
    os.link(sales, tmp_path / "hard-link")
    refusals = {
        notes: "an existing file that is not a saved plan: not replaced (--force replaces it)",
        tmp_path / "to-other": f"a symbolic link (to {other}): not followed nor replaced",
        tmp_path / "dangling": "a symbolic link",
        tmp_path / "to-input": "a symbolic link",
        tmp_path / "hard-link": "one of the input files",
        files / "plan.json": f"inside the input folder {files}, among the files checked and planned",
        files / "sub" / "plan.yml": f"the folder {files / 'sub'} does not exist",
    }
    for out, why in refusals.items():
        assert manage.main(["plan", str(files), "--scope", "sales", "--out", str(out)]) == 2, out
        assert f"--out {out}: {why}" in capsys.readouterr().err
    assert analytics_emulator.requests == []  # usage errors: before any request
    assert notes.read_text() == "my notes\n" and other.read_text() == "other\n" and sales.read_text() == ONE
    assert (tmp_path / "to-other").is_symlink() and (tmp_path / "dangling").is_symlink()
    assert sorted(p.name for p in files.iterdir()) == ["sales.yml"]
    # a new file, then over it (a saved plan), then over the notes with --force
    saved = tmp_path / "plan.json"
    for _ in range(2):
        assert manage.main(["plan", str(files), "--scope", "sales", "--out", str(saved)]) == 0
        assert json.loads(saved.read_text())["format"] == saved_module.FORMAT
        assert saved.stat().st_mode & 0o777 == 0o600
    assert manage.main(["plan", str(files), "--scope", "sales", "--out", str(notes), "--force"]) == 0
    assert json.loads(notes.read_text())["format"] == saved_module.FORMAT
    assert manage.main(["plan", str(files), "--scope", "sales", "--force"]) == 2
    assert "--force is for --out" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temporary file left


def test_a_plan_file_is_written_new_only_where_nothing_appeared_since(tmp_path) -> None:
    """``--out`` naming a new file links the plan there: a file (or link) made there since the check
    is not replaced."""
    target = tmp_path / "plan.json"
    target.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(FileExistsError):
        write_file({"format": saved_module.FORMAT}, target, replace=False)
    assert target.is_symlink() and not (tmp_path / "elsewhere").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["plan.json"]  # the temporary file removed


def test_a_plan_file_past_the_bound_or_not_a_regular_file_is_refused_unread(tmp_path, capsys, monkeypatch) -> None:
    big = tmp_path / "big.json"
    with big.open("wb") as out:
        out.truncate(MAX_PLAN_BYTES + 1)  # sparse: nothing of it is read
    assert manage.main(["apply", "--plan", str(big), "--digest", "0" * 64]) == 1
    assert (f"{big}: {MAX_PLAN_BYTES + 1:,} bytes, more than a saved plan may have ({MAX_PLAN_BYTES:,} bytes): "
            "not read") in capsys.readouterr().err
    monkeypatch.setattr(saved_module, "MAX_PLAN_BYTES", 1000)
    with pytest.raises(SavedPlanError, match=r"1,000 bytes\)"):
        saved_module.read_file(big)
    with pytest.raises(SavedPlanError, match=r"more than a saved plan may have \(1,000 bytes\): not read or written"):
        write_file({"x": "y" * 2000}, tmp_path / "out.json")
    assert not (tmp_path / "out.json").exists()
    monkeypatch.undo()
    pipe = tmp_path / "pipe.json"
    os.mkfifo(pipe)  # no writer: an open that waited would hang the test
    with pytest.raises(SavedPlanError, match="not a regular file"):
        read_file(pipe)
    reference = {"format": REFERENCE_FORMAT, "location": str(big), "bytes": MAX_PLAN_BYTES + 1,
                 "file_sha256": "0" * 64, "sha256": "0" * 64}
    with pytest.raises(SavedPlanError, match=f"more than a saved plan may have \\({MAX_PLAN_BYTES:,} bytes\\)"):
        resolved(reference, "apply")


def test_a_gateway_password_in_the_base_address_is_masked_where_a_plan_records_its_service() -> None:
    """A plan records the service it was made against (its file, the apply's first line, the applied
    record): a password in the connection's base address (a gateway's) is masked there, and the
    service is still told apart from another (found by an attack on #44)."""
    from types import SimpleNamespace

    def made_through(base_url: str) -> Any:
        return saved_module.origin(SimpleNamespace(settings=SimpleNamespace(base_url=base_url),
                                                   get_current_user=lambda: {"id": 1, "email": "ann@example.com"}))

    made = made_through("http://gateway:GwPassw0rdS3cret@127.0.0.1:8080/api/v2/")
    assert made == {"service": "http://127.0.0.1:8080/api/v2", "service_id": saved_module.service_id(
        "http://127.0.0.1:8080/api/v2"), "user_id": 1, "user": "ann@example.com"}
    assert made_through("https://eu.example.com/api/v2")["service"] == "https://eu.example.com/api/v2"
    assert made_through("http://gateway:x@10.0.0.9/api/v2")["service"] != made["service"]
    # fourth attack: a token as the user alone, in the query or the fragment, a backslash form, any case
    for url in ("http://GWTOKEN7@127.0.0.1:8080/api/v2", "http://127.0.0.1:8080/api/v2?apikey=GWQUERY8",
                "http://u:P%40W4@127.0.0.1:8080/api/v2#GWFRAG9", "HTTP:\\\\u:PW6@127.0.0.1:8080\\api\\v2"):
        assert made_through(url)["service"] == made["service"], url
    assert made_through("https://[::1]:8443/api/v2?k=1")["service"] == "https://[::1]:8443/api/v2"
    assert made_through("https://eu.example.com:443/api/v2/")["service"] == "https://eu.example.com/api/v2"
    # fifth attack: a token as a segment of the path (a gateway's), kept in clear in the plan's file
    gateway = made_through("https://gw.example.com/t/Tk3nS3cret9/api/v2")
    assert gateway["service"] == "https://gw.example.com/t/***/api/v2"
    assert made_through("https://gw.example.com/u/api/v2")["service"] != gateway["service"]  # another path
    # sixth attack: two tenants of a gateway told apart only by a segment shown as *** are two services
    other_tenant = made_through("https://gw.example.com/t/production99/api/v2")
    assert other_tenant["service"] == gateway["service"] and other_tenant["service_id"] != gateway["service_id"]
    assert "Tk3nS3cret9" not in str(gateway)
    with pytest.raises(SavedPlanError, match=r"another service; plan again through this connection"):
        saved_module._refuse_elsewhere("apply", gateway, other_tenant)
    saved_module._refuse_elsewhere("apply", gateway, made_through("https://gw.example.com/t/Tk3nS3cret9/api/v2/"))


@pytest.mark.parametrize(("storage", "why"), [
    ("records", "a relative path depends on the folder each worker runs in"),
    ("file://records", "a file:// URL names a folder as file:///absolute/path"),
    ("/dev/null", "it is there and is no folder"),
    ("/dev/null/plans", "/dev/null is there and is no folder: no folder can be made in it"),
    ("nosuch://plans", "no installed file system serves nosuch:// ("),
    ("memory://plans", "memory:// is held by one process only: the apply, another task or command would never find "
                       "what it holds"),
])
def test_apply_refuses_a_plan_storage_that_is_not_one_folder_for_every_run(tmp_path, capsys, storage, why) -> None:
    """The record that a plan was applied is found only where the next apply looks: a relative folder
    (one per workspace) let a re-run job from another folder apply an approved plan again (a second
    attack on #44); ``nosuch://`` and ``memory://`` ended in a ValueError's traceback. A usage error,
    before any request, for either form of apply."""
    plan = tmp_path / "plan.json"
    plan.write_text("{}", encoding="utf-8")
    code = manage.main(["apply", "--plan", str(plan), "--digest", "a" * 64, "--plan-storage", storage])
    assert code == 2
    assert f"manage apply --plan: --plan-storage {storage}: {why}" in capsys.readouterr().err
    write(tmp_path / "deliveries", "sales.yml", ONE)
    assert manage.main(["apply", str(tmp_path / "deliveries"), "--plan-storage", storage]) == 2
    assert f"--plan-storage {storage}: {why}" in capsys.readouterr().err


@pytest.mark.parametrize("storage", ["/dev/null", "/dev/null/plans"])
def test_a_lock_in_a_storage_that_is_no_folder_says_what_is_wrong_with_the_storage(storage) -> None:
    """Second attack on issue 44: the plan storage /dev/null (the operator's default under an
    AIRFLOW_HOME that is no folder) refused the apply as "another apply ... is running (its lock
    /dev/null/lock-... is being written, or unreadable)"."""
    from analytics_provider.plans.once import AppliedPlans

    with pytest.raises(SavedPlanError) as refused, AppliedPlans(storage, "me").holding("apply", "deliveries",
                                                                                        ["scope sales"]):
        pass
    assert str(refused.value) == (
        f"apply: the plan storage {storage} is no folder: /dev/null is there and is no folder: a plan is applied only "
        f"under its apply lock ({storage}/lock-deliveries-scope-sales.json); nothing was written")


def test_a_storage_url_no_file_system_serves_is_named_not_a_traceback(tmp_path) -> None:
    from analytics_provider.plans.once import AppliedPlans

    for storage in ("nosuch://plans", "memory://plans"):
        with pytest.raises(SavedPlanError, match=rf"^apply: the plan storage {storage} cannot be reached: .+; nothing "
                                                 "was written$"):
            AppliedPlans(storage, "me").refuse_if_applied("apply", {"plan_id": "1"})
        with pytest.raises(SavedPlanError, match=rf"^apply: the plan storage {storage} cannot be reached: "), \
                AppliedPlans(storage, "me").holding("apply", "deliveries", ["scope sales"]):
            pass


@pytest.mark.parametrize(("content", "why"), [
    ("[]", "not a saved plan of analytics_provider (an array, not an object); make one with a plan task"),
    ('"plan"', "not a saved plan of analytics_provider (a string, not an object)"),
    ('{"what": "deliveries"}', "not a saved plan of analytics_provider (no format 'analytics_provider saved plan 1')"),
    ("params=5", "a malformed saved plan (params is a number, not an object): plan again (nothing was written)"),
    ("surrogate", "a malformed saved plan: it holds '\\ud800', a lone surrogate that is no text: plan again"),
])
def test_a_file_that_is_no_saved_plan_is_refused_before_anything_is_said_of_it(
        tmp_path, hook, analytics_emulator, capsys, content, why) -> None:
    """Second attack on issue 44: a plan file that is a JSON array, or holds a lone surrogate, ended in
    a traceback; one with ``params: 5`` too (a TypeError); an object without its format printed
    "saved plan ...: None of no scope, made against None as None" first. Refused, exit 2, nothing
    printed on stdout, no request; the operators' apply refuses it naming the task."""
    saved = tmp_path / "plan.json"
    if content in ("params=5", "surrogate"):
        write(tmp_path / "deliveries", "sales.yml", ONE)
        plan_to(tmp_path / "deliveries", saved, capsys)
        data = json.loads(saved.read_text())
        data.pop("sha256")
        if content == "params=5":
            data["params"] = 5
        else:
            data["params"]["scope"] = "\ud800"
        text = json.dumps(data)  # ensure_ascii: the surrogate spelled \ud800, as JSON may
        data = json.loads(text)
        data["sha256"] = saved_module._digest(data) if content == "params=5" else "0" * 64
        content = json.dumps(data)
    saved.write_text(content, encoding="utf-8")
    analytics_emulator.clear_requests()
    assert manage.main(["apply", "--plan", str(saved), "--digest", "a" * 64]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.startswith(f"manage apply --plan {saved}: {why}"), out
    assert analytics_emulator.requests == []
    with pytest.raises(SavedPlanError, match=r"^apply: " + re.escape(why)):
        apply_saved_deliveries(hook, json.loads(saved.read_text()), "apply")


@pytest.mark.parametrize("endpoint", [f"hooks.example.com/services/T000/B000/{TOKEN}", f"'  {ENDPOINT}'"],
                         ids=["no-scheme", "leading-blanks"])
def test_a_webhook_token_is_masked_without_a_scheme_or_behind_blanks(tmp_path, hook, capsys, endpoint) -> None:
    """Second attack on issue 44: an endpoint written without ``https://``, or after blanks, was shown
    whole in the rows, the saved plan's ``touched`` and an update's row: only values that began with
    a scheme were masked. An address field is masked whatever its form."""
    files, saved = tmp_path / "deliveries", tmp_path / "plan.json"
    write(files, "hooks.yml", WEBHOOK.replace(ENDPOINT, endpoint))
    assert manage.main(["apply", str(files), "--scope", "sales"]) == 0
    assert TOKEN not in capsys.readouterr().out  # the create's row
    write(files, "hooks.yml", WEBHOOK.replace(ENDPOINT, endpoint).replace('"0 9 * * *"', '"0 10 * * *"'))
    printed, _ = plan_to(files, saved, capsys)
    plan = json.loads(saved.read_text())
    assert TOKEN not in printed and TOKEN not in json.dumps(plan["touched"]) and TOKEN not in json.dumps(
        [{k: v for k, v in c.items() if k != "write"} for c in plan["changes"]])
    assert TOKEN in json.dumps(plan["changes"][0]["write"])  # what the apply sends
    write(files, "hooks.yml", WEBHOOK.replace(ENDPOINT, endpoint.replace(TOKEN, "r0tatedT0ken77")))
    assert manage.main(["plan", str(files), "--scope", "sales"]) == 0
    printed = capsys.readouterr().out
    assert "(differs in a masked part)" in printed
    assert TOKEN not in printed and "r0tatedT0ken77" not in printed


def test_a_url_is_masked_with_backslashes_a_token_in_its_host_or_a_user_in_any_field() -> None:
    """Third attack on issue 44: a backslash path (``https://host\\services\\TOKEN``) and a token in the
    host were shown whole, and so was an SFTP ``file_path`` with a user and password in it."""
    from analytics_provider.deliveries.shown import destination, masked_fields

    assert masked("https://hooks.example.com\\services\\bsS3cret555xyz") == "https://hooks.example.com/services/***"
    assert masked_fields("hostS3cret444qq.hooks.example.com/in", "endpoint") == "***.hooks.example.com/in"
    assert masked("https://hostS3cret444qq.hooks.example.com/in") == "https://***.hooks.example.com/in"
    # sixth attack: a registered domain that looks like a token is where the write goes: always shown
    assert masked("https://acmehooks2024.com/ingest") == "https://acmehooks2024.com/ingest"
    assert masked("https://stealdata9999.com/ingest") != masked("https://acmehooks2024.com/ingest")
    assert destination({"type": "SftpDest", "data_source_id": 3, "file_path": "sftp://ops:PW9secret@files.example.com/"
                        "out/daily.csv"}) == "SFTP data source 3, sftp://***@files.example.com/out/daily.csv"
    assert masked_fields({"file_path": "/out/daily.csv", "note": "see sftp://ops:PW9secret@h.example.com/x"}) == {
        "file_path": "/out/daily.csv", "note": "see sftp://***@h.example.com/x"}
    assert masked_fields({"url": "hooks.example.com/services/MAPs3cret777abc"}, "endpoint") == {
        "url": "hooks.example.com/services/***"}  # an endpoint given as a mapping (DL133 at check)


def test_a_plan_file_with_a_key_given_twice_is_refused(tmp_path) -> None:
    """Sixth attack on issue 44: a second "recipients" 400 spaces to the right of the first was read (JSON's
    last key wins) and applied; the digest, computed on what was read, matched."""
    from analytics_provider.plans.saved import read_file

    path = tmp_path / "plan.json"
    path.write_text('{"format": 1, "changes": [{"write": {"fields": {"dest": {"recipients": ["boss@example.com"],'
                    + " " * 400 + '"recipients": ["boss@attacker.example"]}}}}]}', encoding="utf-8")
    with pytest.raises(SavedPlanError, match=r"plan\.json: cannot be read as a saved plan: the key 'recipients' is "
                                             r"given twice in one object"):
        read_file(path)
    path.write_text('{"format": 1, "a": {"recipients": 1}, "b": {"recipients": 2}}', encoding="utf-8")
    assert read_file(path)["b"] == {"recipients": 2}  # one key in each of two objects: fine


def test_the_cli_plan_shows_every_field_a_create_sends(tmp_path, capsys, analytics_emulator,
                                                       analytics_connection) -> None:
    """Sixth attack on issue 44: an alert's conditions and a webhook's headers were left out of what
    `manage plan` printed: two plans that send different things printed the same."""
    files = tmp_path / "deliveries"
    write(files, "hooks.yml", WEBHOOK + "    conditions: [{field: revenue, op: '>', value: 1000}]\n")
    assert manage.main(["plan", str(files), "--scope", "sales"]) == 0
    printed = capsys.readouterr().out
    assert "viz_conditions=" in printed and '"op": ">"' in printed and TOKEN not in printed
