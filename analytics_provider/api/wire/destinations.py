"""What a data schedule's or data alert's destination needs: each type and the fields it requires
(the vendor's schemas of each destination). Read by the emulator and by the delivery files' check."""

from __future__ import annotations

from typing import Any

SCHEDULE_DESTS: dict[str, tuple[str, ...]] = {
    "EmailDest": ("recipients",), "EmailSubscriptionDest": (), "SftpDest": ("data_source_id", "file_path"),
    "SlackDest": ("slack_channels",), "GsheetDest": ("sheet_url", "sheet_title"),
    "Adls2Dest": (),  # Azure Blob storage: the API document lists it and shows none of its options
}
ALERT_DESTS: dict[str, tuple[str, ...]] = {
    "EmailDest": ("recipients",), "SlackDest": ("slack_channels",), "WebhookDest": ("endpoint",),
}
ATTACHMENT_FORMATS = ("csv", "xlsx", "excel", "pdf", "png", "excel_dashboard", "csv_formatted_data")
DATA_FORMATS = ("csv", "xlsx")  # an SFTP destination's file format
SFTP_SEPARATORS = (",", "|", "\t", "^", ";")


def dest_value_problems(dest: dict[str, Any]) -> list[tuple[tuple[str, ...], str, tuple[str, ...]]]:
    """What is wrong with the values of a destination's fields that take a given set or shape (the
    vendor's schemas): each as (the field's path under ``dest``, what it must be, the allowed values
    or ``()``). The service refuses such a destination (422); a delivery file's check says it first."""
    problems: list[tuple[tuple[str, ...], str, tuple[str, ...]]] = []
    for name in ("slack_channels", "selected_values"):
        if dest.get(name) is not None and not isinstance(dest[name], list):
            problems.append(((name,), "must be an array", ()))
    channels = dest.get("slack_channels")
    if isinstance(channels, list) and not all(isinstance(c, dict) for c in channels):
        problems.append((("slack_channels",), "must be an array of objects (id, name)", ()))
    for name in ("title", "message", "file_path", "endpoint", "sheet_url", "sheet_title"):
        if dest.get(name) is not None and not isinstance(dest[name], str):
            problems.append(((name,), "must be a string", ()))
    options = dest.get("options")
    if options is not None and not isinstance(options, dict):
        problems.append((("options",), "must be an object", ()))
        options = None
    formats = (options or {}).get("attachment_formats")
    if formats is not None and (not isinstance(formats, list) or not set(map(str, formats)) <= set(ATTACHMENT_FORMATS)):
        problems.append((("options", "attachment_formats"), f"must be a subset of {', '.join(ATTACHMENT_FORMATS)}",
                         ATTACHMENT_FORMATS))
    if dest.get("format") is not None and dest["format"] not in DATA_FORMATS:
        problems.append((("format",), f"must be one of {', '.join(DATA_FORMATS)}", DATA_FORMATS))
    if dest.get("separator") is not None and dest["separator"] not in SFTP_SEPARATORS:
        problems.append((("separator",), "must be one of , | tab ^ ;", SFTP_SEPARATORS))
    return problems
