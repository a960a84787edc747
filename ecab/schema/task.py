"""One benchmark task (a line of `benchmark.jsonl`) with its persona and clarification script."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ecab.schema.product import Product
from ecab.schema.record import Record, field_error, parse_list
from ecab.schema.rubric import Rubric
from ecab.schema.voucher import Voucher

SAMPLE_STATUSES = ("ok", "final_validation_failed", "generation_runtime_error", "validation_runtime_error")


@dataclass
class Persona(Record):
    """The hidden profile behind `get_user_profile`; only `product_requirements` is scored."""

    user_id: str = ""
    demographics: dict[str, Any] = field(default_factory=dict)
    lifestyle: dict[str, Any] = field(default_factory=dict)
    shopping_habits: dict[str, Any] = field(default_factory=dict)
    product_requirements: dict[str, Any] = field(default_factory=dict)


@dataclass
class ClarificationSlot(Record):
    """One hidden requirement behind `ask_user`, revealed by trigger keywords."""

    REQUIRED: ClassVar[tuple[str, ...]] = ("slot_id", "trigger_keywords", "user_response")

    slot_id: str = ""
    linked_rubric_ids: list[str] = field(default_factory=list)
    hidden_info: str = ""
    trigger_keywords: list[str] = field(default_factory=list)
    user_response: str = ""
    revealed: bool = False

    def _validate(self, where: str) -> None:
        if not isinstance(self.trigger_keywords, list) or not all(isinstance(k, str) for k in self.trigger_keywords):
            raise field_error(f"{where}.trigger_keywords" if where else "trigger_keywords", "must be a list of strings")


DEFAULT_USER_RESPONSE = "I'm not sure about that. Is there anything else you'd like to ask?"


@dataclass
class ClarificationScript(Record):
    clarification_slots: list[ClarificationSlot] = field(default_factory=list)
    default_response: str = DEFAULT_USER_RESPONSE
    max_clarification_turns: int = 10

    @classmethod
    def _parse_field(cls, key, value, where):
        return parse_list(value, ClarificationSlot, where) if key == "clarification_slots" else value


@dataclass
class Task(Record):
    """One benchmark sample: the 18 keys of the released `benchmark.jsonl` (docs/original-harness.md §9), in order."""

    REQUIRED: ClassVar[tuple[str, ...]] = ("id", "intent_category", "user_query", "target_product", "rubrics")
    OMIT_IF_NONE: ClassVar[tuple[str, ...]] = ("error_message",)

    id: str = ""
    intent_category: str = ""
    user_query: str = ""
    user_persona: Persona = field(default_factory=Persona)
    clarification_script: ClarificationScript = field(default_factory=ClarificationScript)
    target_product: Product = field(default_factory=Product)
    rubrics: list[Rubric] = field(default_factory=list)
    implicit_rubric_ids: list[str] = field(default_factory=list)
    difficulty_metrics: dict[str, Any] = field(default_factory=dict)
    generation_artifacts: dict[str, Any] = field(default_factory=dict)
    extracted_features: list[dict[str, Any]] = field(default_factory=list)
    feature_partition: dict[str, Any] = field(default_factory=dict)
    voucher: Voucher | None = None
    validation_passed: bool = True
    validation_issues: list[Any] = field(default_factory=list)
    judge_passed: bool = True
    judge_issues: list[Any] = field(default_factory=list)
    sample_status: str = "ok"
    error_message: str | None = None

    @classmethod
    def _parse_field(cls, key, value, where):
        if key == "user_persona":
            return Persona.from_dict(value or {}, where)
        if key == "clarification_script":
            return ClarificationScript.from_dict(value or {}, where)
        if key == "target_product":
            return Product.from_dict(value, where)
        if key == "rubrics":
            return parse_list(value, Rubric, where)
        if key == "voucher" and value is not None:
            return Voucher.from_dict(value, where)
        return value

    def _validate(self, where: str) -> None:
        for key in ("id", "intent_category", "user_query"):
            if not isinstance(getattr(self, key), str) or not getattr(self, key):
                raise field_error(key, "must be a non-empty string")
        ids = [r.id for r in self.rubrics]
        duplicate = next((i for i in ids if ids.count(i) > 1), None)
        if duplicate is not None:
            raise field_error("rubrics", f"rubric id {duplicate!r} appears more than once")
        for i, rid in enumerate(self.implicit_rubric_ids):
            if rid not in ids:
                raise field_error(f"implicit_rubric_ids[{i}]", f"{rid!r} names no rubric of this task")
        for s, slot in enumerate(self.clarification_script.clarification_slots):
            for rid in slot.linked_rubric_ids:
                if rid not in ids:
                    raise field_error(f"clarification_script.clarification_slots[{s}].linked_rubric_ids",
                                f"{rid!r} names no rubric of this task")
        if any(r.type == "budget_match" for r in self.rubrics) and self.voucher is None:
            raise field_error("voucher", "a budget_match rubric needs the task's voucher")

    @property
    def is_ok(self) -> bool:
        """The original runs only samples whose status is ok (a missing status counts as ok)."""
        return self.sample_status in (None, "ok")

    def rubric(self, rubric_id: str) -> Rubric:
        return next(r for r in self.rubrics if r.id == rubric_id)
