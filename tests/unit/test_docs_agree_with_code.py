"""What the README and the docs say about defaults (extras, intervals, timeouts, versions) is read
from the code here, so that a changed default cannot leave a page behind."""

from __future__ import annotations

import inspect
import os
import re
import sys
from importlib.metadata import metadata
from pathlib import Path
from typing import Any

from analytics_provider.api.call.settings import DEFAULT_CONNECT_TIMEOUT, DEFAULT_READ_TIMEOUT, DEFAULT_REGION
from analytics_provider.api.wire.choices import DEFAULT_MAX_OUTAGE
from analytics_provider.operators.base import AnalyticsJobOperator

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")
DOCS = {path.relative_to(REPO / "docs").as_posix(): path.read_text(encoding="utf-8")
        for path in (REPO / "docs").rglob("*.rst")}
sys.path.insert(0, str(REPO / "scripts"))
import envs  # noqa: E402  (scripts/ is not a package)


def _default(name: str) -> object:
    return inspect.signature(AnalyticsJobOperator.__init__).parameters[name].default


def test_the_extras_of_make_test_are_the_ones_the_readme_and_quickstart_name() -> None:
    extras = re.search(r"--extras (\S+)", (REPO / "Makefile").read_text(encoding="utf-8")).group(1)
    assert f"with its `{extras}` extras" in README
    assert f"with its ``{extras}`` extras" in DOCS["quickstart.rst"]


def test_the_operators_defaults_are_the_ones_the_operator_page_states() -> None:
    page = DOCS["operators/index.rst"]
    from analytics_provider.api.wire.choices import WAIT_BOUNDS

    most = {name: f"{bound:,g}: {said}" for name, (bound, said) in WAIT_BOUNDS.items()}
    assert f"``poll_interval`` (default {_default('poll_interval'):g} seconds; at most {most['poll_interval']})" in page
    assert f"``timeout`` (default {_default('timeout'):g} seconds; at most {most['timeout']})" in page
    assert f"``max_outage`` (default {DEFAULT_MAX_OUTAGE:g} seconds; at most {most['max_outage']})" in page
    assert f"``wait_for_completion`` (default {_default('wait_for_completion')})" in page


def test_the_connection_defaults_are_the_ones_the_connection_page_states() -> None:
    page = DOCS["connection.rst"]
    assert f"``extra.connect_timeout`` (default {DEFAULT_CONNECT_TIMEOUT:g} seconds)" in page
    assert f"``extra.timeout`` (default {DEFAULT_READ_TIMEOUT:g} seconds)" in page
    assert f"``{DEFAULT_REGION}`` when left empty" in DOCS["quickstart.rst"]


def test_the_supported_versions_are_the_matrixs() -> None:
    rows = re.findall(r"^\| (\d\.\d+(?:\.\d+)?[^|]*?) \| [^|]+ \| `constraints/airflow-([^`]+)\.txt`", README, re.M)
    assert sorted(version for _, version in rows) == sorted(envs.SUPPORTED)
    for version in envs.SUPPORTED:
        assert (REPO / "constraints" / f"airflow-{version}.txt").is_file()
    assert f"Airflow {envs.NEWEST}" in README  # make test's version



def test_the_readme_and_the_docs_name_the_vendor_of_the_api_document() -> None:
    from vendor_facts import vendor_document

    vendor = vendor_document()["info"]["title"].removesuffix(" API")  # the document's "Holistics API"
    first_paragraphs = README.split("\n\n")[1], DOCS["index.rst"].split("\n\n")[1]
    assert all(f"the public API v2 of {vendor}, the analytics service" in text for text in first_paragraphs)


def test_the_pythons_the_docs_name_are_the_readmes_table() -> None:
    released = [(airflow, int(low), int(high)) for airflow, low, high
                in re.findall(r"^\| (\d\.\d+)\.\d+ \| 3\.(\d+) to 3\.(\d+) \|", README, re.M)]
    lowest, highest = min(low for _, low, _ in released), max(high for _, _, high in released)
    capped = {airflow: high for airflow, _, high in released if high < highest}  # {"2.11": 12, "3.0": 12}
    assert len(set(capped.values())) == 1, capped  # the docs name one cap
    stated = f"Python 3.{lowest} to 3.{highest} (3.{max(capped.values())} at most on\nAirflow {' and '.join(capped)};"
    assert stated in DOCS["index.rst"]
    assert f"(Python 3.{lowest} to 3.{highest}, `make`)" in README


PUBLISHED_NOTE = "Once the package is published, what changes"  # docs/quickstart.rst, the one place that says so
NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty")


def _install_commands() -> list[tuple[str, str]]:
    """Every ``pip install`` command of the README and the docs, its continuation lines joined."""
    found = []
    for name, text in [("README.md", README), *DOCS.items()]:
        joined = re.sub(r"\\\n\s*", " ", text)
        for match in re.finditer(r"pip install[^\n`]*", joined):
            paragraph_start = joined.rfind("\n\n", 0, match.start())
            found.append((name, match.group(0), joined[paragraph_start:match.start()]))
    return [(name, command) for name, command, before in found if PUBLISHED_NOTE not in before]


def test_every_page_installs_the_package_as_the_readme_does_while_it_is_unpublished() -> None:
    from analytics_provider import __version__

    wheel = f"dist/airflow_provider_analytics-{__version__}-py3-none-any.whl"
    assert f"`make dist` writes\n`{wheel}`" in README
    extras = set(metadata("airflow-provider-analytics").get_all("Provides-Extra") or ())
    commands = _install_commands()
    assert len(commands) >= 8, commands  # the README's, the quick start's and the four pages' the issue named
    for page, command in commands:
        assert "airflow-provider-analytics" not in command, f"{page} installs the unpublished package: {command}"
        installs_us = re.search(r'(?:^| )(?:-e )?"?(\.|dist/\S+\.whl)(?:\[([\w,]+)\])?"?(?= |$)',
                                command.removeprefix("pip install"))
        if installs_us is None:
            continue  # a bare ``pip install`` in prose
        assert installs_us.group(1) in (".", wheel), f"{page}: {command}"
        named_extras = set((installs_us.group(2) or "").split(",")) - {""}
        assert named_extras <= extras, f"{page} names an unknown extra: {command}"
        constraints = re.search(r"-c constraints/airflow-([^ ]+)\.txt", command)
        assert constraints and constraints.group(1) in envs.SUPPORTED, f"{page} installs without constraints: {command}"
    assert sum(PUBLISHED_NOTE in text for text in [README, *DOCS.values()]) == 1
    assert PUBLISHED_NOTE in DOCS["quickstart.rst"]


def test_the_package_s_own_messages_do_not_install_it_by_its_unpublished_name() -> None:
    """A hint printed by the package or the docs' build (the chart compilers' extra) installs as the README does."""
    sources = [*(REPO / "analytics_provider").rglob("*.py"), *(REPO / "docs" / "_ext").glob("*.py")]
    named = [f"{path.relative_to(REPO)}:{number}" for path in sources
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(r"pip install\W+airflow-provider-analytics|airflow-provider-analytics\[", line)]
    assert named == []
    from analytics_provider.aml import compiler

    assert '"apache-airflow==<your Airflow version>" ".[charts]" -c constraints/airflow-' in compiler.INSTALL_HINT
    extras = set(metadata("airflow-provider-analytics").get_all("Provides-Extra") or ())
    assert {compiler.EXTRA, "vega"} <= extras  # the extras the chart tools' hints name (schema check: vega)


def test_the_docs_count_the_example_dags_there_are() -> None:
    example_dags = sorted(path.name for path in (REPO / "example_dags").glob("*.py") if path.name != "__init__.py")
    counts = re.findall(r"\b(\w+) complete example DAGs", "\n".join([README, *DOCS.values()]), re.I)
    assert counts, "the quick start no longer counts the example DAGs: keep this test's pattern in step"
    in_layout = re.findall(r"^\| `example_dags/` \| (\w+) DAGs", README, re.M)  # the README's layout table
    assert in_layout, "the README's layout table no longer counts the example DAGs: keep this test's pattern in step"
    counts += in_layout
    for word in counts:
        assert NUMBER_WORDS.index(word.lower()) == len(example_dags), f"{word} example DAGs, but {len(example_dags)}"
    for name in example_dags:
        assert name.removesuffix(".py") in DOCS["example_dags.rst"], f"docs/example_dags.rst omits {name}"


def test_the_seeded_account_is_listed_from_the_seed_itself(monkeypatch) -> None:
    """docs/_ext/analytics_docs.py renders the tables from ``seed_state()`` at build time (``make docs``):
    whatever the seed holds is listed, a resource added to it too."""
    from analytics_provider.testing.emulator import seed

    section = DOCS["emulator.rst"].split("The seeded account\n---")[1].split("\n---")[0]
    assert ".. include:: emulator_seed.rst" in section
    sys.path.insert(0, str(REPO / "docs" / "_ext"))
    from analytics_docs import emulator_seed

    seeded = seed.seed_state

    def grown(keys: dict[int, str]) -> Any:
        state = seeded(keys)
        state.data_sources[7] = {**state.data_sources[1], "id": 7, "name": "Lakehouse", "dbtype": "bigquery"}
        state.data_models[9] = {**state.data_models[1], "id": 9, "name": "big_spenders", "table_name": None,
                                "sql": "select 1"}
        return state

    monkeypatch.setattr(seed, "seed_state", grown)
    text = emulator_seed()
    state = grown({})
    expected = ([u["name"] for u in state.users.values()] + [g["name"] for g in state.groups.values()]
                + [f"{s['name']}\n     - ``{s['dbtype']}``" for s in state.data_sources.values()]
                + [f"``{m['name']}``\n     - ``{m['table_name']}``" for m in state.data_models.values()
                   if m["table_name"]] + ["``big_spenders``\n     - a query model"]
                + [f"``{d['uname']}``" for d in state.data_sets.values()]
                + [r["title"] for r in state.query_reports.values()] + [d["title"] for d in state.dashboards.values()]
                + [f"``{w}`` (report {state.widgets[w]['source_id']}" for w in state.widgets]
                + [f"{f['id']} {f['definition']['label']} (" for d in state.dashboards.values()
                   for f in d["dynamic_filters"]]
                + [f"``{a['name']}``" for a in state.user_attributes.values()])
    assert [item for item in expected if item not in text] == []


def _docs_pages(text: str) -> list[str]:
    pages = re.findall(r"`(docs/[\w/]+\.rst)`", text)
    for page in pages:
        assert (REPO / page).is_file(), f"the README cites {page}, which does not exist"
    return pages


def test_the_readme_names_every_operator_with_its_docs_page() -> None:
    import analytics_provider.operators as operators

    capabilities = README.split("\n## ")[0]
    bullets = ["- " + bullet for bullet in re.split(r"^- ", capabilities, flags=re.M)[1:]]
    assert len(bullets) >= 10, bullets
    for bullet in bullets:
        assert _docs_pages(bullet), f"a capability without its docs page: {bullet[:60]}"
    for name in operators.__all__:
        citing = [bullet for bullet in bullets if f"`{name}`" in bullet]
        assert citing, f"the README's list of what the package does omits {name}"
        pages = [page for bullet in citing for page in _docs_pages(bullet)]
        assert any(name in (REPO / page).read_text(encoding="utf-8") for page in pages), (name, pages)


def test_the_readme_layout_names_every_folder_of_the_package_with_its_docs_page() -> None:
    layout = README.split("\n## Layout\n")[1].split("\n## ")[0]
    rows = [row.split(" | ") for row in layout.splitlines() if row.startswith("| `")]
    named: set[str] = set()
    for path_cell, _what, docs_cell in rows:
        items = re.findall(r"`([^`]+)`", path_cell)
        if items[0].startswith("analytics_provider/"):
            folders = {"analytics_provider/" + item if not item.startswith("analytics_provider/") else item
                       for item in items if item.endswith("/")}
            assert _docs_pages(docs_cell), f"a folder of the package without its docs page: {path_cell}"
            named |= folders
    package = REPO / "analytics_provider"
    folders = {f"analytics_provider/{path.parent.name}/" for path in package.glob("*/__init__.py")}
    assert folders - named == set(), "the README's layout table omits them"


def _xcom_pushes() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """The XCom keys each class (``module.Class``) of the package pushes in its own methods, and
    each module-level function that pushes one (``links.push_dashboard_link``), read from the source."""
    import ast

    classes: dict[str, set[str]] = {}
    functions: dict[str, set[str]] = {}
    trees = {}
    for path in (REPO / "analytics_provider").rglob("*.py"):
        module = ".".join(path.relative_to(REPO).with_suffix("").parts)
        trees[module] = ast.parse(path.read_text(encoding="utf-8"))
    constants = {node.targets[0].id: node.value.value for tree in trees.values() for node in tree.body
                 if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
                 and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)}

    def pushed(node: ast.AST) -> set[str]:
        keys = set()
        for call in ast.walk(node):
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "xcom_push":
                (key,) = [k.value for k in call.keywords if k.arg == "key"]
                keys.add(key.value if isinstance(key, ast.Constant) else constants[key.id])
        return keys

    def calls(node: ast.AST) -> set[str]:
        return {call.func.id for call in ast.walk(node)
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Name)}

    for tree in trees.values():
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and pushed(node):
                functions[node.name] = pushed(node)
    for module, tree in trees.items():
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                classes[f"{module}.{node.name}"] = pushed(node).union(
                    *(functions[name] for name in calls(node) if name in functions))
    return classes, functions


def _operator_pages() -> dict[str, str]:
    index = DOCS["operators/index.rst"]
    pages = {name: os.path.normpath(f"operators/{page}") + ".rst"
             for name, page in re.findall(r":doc:`(\w+) <([\w./]+)>`", index)}
    pages["AnalyticsJobOperator"] = "operators/index.rst"
    return pages


def test_every_xcom_key_an_operator_pushes_is_on_its_docs_page() -> None:
    import analytics_provider.operators as operators

    classes, _ = _xcom_pushes()
    pages = _operator_pages()
    assert classes["analytics_provider.operators.refresh.AnalyticsRefreshImpactedOperator"] >= {"refresh_plan"}
    missing = []
    for name in operators.__all__:
        operator = getattr(operators, name)
        if not inspect.isclass(operator):
            continue  # plan_review_apply builds operators, it is none
        keys = set().union(*(classes.get(f"{klass.__module__}.{klass.__qualname__}", set())
                             for klass in operator.__mro__))
        if any(inspect.signature(getattr(operator, method)).return_annotation != "None"
               for method in ("execute", "execute_complete") if hasattr(operator, method)):
            keys.add("return_value")
        page = " ".join(DOCS[pages[name]].split())
        for key in sorted(keys):
            if f"``{key}``" not in page and not (key == "return_value" and "return value" in page):
                missing.append(f"{pages[name]} does not name the XCom key {key!r} that {name} pushes")
    assert not missing, "\n".join(missing)


def test_every_key_of_the_refresh_result_is_on_its_operator_page() -> None:
    """The refresh operator's result, with its keys that appear only sometimes, against its page's "Result"."""
    from analytics_provider.operators.refresh import AnalyticsRefreshImpactedOperator

    operator = AnalyticsRefreshImpactedOperator(task_id="refresh", tables=["public.orders"])
    operator.plan = {"dbt_unresolved": ["model.shop.orders"], "nothing_refreshed": "no model reads the tables"}
    keys = set(operator._result([]))
    section = DOCS["operators/refresh.rst"].split("\nResult\n------\n")[1].split("\n---")[0]
    named = set(re.findall(r"^- ``(\w+)``|(?:, |and )``(\w+)``(?=:|,)", section, re.M))
    listed = {key for pair in named for key in pair if key}
    assert keys <= listed, f"docs/operators/refresh.rst's Result omits {sorted(keys - listed)}"
