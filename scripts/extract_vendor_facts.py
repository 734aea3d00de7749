"""Extract the facts of the vendor's OpenAPI document that the tests use into ``tests/vendor_facts/``.

The vendor's document is not part of this repository, so a clone anywhere could not check the hook
and the emulator against it. This keeps its structure (paths, methods, operation ids, parameters,
request bodies, schemas with their types, enums, required fields and limits, statuses, security
scheme) and drops its prose (descriptions, summaries, examples, contact, tag texts), then records
the source's SHA-256 so that a changed document is noticed::

    python scripts/extract_vendor_facts.py PATH/TO/openapi-v2.yml          # write the facts
    python scripts/extract_vendor_facts.py PATH/TO/openapi-v2.yml --check  # exit 1 if out of date
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import yaml

FACTS = Path(__file__).resolve().parents[1] / "tests" / "vendor_facts" / "openapi-v2.facts.json"
PROSE = {"description", "summary"}  # dropped where they are text, not a property of that name
EXAMPLES = {"example", "examples", "x-faker"}
NAMED_MAPS = {"properties", "schemas", "parameters", "responses", "paths", "mapping", "securitySchemes"}


def strip(node: Any, parent: str = "") -> Any:
    """``node`` without prose; the keys of a map of names (``properties``...) are never dropped."""
    if isinstance(node, list):
        return [strip(item) for item in node]
    if not isinstance(node, dict):
        return node
    kept: dict[str, Any] = {}
    for key, value in node.items():
        if parent not in NAMED_MAPS and (key in EXAMPLES or (key in PROSE and isinstance(value, str))):
            continue
        kept[key] = strip(value, key)
    return kept


def _responses(document: dict[str, Any]) -> list[dict[str, Any]]:
    found = [response for item in document["paths"].values() for op in item.values() if isinstance(op, dict)
             for response in op.get("responses", {}).values() if "$ref" not in response]
    return found + list(document.get("components", {}).get("responses", {}).values())


def facts(source: Path) -> dict[str, Any]:
    raw = source.read_bytes()
    document = yaml.safe_load(raw)
    document["info"] = {"title": document["info"]["title"], "version": document["info"]["version"]}
    document["tags"] = [{"name": tag["name"]} for tag in document.get("tags", [])]
    document["servers"] = [{"url": server["url"]} for server in document.get("servers", [])]
    document.get("components", {}).pop("examples", None)
    stripped = strip(document)
    for response in _responses(stripped):  # OpenAPI requires a response's description: an empty one
        response.setdefault("description", "")
    stripped["x-extracted-from"] = {"file": source.name, "sha256": hashlib.sha256(raw).hexdigest()}
    return stripped


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, sort_keys=False, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="the vendor's openapi-v2.yml")
    parser.add_argument("--check", action="store_true", help="only check that the committed facts are current")
    args = parser.parse_args(argv)
    text = render(facts(args.source))
    if args.check:
        current = FACTS.exists() and FACTS.read_text(encoding="utf-8") == text
        print(f"{FACTS.name}: {'current' if current else 'OUT OF DATE: run without --check'}")
        return 0 if current else 1
    FACTS.write_text(text, encoding="utf-8")
    print(f"wrote {FACTS} ({len(text)} characters) from {args.source.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
