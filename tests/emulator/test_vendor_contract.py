"""The emulator against the vendor's OpenAPI document: the corpus counts, and generated requests.

Every exchange of these tests (like every exchange of the emulator suite) is also judged by the
autouse fixture of ``conftest.py``.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
import requests
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

pytest.importorskip("openapi_core", minversion="0.23", reason="needs openapi-core 0.23: see vendor_contract.JUDGES")

from analytics_provider.testing.emulator.app import AnalyticsEmulator
from analytics_provider.testing.emulator.errors import BUSINESS_RULES

from .conftest import Exchanges
from .contract_corpus import CASES, measure
from .vendor_contract import judge
from .vendor_patches import PATCHES, patched_spec

DOCS = Path(__file__).resolve().parents[2] / "docs" / "emulator.rst"
TABLE = re.compile(r"(\.\. vendor-contract-table-start\n\n)(.*?)(\n\.\. vendor-contract-table-end)", re.DOTALL)


def test_every_operation_served_every_answer_valid_every_invalid_request_refused(emu: AnalyticsEmulator) -> None:
    counts = measure(emu, CASES)
    assert not counts.problems, "\n".join(counts.problems)
    assert counts.operations == counts.operations_served == 82
    assert counts.answers_valid == counts.answers and counts.invalid_refused == counts.invalid
    assert counts.edge_accepted == counts.edge and counts.errors_right == counts.errors
    found = TABLE.search(DOCS.read_text(encoding="utf-8"))
    assert found, "docs/emulator.rst lost its vendor-contract table markers"
    if os.environ.get("UPDATE_DOCS") == "1":
        DOCS.write_text(TABLE.sub(lambda m: m.group(1) + counts.table() + m.group(3), DOCS.read_text()), "utf-8")
    else:
        assert found.group(2) == counts.table(), "run with UPDATE_DOCS=1 to rewrite the table in docs/emulator.rst"


def test_docs_list_every_business_rule_and_patch() -> None:
    text = DOCS.read_text(encoding="utf-8")
    assert [name for name in BUSINESS_RULES if f"``{name}``" not in text] == []
    assert len(PATCHES) >= 10 and "tests/emulator/vendor_patches.py" in text


def test_a_corpus_case_of_each_kind_can_fail(emu: AnalyticsEmulator, vendor_checked: Exchanges) -> None:
    # the judge is not a rubber stamp: a refused valid request and an accepted invalid one are both caught
    session = requests.Session()
    session.post(emu.base_url + "/dashboards/1/submit_preload", json={"bust_cache": "yes"},
                 headers={emu.header_name: emu.api_key})
    request, outcome, body, header = vendor_checked.seen[-1]
    outcome.status, outcome.body = 200, b'{"job": {"id": 1, "status": "created"}}'
    assert "accepted a request the vendor refuses" in " ".join(judge(request, outcome, header, emu.base_url[:-7],
                                                                     body).problems)
    vendor_checked.seen.clear()
    session.get(emu.base_url + "/dashboards/1", headers={emu.header_name: emu.api_key})
    request, outcome, body, header = vendor_checked.seen[-1]
    outcome.status, outcome.body = 400, b'{"type": "InvalidParameterError", "message": "no"}'
    assert "refused a request the vendor allows" in " ".join(judge(request, outcome, header, emu.base_url[:-7],
                                                                   body).problems)
    vendor_checked.seen.clear()
    session.close()


# -- generated requests ----------------------------------------------------------------------------------

SPEC = patched_spec("X-Service-Key")
DROP = ("discriminator", "example", "examples", "readOnly", "description", "title", "default", "xml")
# operation: (method, path, the path's ids): bodies drawn from the vendor's request schema
GENERATED_BODIES = {
    "submit_widget_export": ("post", "/dashboard_widgets/{id}/submit_export", "101"),
    "preload_dashboard": ("post", "/dashboards/{id}/submit_preload", "1"),
    "build_dashboard_url": ("post", "/dashboards/{id}/build_url", "1"),
    "create_data_schedule": ("post", "/data_schedules", None),
    "create_data_alert": ("post", "/data_alerts", None),
    "create_group": ("post", "/groups", None),
    "update_group": ("put", "/groups/{id}", "2"),
    "update_user": ("put", "/users/{id}", "6"),
    "invite_users": ("post", "/users/invite", None),
    "create_user_attribute": ("post", "/user_attributes", None),
    "upsert_user_attribute_entries": ("put", "/user_attribute_entries/upsert", None),
    "submit_data_set_query": ("post", "/data_sets/{id}/submit_query", "1"),
    "generate_data_set_sql": ("post", "/data_sets/{id}/generate_sql", "1"),
    "create_shareable_link": ("post", "/shareable_links", None),
    "clone_canvas_dashboard": ("post", "/dashboards/{id}/clone_canvas_dashboard", "3"),
    "add_object_tags": ("post", "/tags/submit_add_object_tags", None),
    "validate_aml_project": ("post", "/aml_studio/projects/submit_validate", None),
    "update_data_source": ("put", "/data_sources/{id}", "1"),
    "update_data_schedule": ("put", "/data_schedules/{id}", "1"),
    "test_data_schedule": ("post", "/data_schedules/submit_execute", None),
    "update_data_alert": ("put", "/data_alerts/{id}", "1"),
    "test_data_alert": ("post", "/data_alerts/submit_execute", None),
    "update_user_attribute": ("put", "/user_attributes/{id}", "3"),
    "update_shareable_link": ("put", "/shareable_links/{id}", "1"),
    "create_shortened_embed_token": ("post", "/embed/{hashcode}/shorten_token", None),
    "publish_aml_project": ("post", "/aml_studio/projects/submit_publish", None),
    "remove_object_tags": ("post", "/tags/submit_remove_object_tags", None),
    "validate_ddl": ("post", "/data_model_persistences/validate_ddl", None),
}
GENERATED_QUERIES = {
    "list_users": "/users", "list_data_schedules": "/data_schedules", "list_dashboards": "/dashboards",
    "list_dashboards_metadata": "/dashboards/list_metadata", "list_data_alerts": "/data_alerts",
    "list_shareable_links": "/shareable_links", "get_dependants": "/dependencies/downstream_dependencies",
    "list_user_attribute_entries": "/user_attribute_entries", "list_groups": "/groups",
    "list_jobs": "/jobs", "get_data_set": "/data_sets/{id}", "get_dashboard_widget": "/dashboard_widgets/{id}",
    "is_email_used": "/users/check_holistics_user", "list_data_models": "/data_models",
}


def json_schema(node: Any, depth: int = 0) -> Any:
    """An OpenAPI 3.0 schema as plain JSON Schema: references inlined, ``nullable`` as a null type."""
    if isinstance(node, list):
        return [json_schema(child, depth) for child in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        if depth > 6:
            return {}
        target = SPEC
        for part in node["$ref"].lstrip("#/").split("/"):
            target = target[part]
        return json_schema(target, depth + 1)
    found = {k: json_schema(v, depth) for k, v in node.items() if k not in DROP and not k.startswith("x-")}
    if found.pop("nullable", False):
        found = {"anyOf": [found, {"type": "null"}]}
    if found.get("format") in ("binary", "email", "date-time"):
        found.pop("format")
    return found


def from_schema(schema: Any, depth: int = 0) -> st.SearchStrategy[Any]:
    """Values near a JSON Schema: mostly valid, sometimes not (the judge, not the generator, decides).

    hypothesis-jsonschema does not run on current Hypothesis, so this covers what the vendor's
    request schemas use: types, enums, properties and required, items and their counts, ranges,
    and oneOf, anyOf, allOf (objects merged).
    """
    if not isinstance(schema, dict) or depth > 8:
        return st.none()
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    for key in ("oneOf", "anyOf"):
        if key in schema:
            rest = {k: v for k, v in schema.items() if k != key}
            return st.one_of([from_schema({**rest, **branch} if rest.get("type") == "object" else branch, depth + 1)
                              for branch in schema[key]])
    if "allOf" in schema:
        parts = [from_schema({k: v for k, v in schema.items() if k != "allOf"}, depth + 1)] if (
            "properties" in schema) else []
        parts += [from_schema(part, depth + 1) for part in schema["allOf"]]
        return st.tuples(*parts).map(_merged)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = kind[0]
    if kind == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        required = set(schema.get("required") or [])
        fields = {name: from_schema(sub, depth + 1) for name, sub in props.items() if name in required}
        optional = {name: from_schema(sub, depth + 1) for name, sub in props.items() if name not in required}
        return st.fixed_dictionaries(fields, optional=optional)
    if kind == "array":
        low, high = schema.get("minItems", 0), schema.get("maxItems", 3)
        items = from_schema(schema.get("items") or {}, depth + 1)
        return st.lists(items, min_size=low, max_size=max(low, min(high, 3)))
    if kind == "integer":
        return st.integers(schema.get("minimum", -5), schema.get("maximum", 2000))
    if kind == "number":
        return st.integers(-5, 2000) | st.floats(schema.get("minimum", -5), schema.get("maximum", 2000))
    if kind == "boolean":
        return st.booleans()
    if kind == "string":
        if "pattern" in schema:
            return st.from_regex(schema["pattern"], fullmatch=True)
        return st.sampled_from(["", "x", "sales", "0 7 * * *", "ops@example.org", "EU", "orders.region"]) | st.text(
            max_size=6)
    return st.none() | st.integers() | st.text(max_size=4)


def _merged(parts: tuple[Any, ...]) -> Any:
    dicts = [p for p in parts if isinstance(p, dict)]
    if len(dicts) != len(parts):
        return parts[-1]
    merged: dict[str, Any] = {}
    for part in dicts:
        merged.update(part)
    return merged


@functools.cache  # built and validated once, not at each example (a data set's query schema is large)
def body_strategy(method: str, path: str) -> st.SearchStrategy[Any]:
    schema = json_schema(SPEC["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"])
    anything = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                         max_size=3), max_leaves=6)
    return st.one_of(from_schema(schema), anything, from_schema(schema).map(_mutated))


def _mutated(body: Any) -> Any:
    """A schema-valid body with one value swapped for a wrong type (mostly invalid by the schema)."""
    if not isinstance(body, dict) or not body:
        return body
    changed = copy.deepcopy(body)
    key = sorted(changed)[0]
    changed[key] = [] if not isinstance(changed[key], list) else "not-a-list"
    return changed


@functools.cache
def query_strategy(path: str) -> st.SearchStrategy[dict[str, Any]]:
    item = SPEC["paths"][path]
    params = [p if "$ref" not in p else SPEC["components"]["parameters"][p["$ref"].split("/")[-1]]
              for p in [*item.get("parameters", []), *item["get"].get("parameters", [])]]
    fields: dict[str, st.SearchStrategy[Any]] = {}
    for param in params:
        if param["in"] != "query" or param["name"] in ("before", "after"):
            continue
        schema = json_schema(param["schema"])
        good = from_schema(schema).map(_query_value)
        fields[param["name"]] = st.one_of(st.none(), good, st.text(max_size=5))
    return st.fixed_dictionaries(fields).map(lambda q: {k: v for k, v in q.items() if v is not None})


def _query_value(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return [_query_value(v) for v in value]
    return value


def _judged(exchanges: Exchanges) -> None:
    """The example's exchange judged now (its verdict shown with the drawn request); taken off the
    fixture's list, which would judge it again at the end of the test, with every other example's."""
    request, outcome, body, header = exchanges.seen.pop()
    assert not exchanges.seen  # one exchange an example, each judged once
    verdict = judge(request, outcome, header, f"http://{request.headers['host']}", body)
    assert not verdict.problems, verdict.describe() + f"\nrequest problem: {verdict.request_problem}"


GENERATED = settings(max_examples=int(os.environ.get("CONTRACT_EXAMPLES", "10")), deadline=None, derandomize=True,
                     phases=[Phase.explicit, Phase.generate],  # no shrinking: the verdict says what was wrong
                     suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                            HealthCheck.filter_too_much, HealthCheck.data_too_large])


@pytest.mark.parametrize("name", sorted(GENERATED_BODIES))
@GENERATED
@given(data=st.data())
def test_generated_bodies(emu: AnalyticsEmulator, vendor_checked: Exchanges, name: str, data: st.DataObject) -> None:
    method, template, ident = GENERATED_BODIES[name]
    body = data.draw(body_strategy(method, template), label="body")
    emu.reset()
    path = template.replace("{id}", ident or "").replace("{hashcode}", "embed002x7k2")
    requests.request(method, emu.base_url + path, data=json.dumps(body), timeout=10,
                     headers={emu.header_name: emu.api_key, "Content-Type": "application/json"})
    _judged(vendor_checked)


@pytest.mark.parametrize("name", sorted(GENERATED_QUERIES))
@GENERATED
@given(data=st.data())
def test_generated_queries(emu: AnalyticsEmulator, vendor_checked: Exchanges, name: str, data: st.DataObject) -> None:
    path = GENERATED_QUERIES[name]
    query = data.draw(query_strategy(path), label="query")
    params = {(f"{k}[]" if isinstance(v, list) else k): v for k, v in query.items()}
    ident = "101" if "dashboard_widgets" in path else "1"
    requests.get(emu.base_url + path.replace("{id}", ident), params=params, timeout=10,
                 headers={emu.header_name: emu.api_key})
    _judged(vendor_checked)
