"""The optional Vega-Lite JSON-schema check of a filled @vgl template.

The schema file comes from an installed package that ships it (``altair`` ships
``vega-lite-schema.json``) or from the file named by ``AML_VEGA_LITE_SCHEMA``. jsonschema and the
schema are loaded on first use and only once; when either is missing the check is skipped.
"""

from __future__ import annotations

import difflib
import functools
import importlib.util
import json
import os
import re
from pathlib import Path
from typing import Any

from analytics_provider.aml.diagnostics import Reporter
from analytics_provider.aml.template import JArray, JNode, JObject, Template

SCHEMA_ENV = "AML_VEGA_LITE_SCHEMA"
SCHEMA_PACKAGE = "altair"
_SERVICE_KEYS = ("serviceConfig", "holisticsConfig")
_PREFERRED = ("additionalProperties", "enum", "const", "type", "required")


def schema_path() -> Path | None:
    """Where the Vega-Lite schema is: the environment override, else the newest one altair ships."""
    override = os.environ.get(SCHEMA_ENV)
    if override:
        return Path(override) if Path(override).is_file() else None
    spec = importlib.util.find_spec(SCHEMA_PACKAGE)  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(next(iter(spec.submodule_search_locations)))
    found = sorted(root.glob("vegalite/v*/schema/vega-lite-schema.json"),
                   key=lambda p: int(re.sub(r"\D", "", p.parent.parent.name) or 0))
    return found[-1] if found else None


@functools.cache
def validator() -> Any | None:
    """The compiled Vega-Lite validator, or None when the schema or jsonschema is not installed."""
    path = schema_path()
    if path is None:
        return None
    try:
        import jsonschema
    except ImportError:
        return None
    try:
        schema = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return jsonschema.validators.validator_for(schema)(schema)


def available() -> bool:
    """Whether the schema check can run."""
    return validator() is not None


def check_schema(tpl: Template, data: Any, rep: Reporter) -> None:
    """Report the most specific way a filled Vega-Lite template breaks the schema (CC420)."""
    if tpl.tag != "vgl" or not isinstance(data, dict):
        return
    check = validator()
    if check is None:
        return
    spec = {k: v for k, v in data.items() if k not in _SERVICE_KEYS}
    try:
        leaves = [leaf for error in check.iter_errors(spec) for leaf in _leaves(error)]
    except Exception:  # a schema jsonschema cannot apply must not stop the lint: skip the check
        return
    if not leaves:
        return
    leaf = max(leaves, key=lambda e: (len(e.absolute_path), -_rank(e)))
    path = list(leaf.absolute_path)
    node = _locate(tpl.root, path)
    offset, message = _describe(leaf, node)
    where = "/".join(str(p) for p in path) or "the top level"
    rep.add("CC420", offset if offset is not None else node.offset, f"Vega-Lite schema, at {where}: {message}")


def _rank(error: Any) -> int:
    return _PREFERRED.index(error.validator) if error.validator in _PREFERRED else len(_PREFERRED)


def _from_placeholder(error: Any) -> bool:
    """An error about a value filled in for a placeholder, unknown until run time."""
    return isinstance(error.instance, str) and "@{" in error.instance


def _leaves(error: Any) -> list[Any]:
    """The errors of the anyOf/oneOf branch that came closest to matching; [] when a branch failed
    only on placeholder values (taken as valid, those values being unknown until run time)."""
    if not error.context:
        return [] if _from_placeholder(error) else [error]
    branches: dict[Any, list[Any]] = {}
    for sub in error.context:
        branches.setdefault(sub.relative_schema_path[0] if sub.relative_schema_path else 0, []).append(sub)
    best: tuple[tuple[int, int, int], list[Any]] | None = None
    for subs in branches.values():
        leaves = [leaf for sub in subs for leaf in _leaves(sub)]
        if not leaves:
            return []
        # the branch that matched deepest before failing, then the one with the fewest failures
        score = (-min(len(leaf.absolute_path) for leaf in leaves), len(leaves), min(map(_rank, leaves)))
        if best is None or score < best[0]:
            best = (score, leaves)
    return best[1] if best else [error]


def _locate(root: JNode, path: list[Any]) -> JNode:
    node = root
    for step in path:
        child = None
        if isinstance(node, JObject) and isinstance(step, str):
            child = node.get(step)
        elif isinstance(node, JArray) and isinstance(step, int) and step < len(node.items):
            child = node.items[step]
        if child is None:
            break
        node = child
    return node


def _describe(error: Any, node: JNode) -> tuple[int | None, str]:
    schema = error.schema if isinstance(error.schema, dict) else {}
    known = sorted(schema.get("properties", {}))
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        extra = [k for k in error.instance if k not in schema.get("properties", {})]
        if extra:
            key = node.key_node(extra[0]) if isinstance(node, JObject) else None
            hint = _close(extra[0], known)
            return (key.offset if key else None), f"'{extra[0]}' is not a property here{hint}"
    if error.validator == "enum":
        choices = [str(c) for c in error.validator_value]
        shown = ", ".join(choices[:15]) + (", ..." if len(choices) > 15 else "")
        hint = _close(str(error.instance), choices)
        return None, f"{json.dumps(error.instance)} is not allowed here{hint}; expected one of: {shown}"
    message = error.message if len(error.message) <= 160 else error.message[:157] + "..."
    return None, message


def _close(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.7)
    return f" (did you mean '{close[0]}'?)" if close else ""
