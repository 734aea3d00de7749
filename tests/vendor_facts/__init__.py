"""The facts of the vendor's OpenAPI document, committed so that every clone checks against them.

``openapi-v2.facts.json`` is the vendor's ``openapi-v2.yml`` without its prose, made by
``scripts/extract_vendor_facts.py`` (which records the source's SHA-256 under
``x-extracted-from``). It is still an OpenAPI 3 document: the judges read it as one.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

FACTS = Path(__file__).with_name("openapi-v2.facts.json")


@cache
def _document() -> dict[str, Any]:
    return json.loads(FACTS.read_text(encoding="utf-8"))


def vendor_document() -> dict[str, Any]:
    """A fresh copy of the document (callers patch it)."""
    return copy.deepcopy(_document())


def source_checksum() -> str:
    """The SHA-256 of the vendor document these facts were extracted from."""
    return str(_document()["x-extracted-from"]["sha256"])
