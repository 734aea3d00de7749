"""User attributes and their entries (per user or group), computed values, upserts."""

from __future__ import annotations

import copy
import re
from typing import Any

from analytics_provider.api.wire.operations import MAX_UPSERT_ENTRIES, SUBJECT_TYPES
from analytics_provider.testing.emulator.errors import ApiError, invalid_operation, not_found, record_error
from analytics_provider.testing.emulator.handlers import Call, handles
from analytics_provider.testing.emulator.pagination import page
from analytics_provider.testing.emulator.state import Json, State, find
from analytics_provider.testing.emulator.validation import Record

ATTRIBUTE_TYPES = ("string", "number", "boolean", "date", "datetime")
INPUT_TYPES = ("manual", "inherit", "all")
NAME = re.compile(r"^[a-z][a-z0-9_]*$")
SYSTEM_VALUES = {"h_email": "email", "h_name": "name"}
ENTRY_FIELDS = ("user_attribute_id", "input_type", "subject_type", "subject_id")


def _check_attribute(state: State, body: Json, current_id: int | None = None) -> None:
    record = Record()
    name = record.require(body, "name", str)
    if isinstance(name, str) and name:
        if not NAME.match(name):
            record.add("name", "must start with a letter and hold only lowercase letters, digits and underscores",
                       rule="attribute")
        elif any(a["name"] == name and a["id"] != current_id for a in state.user_attributes.values()):
            record.add("name", "has already been taken", rule="unique-name")
    record.choice(body, "attribute_type", ATTRIBUTE_TYPES, rule="attribute")
    record.require(body, "label", str)
    if body.get("description") is not None and not isinstance(body["description"], str):
        record.add("description", "must be a string")
    record.check()


def _attribute_fields(body: Json) -> Json:
    return {k: body.get(k, "") if k == "description" else body[k] for k in ("name", "attribute_type", "label",
                                                                            "description")}


@handles("create_user_attribute")
def create_user_attribute(call: Call) -> Json:
    _check_attribute(call.state, call.body)
    attr_id = call.state.new_id("UserAttribute")
    attribute = {"id": attr_id, **_attribute_fields(call.body), "is_system_attribute": False}
    call.state.user_attributes[attr_id] = attribute
    return {"user_attribute": dict(attribute), "status": "created"}


@handles("list_user_attributes")
def list_user_attributes(call: Call) -> Json:
    items, cursors = page(sorted(call.state.user_attributes.values(), key=lambda a: a["id"]), call.query)
    return {"user_attributes": copy.deepcopy(items), "cursors": cursors}


@handles("update_user_attribute")
def update_user_attribute(call: Call) -> Json:
    attribute = call.find("UserAttribute")
    if attribute["is_system_attribute"]:
        # a semantic error of the record: the vendor's document declares RecordError for this operation
        text = f"System attribute {attribute['name']} cannot be changed"
        raise record_error({"base": [text]}, text, rules=("attribute",))
    merged = {**attribute, **call.body}
    _check_attribute(call.state, {"description": None, **call.body}, attribute["id"])  # a whole attribute
    attribute.update(_attribute_fields(merged))
    return {"user_attribute": dict(attribute)}


@handles("delete_user_attribute")
def delete_user_attribute(call: Call) -> Json:
    attribute = call.find("UserAttribute")
    if attribute["is_system_attribute"]:
        raise ApiError(403, "PermissionDeniedError", f"System attribute {attribute['name']} cannot be deleted")
    del call.state.user_attributes[attribute["id"]]
    for entries in call.state.attribute_entries.values():
        entries.pop(attribute["id"], None)
    return {"message": f"User attribute {attribute['name']} has been deleted"}


def _subject(state: State, subject_type: str, subject_id: Any) -> Json:
    return find(state, "User" if subject_type == "User" else "Group", subject_id)


@handles("list_user_attribute_entries")
def list_user_attribute_entries(call: Call) -> Json:
    subject_type = call.query["subject_type"]
    subject = _subject(call.state, subject_type, call.query["subject_id"])
    entries = list(call.state.attribute_entries.get((subject_type, subject["id"]), {}).values())
    items, cursors = page(entries, call.query)
    return {"user_attribute_entries": [entry_json(e) for e in items], "cursors": cursors}


def entry_json(entry: Json) -> Json:
    """An entry as the service answers one: which attribute, how it is set; never its values
    (those come from the computed values)."""
    return {k: entry[k] for k in ENTRY_FIELDS}


def computed_values(state: State, subject_type: str, subject: Json) -> dict[str, list[str]]:
    """Values per attribute name: the subject's own entry; a user without one inherits its groups'."""
    def own(kind: str, ident: int, attr_id: int) -> Json | None:
        return state.attribute_entries.get((kind, ident), {}).get(attr_id)

    values: dict[str, list[str]] = {}
    for attribute in state.user_attributes.values():
        name = attribute["name"]
        if attribute["is_system_attribute"]:
            if subject_type == "User" and name in SYSTEM_VALUES:
                values[name] = [str(subject[SYSTEM_VALUES[name]])]
            continue
        entry = own(subject_type, subject["id"], attribute["id"])
        if entry is not None and entry["input_type"] != "inherit":
            values[name] = ["*"] if entry["input_type"] == "all" else list(entry["values"])
        elif subject_type == "User":
            inherited = [own("Group", g, attribute["id"]) for g in subject["group_ids"]]
            merged = sorted({v for e in inherited if e is not None for v in e["values"]})
            if merged:
                values[name] = merged
    return values


@handles("compute_user_attribute_values")
def compute_user_attribute_values(call: Call) -> Json:
    subject_type = call.query["subject_type"]
    subject = _subject(call.state, subject_type, call.query["subject_id"])
    return {"user_attribute_values": computed_values(call.state, subject_type, subject)}


def _entry_attribute(state: State, entry: Json, where: str) -> Json:
    if entry.get("user_attribute_id") is not None:
        return find(state, "UserAttribute", entry["user_attribute_id"])
    name = entry.get("user_attribute_name") or entry.get("name")
    if not name:
        blank = entry.get("user_attribute_name") == ""  # named, but by an empty name
        raise record_error({f"{where}.user_attribute_id": ["give user_attribute_id or user_attribute_name"]},
                           rules=("not-blank",) if blank else ())
    found = next((a for a in state.user_attributes.values() if a["name"] == name), None)
    if found is None:
        raise not_found("UserAttribute", name, "name")
    return found


@handles("upsert_user_attribute_entries")
def upsert_user_attribute_entries(call: Call) -> Json:
    entries = call.body
    if len(entries) > MAX_UPSERT_ENTRIES:
        raise invalid_operation(f"At most {MAX_UPSERT_ENTRIES} entries per request, got {len(entries)}", "upsert-limit")
    planned = []
    for index, entry in enumerate(entries):
        where = f"user_attribute_entries[{index}]"
        if not isinstance(entry, dict):
            raise record_error({where: ["must be an object"]})
        record = Record()
        record.choice(entry, "subject_type", SUBJECT_TYPES)
        record.require(entry, "subject_id")
        input_type = record.choice(entry, "input_type", INPUT_TYPES)
        values = entry.get("values", [])
        if input_type == "manual" and (not isinstance(values, list) or not all(isinstance(v, str) for v in values)):
            record.add("values", "must be an array of strings")
        if record.errors:
            raise record_error({f"{where}.{k}": v for k, v in record.errors.items()})
        attribute = _entry_attribute(call.state, entry, where)
        if attribute["is_system_attribute"]:
            raise invalid_operation(f"System attribute {attribute['name']} has no entries to set", "attribute")
        subject = _subject(call.state, entry["subject_type"], entry["subject_id"])
        planned.append((attribute["id"], entry["subject_type"], subject["id"], input_type, list(values or [])))
    answered = []
    for attr_id, subject_type, subject_id, input_type, values in planned:
        entries = call.state.attribute_entries.setdefault((subject_type, subject_id), {})
        found = entries.get(attr_id)
        if found is None:
            found = entries[attr_id] = {"id": call.state.new_id("UserAttributeEntry"), "user_attribute_id": attr_id,
                                        "subject_type": subject_type, "subject_id": subject_id}
        found.update(input_type=input_type, values=values)
        answered.append(entry_json(found))
    return {"user_attribute_entries": answered}
