"""What a data schedule's or data alert's destination needs: each type and the fields it requires
(the vendor's schemas of each destination). Read by the emulator and by the delivery files' check."""

from __future__ import annotations

SCHEDULE_DESTS: dict[str, tuple[str, ...]] = {
    "EmailDest": ("recipients",), "EmailSubscriptionDest": (), "SftpDest": ("data_source_id", "file_path"),
    "SlackDest": ("slack_channels",), "GsheetDest": ("sheet_url", "sheet_title"),
    "Adls2Dest": (),  # Azure Blob storage: the API document lists it and shows none of its options
}
ALERT_DESTS: dict[str, tuple[str, ...]] = {
    "EmailDest": ("recipients",), "SlackDest": ("slack_channels",), "WebhookDest": ("endpoint",),
}
ATTACHMENT_FORMATS = ("csv", "xlsx", "excel", "pdf", "png", "excel_dashboard", "csv_formatted_data")
