"""The patches to the vendor's OpenAPI document, all in this one file, each with its reason.

The vendor's OpenAPI document (its facts, committed in :mod:`vendor_facts`) is the reference the
emulator is checked against. Where the API document (``000_371b584a1799b9d5.txt``) or the endpoint facts
(``ENDPOINTS.md``) say otherwise, they win; :data:`PATCHES` lists those places. The last two
entries are translations rather than changes: JSON Schema cannot read OpenAPI's discriminators,
so they become ``oneOf`` branches, and the error statuses every operation may answer are added.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vendor_facts import vendor_document

Spec = dict[str, Any]
ERROR_STATUSES = ("400", "401", "403", "404", "422", "429", "500", "502", "503", "504")


@dataclass(frozen=True)
class Patch:
    what: str
    why: str
    apply: Callable[[Spec, str], None]  # (spec, the emulator's key header)


def _schemas(spec: Spec) -> Spec:
    return spec["components"]["schemas"]


def _op(spec: Spec, path: str, method: str) -> Spec:
    return spec["paths"][path][method]


def _key_header(spec: Spec, header: str) -> None:
    spec["components"]["securitySchemes"]["ApiKeyAuthentication"]["name"] = header


def _alert_dest(spec: Spec, _: str) -> None:
    _schemas(spec)["DataAlert"]["properties"]["dest"]["type"] = "object"


def _upsert_entries(spec: Spec, _: str) -> None:
    entries = _schemas(spec)["UserAttributeEntryInput"]["properties"]["user_attribute_entries"]
    entries["maxItems"] = 100
    item = entries["items"]
    item["required"] = ["subject_type", "subject_id"]
    item["allOf"][1] = {"anyOf": [{"required": ["user_attribute_id"], "properties": {"user_attribute_id": {
        "type": "integer"}}}, {"required": ["user_attribute_name"], "properties": {"user_attribute_name": {
            "type": "string"}}}]}


def _bodies_required(spec: Spec, _: str) -> None:
    for item in spec["paths"].values():
        for operation in item.values():
            body = operation.get("requestBody") if isinstance(operation, dict) else None
            if body is None:
                continue
            for media in body["content"].values():
                schema = media.get("schema") or {}
                if list(schema.get("properties") or {}) == ["user"]:  # the one wrapped body the YAML leaves optional
                    schema["required"] = ["user"]
                if schema.get("required"):
                    body["required"] = True


def _export_not_ready(spec: Spec, _: str) -> None:
    _schemas(spec)["BaseError"]["properties"]["type"]["enum"].append("ExportJobNotReady")


def _objects_status(spec: Spec, _: str) -> None:
    deploy = _schemas(spec)["SuccessDeploy"]["properties"]
    deploy["objects_status"] = {"type": "array", "items": deploy["objects_status"]}


def _current_user_by_post(spec: Spec, _: str) -> None:
    spec["paths"]["/users/me"]["post"] = copy.deepcopy(spec["paths"]["/users/me"]["get"])
    spec["paths"]["/users/me"]["post"]["operationId"] = "Users_Me_Post"


def _download_redirect(spec: Spec, _: str) -> None:
    answer = _op(spec, "/exports/download", "get")["responses"]["302"]
    answer.pop("content", None)


def _adls2_dest(spec: Spec, _: str) -> None:
    schemas = _schemas(spec)
    schemas["DataScheduleAdls2Dest"] = {"type": "object", "required": ["type"],
                                        "properties": {"type": {"type": "string", "enum": ["Adls2Dest"]}}}
    schemas["DataScheduleDest"]["properties"]["type"]["enum"].append("Adls2Dest")
    dest = schemas["DataSchedule"]["properties"]["dest"]
    dest["oneOf"].append({"$ref": "#/components/schemas/DataScheduleAdls2Dest"})
    dest["discriminator"]["mapping"]["Adls2Dest"] = "#/components/schemas/DataScheduleAdls2Dest"


def _export_result(spec: Spec, _: str) -> None:
    schemas = _schemas(spec)
    schemas["ExportResult"] = {"type": "object", "required": ["type", "data"], "properties": {
        "type": {"type": "string"},
        "data": {"type": "object", "required": ["output", "file_name"], "properties": {
            "output": {"type": "string", "enum": ["csv", "xlsx", "pdf"]}, "file_name": {"type": "string"},
            "row_count": {"type": "integer"}}}}}
    result = schemas["WithData"]["properties"]["result"]
    result["oneOf"].append({"$ref": "#/components/schemas/ExportResult"})
    result["discriminator"]["mapping"]["DashboardWidget.export"] = "#/components/schemas/ExportResult"


def _discriminators(spec: Spec, _: str) -> None:
    """Each ``discriminator`` becomes ``oneOf`` branches, one per mapped value, each pinning the value.

    A mapped schema that is ``allOf [..., $ref back to the discriminated schema]`` (the vendor's
    Condition operators) contributes its own parts only, so the branches do not recurse.
    """
    schemas = _schemas(spec)

    def rewrite(node: Any, own_ref: str | None) -> None:
        if isinstance(node, list):
            for child in node:
                rewrite(child, own_ref)
            return
        if not isinstance(node, dict):
            return
        found = node.pop("discriminator", None)
        for key, child in list(node.items()):
            rewrite(child, f"#/components/schemas/{key}" if node is schemas else own_ref)
        if not found:
            return
        prop = found["propertyName"]
        mapping = found.get("mapping") or {r["$ref"].split("/")[-1]: r["$ref"] for r in node.get("oneOf", [])}
        branches = []
        for value, ref in mapping.items():
            target = schemas[ref.split("/")[-1]]
            parts = [p for p in target.get("allOf", []) if p.get("$ref") != own_ref]
            body = parts if own_ref and len(parts) != len(target.get("allOf", [])) else [{"$ref": ref}]
            branches.append({"type": "object", "required": [prop], "properties": {prop: {"enum": [value]}},
                             "allOf": body})
        node["oneOf"] = branches

    rewrite(spec, None)


def _nullable_enums(spec: Spec, _: str) -> None:
    def visit(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("nullable") and isinstance(node.get("enum"), list) and None not in node["enum"]:
                node["enum"].append(None)
            for child in node.values():
                visit(child)
        elif isinstance(node, list):
            for child in node:
                visit(child)

    visit(spec)


def _overlapping_error_details(spec: Spec, _: str) -> None:
    details = _schemas(spec)["FailedDeploy"]["properties"]["error_details"]
    details["anyOf"] = details.pop("oneOf")


def _error_answers(spec: Spec, _: str) -> None:
    nested = {"type": "object", "required": ["error"],
              "properties": {"error": {"$ref": "#/components/schemas/BaseError"}}}
    error = {"description": "An error (API document: Errors)", "content": {"application/json": {"schema": {
        "oneOf": [{"$ref": "#/components/schemas/BaseError"}, nested]}}}}
    for item in spec["paths"].values():
        for method, operation in item.items():
            if method in ("get", "post", "put", "delete"):
                for status in ERROR_STATUSES:
                    operation["responses"].setdefault(status, copy.deepcopy(error))


PATCHES: tuple[Patch, ...] = (
    Patch("the key header may be the API document's X-Service-Key as well as the vendor's X-Holistics-Key",
          "API document, Authentication 1", _key_header),
    Patch("DataAlert.dest is an object (the YAML types it as a string)",
          "API document, DataAlert table; ENDPOINTS.md", _alert_dest),
    Patch("an upsert entry names its attribute by user_attribute_id or by user_attribute_name (the YAML requires "
          "both); at most 100 entries a request", "API document, UserAttributeEntry and Limits", _upsert_entries),
    Patch("a request body whose schema has required properties is itself required; the user update's body "
          "requires its user key", "API document, Conventions: create and update bodies are wrapped in one key",
          _bodies_required),
    Patch("error type ExportJobNotReady (422 of the export download)", "ENDPOINTS.md, Table 4.1", _export_not_ready),
    Patch("a publish result's objects_status is an array of objects", "ENDPOINTS.md, Jobs", _objects_status),
    Patch("Adls2Dest (Azure Blob storage) is a schedule destination; its options are not shown",
          "API document, DataSchedule table and Overview", _adls2_dest),
    Patch("an export job's result is {type, data} like the others' (output, file name, rows)",
          "API document, JobResult", _export_result),
    Patch("POST /users/me is the current user too", "API document, Table 4.1", _current_user_by_post),
    Patch("the download's 302 has no body (the file is at its Location)", "ENDPOINTS.md, Table 4.1",
          _download_redirect),
    Patch("a nullable enum (aggregation, transformation...) allows null",
          "translation: OpenAPI 3.0.3 wants null listed in such an enum; the vendor marks them nullable",
          _nullable_enums),
    Patch("a failed publish's error_details is anyOf its kinds (they are all-optional objects, so oneOf could "
          "never hold for one)", "translation of the vendor's intent", _overlapping_error_details),
    Patch("discriminators are enforced (operators, destinations, job results)",
          "translation: JSON Schema ignores OpenAPI discriminators", _discriminators),
    Patch("every operation may answer the error statuses with the error object, flat or nested",
          "API document, Errors; ENDPOINTS.md, Errors", _error_answers),
)


def patched_spec(key_header: str) -> Spec:
    spec = vendor_document()
    # the emulator's address instead of the regions' (any host and port, the same /api/v2 prefix)
    spec["servers"] = [{"url": "http://{host}/api/v2", "variables": {"host": {"default": "127.0.0.1"}}}]
    for patch in PATCHES:
        patch.apply(spec, key_header)
    return spec
