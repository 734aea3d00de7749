"""What people read of a delivery's secrets in shapes a fourth attack on issue 44 found shown whole: a
path token of letters alone, a segment fully percent-encoded, ``custom_headers`` and a singular
``header``, fields named ``pass``, ``hmac``, ``bearer``, ``sig``, ``passcode``; ordinary words stay."""

from __future__ import annotations

import json

from analytics_provider.deliveries.shown import masked, masked_fields, secret_name


def test_letters_only_and_percent_encoded_path_tokens_are_masked_and_words_are_not() -> None:
    assert masked("https://hooks.example.com/hook/SuperSecretPassword") == "https://hooks.example.com/hook/***"
    assert masked("https://hooks.example.com/hook/%73%65%63%72%65%74") == "https://hooks.example.com/hook/***"
    for ordinary in ("https://hooks.example.com/services/IncomingWebhook/x",
                     "https://hooks.example.com/api/v2/notifications/alerts", "https://hooks.example.com/a%20b"):
        assert masked(ordinary) == ordinary


def test_headers_of_any_name_and_secret_named_fields_are_masked() -> None:
    dest = {"type": "WebhookDest", "endpoint": "https://hooks.example.com/x",
            "custom_headers": {"X-Session": "sess-secret-2"}, "header": "Bearer abc-secret-3",
            "options": {"pass": "pw-secret-4", "hmac": "hmac-secret-5", "bearer": "b-secret-6",
                        "passcode": "pc-secret-7", "sig": "sig-secret-8", "signing_secret": "s-secret-9"}}
    shown = json.dumps(masked_fields(dest, "dest"))
    assert "secret-" not in shown, shown
    assert '"type": "WebhookDest"' in shown and '"X-Session": "***"' in shown
    for ordinary in ("title", "passage", "compass", "signal", "design", "bypass", "key", "recipients",
                     "include_header", "header_row"):
        assert not secret_name(ordinary), ordinary
