"""An operator is one place: everything that lists operators is checked against the classes."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

from airflow.providers.common.compat.sdk import BaseOperator

import analytics_provider
import analytics_provider.operators as operators_package
from analytics_provider import lineage
from analytics_provider.get_provider_info import get_provider_info
from analytics_provider.operators.as_code import AsCodeOperator
from analytics_provider.operators.base import AnalyticsJobOperator

PACKAGE = Path(analytics_provider.__file__).resolve().parent
DOCS_INDEX = (PACKAGE.parent / "docs" / "operators" / "index.rst").read_text(encoding="utf-8")


BASES = (AnalyticsJobOperator, AsCodeOperator)
"""Base classes: documented in the pages of the operators that derive from them."""


def operator_classes() -> dict[str, type]:
    """Every public operator defined in ``analytics_provider.operators``'s modules: the job
    operators and the others (the access syncs)."""
    found: dict[str, type] = {}
    for module_info in pkgutil.iter_modules(operators_package.__path__):
        module = importlib.import_module(f"{operators_package.__name__}.{module_info.name}")
        for name, value in vars(module).items():
            if (inspect.isclass(value) and issubclass(value, BaseOperator) and value not in BASES
                    and value.__module__ == module.__name__ and not name.startswith("_")):
                found[name] = value
    return found


OPERATORS = operator_classes()


def test_every_operator_is_importable_from_the_package_registered_and_in_the_docs_index() -> None:
    assert len(OPERATORS) >= 9 and "AnalyticsSyncUserAttributesOperator" in OPERATORS
    registered = {m for entry in get_provider_info()["operators"] for m in entry["python-modules"]}
    for name, cls in OPERATORS.items():
        assert getattr(operators_package, name) is cls, f"{name} is missing from operators/__init__._WHERE"
        assert cls.__module__ in registered, f"{cls.__module__} is missing from get_provider_info's operators"
        assert f":doc:`{name} <" in DOCS_INDEX, f"{name} is missing from docs/operators/index.rst"


def test_every_operator_declares_its_lineage() -> None:
    for name, cls in OPERATORS.items():
        assert "describe_lineage" in vars(cls) and callable(cls.describe_lineage), f"{name} declares no lineage"
        named = getattr(cls.describe_lineage, "name", None)  # a LineageFunction: imported on its first call
        if named is not None:
            assert callable(getattr(lineage, named, None)), f"{name}: analytics_provider.lineage has no {named}"


def test_the_layers_below_the_operators_never_import_them() -> None:
    # lineage, hooks, api, triggers... are below the operators and the sensor: no import cycle through them
    upper = ("analytics_provider.operators", "analytics_provider.sensors")
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE).parts
        if relative[0] in ("operators", "sensors"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else (
                [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            offenders += [f"{'/'.join(relative)} imports {n}" for n in names if n.startswith(upper)]
    assert offenders == []


def test_the_sensor_borrows_nothing_from_the_operators() -> None:
    source = (PACKAGE / "sensors" / "analytics.py").read_text(encoding="utf-8")
    assert "analytics_provider.operators" not in source
