"""The house rules of ``docs/design.rst`` ("Architecture"), read from the source: which room of the
package may import which, and no import cycle. Every import counts: at module level, under
``TYPE_CHECKING`` and inside functions (an import a function makes later is a dependency all
the same, and a cycle of them is one a reader must untangle)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "analytics_provider"

GROUND = ("analytics_provider", "analytics_provider.get_provider_info", "analytics_provider.exceptions",
          "analytics_provider.locations", "analytics_provider.file_modes", "analytics_provider.version_compat")
API = ("analytics_provider.api",)
WIRE = ("analytics_provider.api.wire",)
CALL = ("analytics_provider.api.call",)
HOOKS = ("analytics_provider.hooks",)
PLANS = ("analytics_provider.plans",)
FEATURES = ("analytics_provider.access", "analytics_provider.deliveries", "analytics_provider.aml",
            "analytics_provider.impact")
EMULATOR = ("analytics_provider.testing.emulator",)
EMULATOR_MAY_USE = ("analytics_provider.api.wire.operations", "analytics_provider.api.wire.choices",
                    "analytics_provider.api.wire.conditions", "analytics_provider.api.wire.queries",
                    "analytics_provider.api.wire.destinations", "analytics_provider.api.jobs.status")
"""The service's own vocabulary (the operations table, the values of its parameters, what a job
status is); none of a client's machinery."""

FLOORS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    # (room, its modules, what it may import besides itself)
    ("ground", GROUND, GROUND),
    ("api", API, GROUND),
    ("api/wire", WIRE, GROUND),
    ("api/call", CALL, GROUND + WIRE),
    ("hooks", HOOKS, GROUND + API),
    ("plans", PLANS, GROUND + API + HOOKS),
    ("emulator", EMULATOR, EMULATOR_MAY_USE),
)

KNOWN_DEBTS = {
    # (importer, imported): an import against the floors, each to be paid and struck off
    ("analytics_provider.deliveries.check", "analytics_provider.aml.diagnostics"),  # a diagnostic's shape
    # the hook's find_impacted runs the impact feature's walk (its rules belong below the hook, or
    # the method in impact/ with the hook as its argument)
    ("analytics_provider.hooks.impact_reads", "analytics_provider.impact.graph"),
    ("analytics_provider.hooks.impact_reads", "analytics_provider.impact.tables"),
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> Iterator[str]:
    """Every module of ours ``path`` imports, wherever the import is (``from x import y``: ``x.y``
    when that is a module of ours, else ``x``)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name.startswith("analytics_provider"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            if not source.startswith("analytics_provider"):
                continue
            for alias in node.names:
                yield f"{source}.{alias.name}" if f"{source}.{alias.name}" in MODULES else source


MODULES = {module_name(path) for path in PACKAGE.rglob("*.py")}
GRAPH = {module_name(path): sorted(set(imports_of(path)) - {module_name(path)}) for path in PACKAGE.rglob("*.py")}


def within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == prefix or (module.startswith(prefix + ".") and prefix != "analytics_provider")
               for prefix in prefixes)


def room_of(module: str) -> str:
    if within(module, EMULATOR):
        return module
    if within(module, FEATURES):
        return ".".join(module.split(".")[:2])
    return module


def test_the_import_graph_sees_the_package() -> None:
    assert "analytics_provider.hooks.async_client" in GRAPH["analytics_provider.triggers.analytics"]
    assert "analytics_provider.hooks.analytics" in GRAPH["analytics_provider.job_tasks"]  # under TYPE_CHECKING
    assert len(GRAPH) > 100


@pytest.mark.parametrize(("room", "modules", "allowed"), FLOORS, ids=[floor[0] for floor in FLOORS])
def test_each_floor_imports_only_the_floors_below(room: str, modules: tuple[str, ...], allowed: tuple[str, ...]
                                                  ) -> None:
    wrong = sorted(
        f"{importer} imports {imported}"
        for importer, targets in GRAPH.items() if within(importer, modules)
        for imported in targets
        if not within(imported, modules) and not within(imported, allowed) and (importer, imported) not in KNOWN_DEBTS
    )
    assert not wrong, f"{room} may import only {', '.join(allowed)}:\n" + "\n".join(wrong)


def test_features_import_no_other_feature() -> None:
    wrong = {
        (importer, imported)
        for importer, targets in GRAPH.items() if within(importer, FEATURES)
        for imported in targets
        if within(imported, FEATURES) and room_of(imported) != room_of(importer)
    }
    assert wrong <= KNOWN_DEBTS, "features import one another:\n" + "\n".join(sorted(map(str, wrong - KNOWN_DEBTS)))


def test_every_known_debt_is_still_owed() -> None:
    edges = {(importer, imported) for importer, targets in GRAPH.items() for imported in targets}
    assert edges >= KNOWN_DEBTS, f"paid, strike them from KNOWN_DEBTS: {sorted(KNOWN_DEBTS - edges)}"


def test_features_and_below_never_import_the_airflow_face() -> None:
    face = ("analytics_provider.operators", "analytics_provider.sensors", "analytics_provider.triggers",
            "analytics_provider.manage", "analytics_provider.lineage", "analytics_provider.testing")
    wrong = sorted(
        f"{importer} imports {imported}"
        for importer, targets in GRAPH.items() if within(importer, GROUND + API + HOOKS + PLANS + FEATURES)
        for imported in targets if within(imported, face)
    )
    assert not wrong, "\n".join(wrong)


def test_no_import_cycle() -> None:
    """Tarjan's strongly connected components over every import; a component of more than one
    module is a cycle (a package's ``__init__`` importing its own modules lazily included)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in GRAPH.get(module, ()):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(GRAPH):
        if module not in index:
            visit(module)
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


@pytest.mark.parametrize(("old", "new", "name"), [
    ("analytics_provider.api.retry", "analytics_provider.api.call.retry", "RetryPolicy"),
    ("analytics_provider.api.settings", "analytics_provider.api.call.settings", "ConnectionConfigError"),
])
def test_the_api_paths_users_wrote_still_import_and_say_where_to(old: str, new: str, name: str) -> None:
    """What the docs named before the API's modules were grouped: a retry policy for the hook, the
    error of a connection that cannot work."""
    import importlib
    import sys

    from airflow.exceptions import AirflowProviderDeprecationWarning

    sys.modules.pop(old, None)
    with pytest.warns(AirflowProviderDeprecationWarning, match=new.replace(".", r"\.")):
        module = importlib.import_module(old)
    assert getattr(module, name) is getattr(importlib.import_module(new), name)
