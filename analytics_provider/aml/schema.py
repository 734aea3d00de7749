"""The Vega-Lite JSON-schema check of a filled @vgl template (CC420), for the version it declares.

The schema of the template's Vega-Lite major version (its ``$schema``, else
:data:`DEFAULT_VEGA_LITE_MAJOR`) comes from a package that ships it (``altair`` ships
``vegalite/v<major>/schema/vega-lite-schema.json``) or from the file named by ``AML_VEGA_LITE_SCHEMA``.
When no schema of that version is installed the check is skipped: a newer schema would reject
what that version's compiler accepts.

The check does not contradict the compiler: ``null`` (which unsets a property, an inherited channel
included) is accepted, and a property the schema does not list at that place is reported only when
it is no Vega-Lite property at all, a typo such as ``"typ"`` that the compiler would silently drop
(a real property in an unlisted place, such as ``tooltip`` on a boxplot mark, is the compiler's to
judge). jsonschema and each schema are loaded on first use, once.
"""

from __future__ import annotations

import difflib
import functools
import importlib.util
import json
import os
from pathlib import Path
from typing import Any

from analytics_provider.aml.diagnostics import Reporter
from analytics_provider.aml.template import JArray, JNode, JObject, Template

SCHEMA_ENV = "AML_VEGA_LITE_SCHEMA"
SCHEMA_PACKAGE = "altair"
DEFAULT_VEGA_LITE_MAJOR = 5
"""The Vega-Lite major version of a template without ``$schema`` (the service's Vega-Lite 5)."""
SERVICE_KEYS = ("serviceConfig", "holisticsConfig")
_PREFERRED = ("additionalProperties", "enum", "const", "type", "required")


def major_of(tpl: Template) -> int:
    """The Vega-Lite major version a template declares, else the default."""
    version = tpl.engine.version
    return version[0] if version else DEFAULT_VEGA_LITE_MAJOR


def schema_path(major: int = DEFAULT_VEGA_LITE_MAJOR) -> Path | None:
    """Where the schema of a Vega-Lite major version is: the environment override, else the one
    altair ships for that version; None when neither is there."""
    override = os.environ.get(SCHEMA_ENV)
    if override:
        return Path(override) if Path(override).is_file() else None
    spec = importlib.util.find_spec(SCHEMA_PACKAGE)  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(next(iter(spec.submodule_search_locations)))
    path = root / "vegalite" / f"v{major}" / "schema" / "vega-lite-schema.json"
    return path if path.is_file() else None


@functools.cache
def _loaded(path: str) -> tuple[Any, frozenset[str]] | None:
    try:
        import jsonschema
    except ImportError:
        return None
    try:
        schema = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    names = frozenset(name for definition in schema.get("definitions", {}).values() if isinstance(definition, dict)
                      for name in definition.get("properties", {}))
    return jsonschema.validators.validator_for(schema)(schema), names


def validator(major: int = DEFAULT_VEGA_LITE_MAJOR) -> tuple[Any, frozenset[str]] | None:
    """The compiled validator of a Vega-Lite major version and every property name its schema
    knows; None when that schema or jsonschema is not installed."""
    path = schema_path(major)
    return _loaded(str(path)) if path is not None else None


def clear_cache() -> None:
    """Forget the loaded schemas (for tests that change the environment)."""
    _loaded.cache_clear()


def available(major: int = DEFAULT_VEGA_LITE_MAJOR) -> bool:
    """Whether the schema check can run for a Vega-Lite major version."""
    return validator(major) is not None


def check_schema(tpl: Template, data: Any, rep: Reporter) -> None:
    """Report the most specific way a filled Vega-Lite template breaks its version's schema (CC420)."""
    if tpl.engine.kind != "vega-lite" or not isinstance(data, dict):
        return
    loaded = validator(major_of(tpl))
    if loaded is None:
        return
    check, names = loaded
    spec = {k: v for k, v in data.items() if k not in SERVICE_KEYS}
    try:
        leaves = [leaf for error in check.iter_errors(spec) for leaf in _leaves(error, names)]
    except Exception:  # a schema jsonschema cannot apply must not stop the lint: skip the check
        return
    if not leaves:
        return
    leaf = max(leaves, key=lambda e: (len(e.absolute_path), -_rank(e)))
    path = list(leaf.absolute_path)
    node = _locate(tpl.root, path)
    offset, message = _describe(leaf, node)
    where = "/".join(str(p) for p in path) or "the top level"
    rep.add("CC420", offset if offset is not None else node.offset,
            f"Vega-Lite {major_of(tpl)} schema, at {where}: {message}")


def _rank(error: Any) -> int:
    return _PREFERRED.index(error.validator) if error.validator in _PREFERRED else len(_PREFERRED)


def _from_placeholder(error: Any) -> bool:
    """An error about a value filled in for a placeholder, unknown until run time."""
    return isinstance(error.instance, str) and "@{" in error.instance


def _accepted(error: Any, names: frozenset[str]) -> bool:
    """An error the compiler would not make: a placeholder's value (unknown until run time), a null
    (Vega-Lite reads it as unset), or a real Vega-Lite property in a place the schema does not list."""
    if _from_placeholder(error) or error.instance is None:
        return True
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        listed = error.schema.get("properties", {}) if isinstance(error.schema, dict) else {}
        return all(key in names for key in error.instance if key not in listed)
    return False


def _leaves(error: Any, names: frozenset[str]) -> list[Any]:
    """The errors of the anyOf/oneOf branch that came closest to matching, without those
    :func:`_accepted` lets through; [] when some branch failed on those alone."""
    return _branch(error, names)[1]


def _branch(error: Any, names: frozenset[str]) -> tuple[list[Any], list[Any]]:
    """(every leaf error, the leaves not accepted) of the closest branch. The branch is chosen on
    every leaf, so that accepting a property does not make a wrong branch look closer."""
    if not error.context:
        return [error], [] if _accepted(error, names) else [error]
    branches: dict[Any, list[Any]] = {}
    for sub in error.context:
        branches.setdefault(sub.relative_schema_path[0] if sub.relative_schema_path else 0, []).append(sub)
    best: tuple[tuple[int, int, int], list[Any], list[Any]] | None = None
    for subs in branches.values():
        found = [_branch(sub, names) for sub in subs]
        leaves = [leaf for every, _ in found for leaf in every]
        kept = [leaf for _, some in found for leaf in some]
        if not kept:
            return leaves, []
        # the branch that matched deepest before failing, then the one with the fewest failures
        score = (-min(len(leaf.absolute_path) for leaf in leaves), len(leaves), min(map(_rank, leaves)))
        if best is None or score < best[0]:
            best = (score, leaves, kept)
    return (best[1], best[2]) if best else ([error], [error])


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
