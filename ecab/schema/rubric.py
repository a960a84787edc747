"""A rubric: one typed, source-tagged requirement of a task, and the expected-value shapes each type accepts."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

from ecab.schema.record import Record, field_error, is_number

RUBRIC_TYPES = ("attribute_match", "numeric_range", "entity_match", "negative_attribute", "budget_match",
                "review_opinion")
# Documented by the original judge but never generated; accepted so foreign task files still load.
LEGACY_RUBRIC_TYPES = ("store_match",)
INFO_SOURCES = ("query", "persona", "clarification")
NUMERIC_OPS = (">", ">=", "<", "<=", "==")


def _check_expected_value(rtype: str, value: Any, where: str) -> None:
    """The expected_value shapes of docs/original-harness.md §4.3 / §5.6, one clear message per wrong shape."""
    if rtype in ("attribute_match", "entity_match", "store_match"):
        if not isinstance(value, str):
            raise field_error(where, f"{rtype} expects a string, got {json.dumps(value)}")
    elif rtype == "negative_attribute":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise field_error(where, f"negative_attribute expects a list of strings, got {json.dumps(value)}")
    elif rtype == "budget_match":
        if not is_number(value):
            raise field_error(where, f"budget_match expects a number, got {json.dumps(value)}")
    elif rtype == "review_opinion":
        ok = isinstance(value, str) or (isinstance(value, dict) and isinstance(value.get("opinion"), str))
        if not ok:
            raise field_error(where, f'review_opinion expects a string or {{"opinion": str}}, got {json.dumps(value)}')
    elif rtype == "numeric_range":
        if not NumericRange.is_valid(value):
            raise field_error(where, 'numeric_range expects a number, {"min"}, {"max"}, {"min","max"}, [x, y] or '
                               f'{{"value", "op"}} with op in {list(NUMERIC_OPS)}, got {json.dumps(value)}')


class NumericRange:
    """The numeric_range expected_value shapes, checked mechanically."""

    @staticmethod
    def is_valid(value: Any) -> bool:
        if is_number(value):
            return True
        if isinstance(value, list):
            return len(value) == 2 and all(is_number(v) for v in value)
        if isinstance(value, dict):
            if set(value) == {"value", "op"}:
                return is_number(value["value"]) and value["op"] in NUMERIC_OPS
            return bool(value) and set(value) <= {"min", "max"} and all(is_number(v) for v in value.values())
        return False

    @staticmethod
    def contains(value: Any, x: float) -> bool:
        """True when number `x` satisfies the expected_value `value`."""
        if is_number(value):
            return x == value
        if isinstance(value, list):
            return value[0] <= x <= value[1]
        if "op" in value:
            v, op = value["value"], value["op"]
            return {">": x > v, ">=": x >= v, "<": x < v, "<=": x <= v, "==": x == v}[op]
        return ("min" not in value or x >= value["min"]) and ("max" not in value or x <= value["max"])


@dataclass
class Rubric(Record):
    """A typed, source-tagged requirement (docs/original-harness.md §5.6)."""

    REQUIRED: ClassVar[tuple[str, ...]] = ("id", "type", "field", "expected_value")

    id: str = ""
    type: str = ""
    field: str = ""
    expected_value: Any = None
    description: str = ""
    info_source: str = "query"

    def _validate(self, where: str) -> None:
        prefix = f"{where}." if where else ""
        if self.type not in RUBRIC_TYPES + LEGACY_RUBRIC_TYPES:
            raise field_error(prefix + "type", f"unknown rubric type {self.type!r}; expected one of {list(RUBRIC_TYPES)}")
        if self.info_source not in INFO_SOURCES:
            raise field_error(prefix + "info_source",
                        f"unknown info_source {self.info_source!r}; expected one of {list(INFO_SOURCES)}")
        _check_expected_value(self.type, self.expected_value, prefix + "expected_value")

    @property
    def detail_key(self) -> str | None:
        """The bare detail key for `details.<Key>` fields, else None."""
        return self.field.split(".", 1)[1] if self.field.startswith("details.") else None

    @property
    def opinion(self) -> str:
        """The review_opinion text, whichever of the two shapes it came in."""
        v = self.expected_value
        return v["opinion"] if isinstance(v, dict) else str(v)
