"""The hook is written by resource: each resource of the vendor's document (its tag: Users,
Groups, Data Schedules...) in one module of ``hooks/resources``, and no query is built from
``locals()`` (a method's options are named where they are sent)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from vendor_facts import vendor_document

from analytics_provider.api.operations import OPERATIONS
from analytics_provider.hooks import analytics
from analytics_provider.hooks.analytics import AnalyticsHook
from analytics_provider.hooks.client import AnalyticsClientHook

RESOURCES = "analytics_provider.hooks.resources."


def test_each_resource_is_written_in_one_module() -> None:
    tags = {(method.upper(), path): op["tags"][0] for path, item in vendor_document()["paths"].items()
            for method, op in item.items() if method in ("get", "post", "put", "delete")}
    modules: dict[str, set[str]] = {}
    for name, op in OPERATIONS.items():
        if name in vars(AnalyticsClientHook):
            continue  # the client's own machinery: download_export follows its redirect
        module = getattr(AnalyticsHook, name).__module__
        assert module.startswith(RESOURCES), f"{name} is written in {module}"
        modules.setdefault(tags[(op.method, op.path)], set()).add(module.removeprefix(RESOURCES))
    assert {tag: found for tag, found in modules.items() if len(found) > 1} == {}
    assert len(modules) >= 20  # the walk saw the vendor's resources


def test_no_query_is_built_from_locals() -> None:
    files = [Path(inspect.getfile(analytics)), *Path(inspect.getfile(analytics)).parent.glob("resources/*.py")]
    calls = [f"{path.name}:{node.lineno}" for path in files for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "locals"]
    assert calls == [] and len(files) > 1
