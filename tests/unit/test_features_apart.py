"""The features that make the service follow code or data (access, deliveries) share plans and
applies through ``analytics_provider.plans`` and never import each other; ``plans`` imports no
feature. Every import is read (module level, inside functions, under ``TYPE_CHECKING``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import analytics_provider

PACKAGE = Path(analytics_provider.__file__).parent
FEATURES = ("access", "deliveries")


def imported(package: str) -> set[tuple[str, str]]:
    """(module file, module imported) for each import of the package's modules."""
    found = set()
    for path in sorted((PACKAGE / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {(path.name, alias.name) for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found |= {(path.name, node.module)} | {(path.name, f"{node.module}.{a.name}") for a in node.names}
    return found


def reaches(imports: set[tuple[str, str]], package: str) -> list[str]:
    name = f"analytics_provider.{package}"
    return sorted(f"{where} imports {what}" for where, what in imports if what == name or what.startswith(f"{name}."))


@pytest.mark.parametrize("feature", FEATURES)
def test_a_feature_imports_no_other_feature(feature: str) -> None:
    imports = imported(feature)
    assert imports, f"no import read in {feature}/"  # the walk found the package
    assert [line for other in FEATURES if other != feature for line in reaches(imports, other)] == []


def test_plans_import_no_feature() -> None:
    imports = imported("plans")
    assert reaches(imports, "api")  # the walk reads the package's imports
    assert [line for feature in FEATURES for line in reaches(imports, feature)] == []


def test_the_features_plan_and_apply_through_plans() -> None:
    for feature in FEATURES:
        assert reaches(imported(feature), "plans"), feature
