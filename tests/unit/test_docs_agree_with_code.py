"""What the README and the docs say about defaults (extras, intervals, timeouts, versions) is read
from the code here, so that a changed default cannot leave a page behind."""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path

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
    assert f"``poll_interval`` (default {_default('poll_interval'):g} seconds)" in page
    assert f"``timeout`` (default {_default('timeout'):g} seconds)" in page
    assert f"``max_outage`` (default {DEFAULT_MAX_OUTAGE:g} seconds)" in page
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
