"""ecab's data model and the original harness's file formats (docs/original-harness.md §5.12, §9).

Every record is a dataclass whose known keys are typed attributes. Keys the model does not know are kept
in `extras`, and the key order seen on input is remembered, so reading a released `benchmark.jsonl` and
writing it back yields equal JSON objects, key order included. Records built in code emit the field order
declared here, which is the original's order.

Bad input never surfaces as a bare KeyError: `FormatError` names the file, the line and the field.
"""
from __future__ import annotations

import dataclasses
import itertools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Iterable, Iterator

RUBRIC_TYPES = ("attribute_match", "numeric_range", "entity_match", "negative_attribute", "budget_match",
                "review_opinion")
# Documented by the original judge but never generated; accepted so foreign task files still load.
LEGACY_RUBRIC_TYPES = ("store_match",)
INFO_SOURCES = ("query", "persona", "clarification")
NUMERIC_OPS = (">", ">=", "<", "<=", "==")
SAMPLE_STATUSES = ("ok", "final_validation_failed", "generation_runtime_error", "validation_runtime_error")


class FormatError(ValueError):
    """A record that does not fit the format. Its message names file, line and field."""

    def __init__(self, message: str, *, path: str | Path | None = None, line: int | None = None,
                 field: str | None = None):
        self.path, self.line, self.field, self.reason = path, line, field, message
        where = f"{path}" if path is not None else "<input>"
        if line is not None:
            where += f":{line}"
        super().__init__(f"{where}: field '{field}': {message}" if field else f"{where}: {message}")

    def located(self, path: str | Path, line: int) -> "FormatError":
        return FormatError(self.reason, path=path, line=line, field=self.field)


def _fail(field_path: str, message: str) -> FormatError:
    return FormatError(message, field=field_path)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


# ---------------------------------------------------------------------------------------------------------
# The order-preserving record base
# ---------------------------------------------------------------------------------------------------------

@dataclass
class Record:
    """Base of every format record: typed known keys, untyped extras, remembered key order."""

    REQUIRED: ClassVar[tuple[str, ...]] = ()
    # Optional keys that the original omits when absent (written only if present on input or set).
    OMIT_IF_NONE: ClassVar[tuple[str, ...]] = ()

    extras: dict[str, Any] = field(default_factory=dict, repr=False, compare=False, kw_only=True)
    key_order: list[str] | None = field(default=None, repr=False, compare=False, kw_only=True)

    @classmethod
    def _known(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls) if f.name not in ("extras", "key_order")]

    @classmethod
    def from_dict(cls, data: Any, where: str = ""):
        """Build from a JSON object; `where` is the field path used in error messages."""
        label = where or cls.__name__
        if not isinstance(data, dict):
            raise _fail(label, f"expected a JSON object, got {type(data).__name__}")
        for key in cls.REQUIRED:
            if key not in data:
                raise _fail(f"{where}.{key}" if where else key, "required field is missing")
        known = set(cls._known())
        kwargs = {k: cls._parse_field(k, v, f"{where}.{k}" if where else k) for k, v in data.items() if k in known}
        extras = {k: v for k, v in data.items() if k not in known}
        obj = cls(**kwargs, extras=extras, key_order=list(data.keys()))
        obj._validate(where)
        return obj

    @classmethod
    def _parse_field(cls, key: str, value: Any, where: str) -> Any:
        """Hook: turn a raw JSON value into the typed attribute (nested records)."""
        return value

    def _validate(self, where: str) -> None:
        """Hook: shape checks that need several fields at once."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON object, in input key order when there was an input, else declaration order."""
        values = {k: _dump(getattr(self, k)) for k in self._known()}
        values.update(self.extras)
        if self.key_order is not None:
            order = [k for k in self.key_order if k in values]
            order += [k for k in values if k not in self.key_order and not self._omit(k, values[k])]
        else:
            order = [k for k in values if not self._omit(k, values[k])]
        return {k: values[k] for k in order}

    def _omit(self, key: str, value: Any) -> bool:
        return key in self.OMIT_IF_NONE and value is None


def _dump(value: Any) -> Any:
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, list):
        return [_dump(v) for v in value]
    return value


def _parse_list(items: Any, cls: type[Record], where: str) -> list:
    if not isinstance(items, list):
        raise _fail(where, f"expected a list, got {type(items).__name__}")
    return [cls.from_dict(item, f"{where}[{i}]") for i, item in enumerate(items)]


# ---------------------------------------------------------------------------------------------------------
# Catalog records
# ---------------------------------------------------------------------------------------------------------

@dataclass
class Product(Record):
    """A catalog product in Amazon Reviews 2023 metadata shape (`product_id` = parent_asin)."""

    REQUIRED: ClassVar[tuple[str, ...]] = ("product_id",)
    # The keys of a task's `target_product` (docs/original-harness.md §5.12), in order.
    TARGET_KEYS: ClassVar[tuple[str, ...]] = ("product_id", "title", "main_category", "store", "average_rating",
                                              "rating_number", "price", "features", "description", "details")

    product_id: str = ""
    title: str = ""
    main_category: str = ""
    store: str = ""
    average_rating: float | None = None
    rating_number: int | None = None
    price: float | None = None
    features: list[str] = field(default_factory=list)
    description: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def _validate(self, where: str) -> None:
        prefix = f"{where}." if where else ""
        if not isinstance(self.product_id, str) or not self.product_id:
            raise _fail(prefix + "product_id", "must be a non-empty string")
        if not isinstance(self.details, dict):
            raise _fail(prefix + "details", "must be an object")
        for key in ("price", "average_rating"):
            value = getattr(self, key)
            if value is not None and not _is_number(value):
                raise _fail(prefix + key, f"must be a number or null, got {value!r}")

    @property
    def brand(self) -> str:
        brand = self.details.get("Brand")
        return brand if isinstance(brand, str) else ""

    def target_view(self) -> dict[str, Any]:
        """The ten keys a task's `target_product` carries."""
        data = self.to_dict()
        return {k: data.get(k) for k in self.TARGET_KEYS}


@dataclass
class Review(Record):
    """One product review, as the original `reviews` table keeps it (docs/original-harness.md §1.3)."""

    REQUIRED: ClassVar[tuple[str, ...]] = ("product_id",)

    review_id: int | str | None = None
    product_id: str = ""
    rating: float | None = None
    title: str = ""
    text: str = ""
    helpful_vote: int = 0
    verified_purchase: bool = False
    timestamp: int | None = None


# ---------------------------------------------------------------------------------------------------------
# Task records
# ---------------------------------------------------------------------------------------------------------

def _check_expected_value(rtype: str, value: Any, where: str) -> None:
    """The expected_value shapes of docs/original-harness.md §4.3 / §5.6, one clear message per wrong shape."""
    if rtype in ("attribute_match", "entity_match", "store_match"):
        if not isinstance(value, str):
            raise _fail(where, f"{rtype} expects a string, got {json.dumps(value)}")
    elif rtype == "negative_attribute":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise _fail(where, f"negative_attribute expects a list of strings, got {json.dumps(value)}")
    elif rtype == "budget_match":
        if not _is_number(value):
            raise _fail(where, f"budget_match expects a number, got {json.dumps(value)}")
    elif rtype == "review_opinion":
        ok = isinstance(value, str) or (isinstance(value, dict) and isinstance(value.get("opinion"), str))
        if not ok:
            raise _fail(where, f'review_opinion expects a string or {{"opinion": str}}, got {json.dumps(value)}')
    elif rtype == "numeric_range":
        if not NumericRange.is_valid(value):
            raise _fail(where, 'numeric_range expects a number, {"min"}, {"max"}, {"min","max"}, [x, y] or '
                               f'{{"value", "op"}} with op in {list(NUMERIC_OPS)}, got {json.dumps(value)}')


class NumericRange:
    """The numeric_range expected_value shapes, checked mechanically."""

    @staticmethod
    def is_valid(value: Any) -> bool:
        if _is_number(value):
            return True
        if isinstance(value, list):
            return len(value) == 2 and all(_is_number(v) for v in value)
        if isinstance(value, dict):
            if set(value) == {"value", "op"}:
                return _is_number(value["value"]) and value["op"] in NUMERIC_OPS
            return bool(value) and set(value) <= {"min", "max"} and all(_is_number(v) for v in value.values())
        return False

    @staticmethod
    def contains(value: Any, x: float) -> bool:
        """True when number `x` satisfies the expected_value `value`."""
        if _is_number(value):
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
            raise _fail(prefix + "type", f"unknown rubric type {self.type!r}; expected one of {list(RUBRIC_TYPES)}")
        if self.info_source not in INFO_SOURCES:
            raise _fail(prefix + "info_source",
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
            raise _fail(f"{where}.trigger_keywords" if where else "trigger_keywords", "must be a list of strings")


DEFAULT_USER_RESPONSE = "I'm not sure about that. Is there anything else you'd like to ask?"


@dataclass
class ClarificationScript(Record):
    clarification_slots: list[ClarificationSlot] = field(default_factory=list)
    default_response: str = DEFAULT_USER_RESPONSE
    max_clarification_turns: int = 10

    @classmethod
    def _parse_field(cls, key, value, where):
        return _parse_list(value, ClarificationSlot, where) if key == "clarification_slots" else value


@dataclass
class VoucherTier(Record):
    tier: int = 1
    threshold: float = 0.0
    discount_type: str = "fixed"
    face_value: float | None = None
    discount: float | None = None
    cap: float | None = None


@dataclass
class StackedCoupon(Record):
    coupon_index: int = 0
    voucher_type: str = ""
    discount_type: str = "fixed"
    threshold: float = 0.0
    face_value: float | None = None
    discount: float | None = None
    cap: float | None = None
    actual_discount: float | None = None


def _discount(price: float, discount_type: str, face_value, discount, cap) -> float:
    """What one fixed or percentage coupon takes off `price` (threshold already met)."""
    if discount_type == "fixed":
        return float(face_value or 0.0)
    off = price * float(discount or 0.0)
    return min(off, float(cap)) if cap is not None else off


@dataclass
class Voucher(Record):
    """A coupon_budget voucher: simple (fixed/percentage), tiered or stacked (docs/original-harness.md §5.7)."""

    OMIT_IF_NONE: ClassVar[tuple[str, ...]] = ("tiers", "active_tier", "coupons")

    voucher_type: str = ""
    threshold: float | None = None
    discount_type: str = "fixed"
    face_value: float | None = None
    discount: float | None = None
    cap: float | None = None
    tiers: list[VoucherTier] | None = None
    active_tier: int | None = None
    coupons: list[StackedCoupon] | None = None
    budget: float = 0.0
    total_original_price: float | None = None
    price_after_voucher: float | None = None

    @classmethod
    def _parse_field(cls, key, value, where):
        if key == "tiers" and value is not None:
            return _parse_list(value, VoucherTier, where)
        if key == "coupons" and value is not None:
            return _parse_list(value, StackedCoupon, where)
        return value

    def _validate(self, where: str) -> None:
        prefix = f"{where}." if where else ""
        if not _is_number(self.budget):
            raise _fail(prefix + "budget", f"must be a number, got {self.budget!r}")
        if self.kind == "tiered" and not self.tiers:
            raise _fail(prefix + "tiers", "a tiered voucher needs its tiers")
        if self.kind == "stacked" and not self.coupons:
            raise _fail(prefix + "coupons", "a stacked voucher needs its coupons")

    @property
    def kind(self) -> str:
        """simple | tiered | stacked."""
        if self.discount_type == "tiered":
            return "tiered"
        if self.discount_type == "stacked" or self.voucher_type == "stacked":
            return "stacked"
        return "simple"

    def apply(self, price: float) -> float:
        """The price of a product of list price `price` after this voucher, rounded to cents.

        Unlike the original (which only knew the target's pre-computed `price_after_voucher`), this applies
        the voucher rules to any product: a coupon applies when the price reaches its threshold; for a
        tiered voucher the highest tier whose threshold is met applies; stacked coupons apply in order,
        the second to the intermediate price. A discount never takes the price below zero.
        """
        final = float(price)
        if self.kind == "simple":
            if final >= float(self.threshold or 0.0):
                final -= _discount(final, self.discount_type, self.face_value, self.discount, self.cap)
        elif self.kind == "tiered":
            met = [t for t in self.tiers or [] if final >= float(t.threshold)]
            if met:
                best = max(met, key=lambda t: float(t.threshold))
                final -= _discount(final, best.discount_type, best.face_value, best.discount, best.cap)
        else:
            for coupon in sorted(self.coupons or [], key=lambda c: c.coupon_index):
                if final >= float(coupon.threshold):
                    final -= _discount(final, coupon.discount_type, coupon.face_value, coupon.discount, coupon.cap)
        return round(max(final, 0.0), 2)


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
            return _parse_list(value, Rubric, where)
        if key == "voucher" and value is not None:
            return Voucher.from_dict(value, where)
        return value

    def _validate(self, where: str) -> None:
        for key in ("id", "intent_category", "user_query"):
            if not isinstance(getattr(self, key), str) or not getattr(self, key):
                raise _fail(key, "must be a non-empty string")
        ids = [r.id for r in self.rubrics]
        duplicate = next((i for i in ids if ids.count(i) > 1), None)
        if duplicate is not None:
            raise _fail("rubrics", f"rubric id {duplicate!r} appears more than once")
        for i, rid in enumerate(self.implicit_rubric_ids):
            if rid not in ids:
                raise _fail(f"implicit_rubric_ids[{i}]", f"{rid!r} names no rubric of this task")
        for s, slot in enumerate(self.clarification_script.clarification_slots):
            for rid in slot.linked_rubric_ids:
                if rid not in ids:
                    raise _fail(f"clarification_script.clarification_slots[{s}].linked_rubric_ids",
                                f"{rid!r} names no rubric of this task")
        if any(r.type == "budget_match" for r in self.rubrics) and self.voucher is None:
            raise _fail("voucher", "a budget_match rubric needs the task's voucher")

    @property
    def is_ok(self) -> bool:
        """The original runs only samples whose status is ok (a missing status counts as ok)."""
        return self.sample_status in (None, "ok")

    def rubric(self, rubric_id: str) -> Rubric:
        return next(r for r in self.rubrics if r.id == rubric_id)


# ---------------------------------------------------------------------------------------------------------
# JSONL I/O
# ---------------------------------------------------------------------------------------------------------

DEFAULT_MAX_LINE_BYTES = 4 * 2**20   # a task line longer than this is refused (benchmark.max_line_bytes)


def iter_jsonl(path: str | Path, *, max_line_bytes: int | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line. A line that is not valid UTF-8, not valid JSON, not an
    object, or (with `max_line_bytes`) longer than that many bytes raises FormatError with its number; an
    over-long line is refused without being read into memory."""
    path = Path(path)
    if not path.exists():
        raise FormatError("file not found", path=path)
    with path.open("rb") as handle:
        for lineno in itertools.count(1):
            raw = handle.readline(max_line_bytes + 2) if max_line_bytes else handle.readline()   # + "\r\n"
            if not raw:
                return
            if max_line_bytes and len(raw.rstrip(b"\r\n")) > max_line_bytes:
                raise FormatError(f"line longer than the cap of {max_line_bytes} bytes (benchmark.max_line_bytes)",
                                  path=path, line=lineno)
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise FormatError(f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at byte {exc.start + 1} of "
                                  "the line)", path=path, line=lineno) from None
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise FormatError(f"malformed JSON: {exc.msg} (column {exc.colno})", path=path, line=lineno) from None
            if not isinstance(obj, dict):
                raise FormatError(f"expected a JSON object, got {type(obj).__name__}", path=path, line=lineno)
            yield lineno, obj


def iter_tasks(path: str | Path, *, max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES) -> Iterator[Task]:
    """Stream tasks from a `benchmark.jsonl`; errors name file, line and field. Task ids must be unique: a
    repeated id is an error naming both lines (keyed by id, the later task would silently replace the
    earlier one and run twice)."""
    seen: dict[str, int] = {}
    for lineno, obj in iter_jsonl(path, max_line_bytes=max_line_bytes):
        try:
            task = Task.from_dict(obj)
        except FormatError as exc:
            raise exc.located(path, lineno) from None
        if task.id in seen:
            raise FormatError(f"duplicate task id {task.id!r} (first at {path}:{seen[task.id]})",
                              path=path, line=lineno)
        seen[task.id] = lineno
        yield task


def read_tasks(path: str | Path, *, max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES) -> list[Task]:
    return list(iter_tasks(path, max_line_bytes=max_line_bytes))


def dumps(record: Record | dict) -> str:
    """One JSONL line (no newline), UTF-8 kept as is like the original writer."""
    data = record.to_dict() if isinstance(record, Record) else record
    return json.dumps(data, ensure_ascii=False)


def write_jsonl(path: str | Path, records: Iterable[Record | dict]) -> int:
    """Write records one per line, atomically (temp file + rename); returns the count."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    n = 0
    with tmp.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(dumps(record) + "\n")
            n += 1
    tmp.replace(path)
    return n


write_tasks = write_jsonl


# ---------------------------------------------------------------------------------------------------------
# Judging records
# ---------------------------------------------------------------------------------------------------------

VERDICT_METHODS = ("rule", "embedding", "llm", "no_product")


@dataclass
class Verdict(Record):
    """The judgement of one rubric against one recommended product.

    `satisfied` is None when the rubric could not be scored (an LLM verdict that failed to parse): such a
    rubric is reported separately and never counted as wrong. `evidence` quotes what decided it.
    """

    rubric_id: str = ""
    type: str = ""
    info_source: str = "query"
    field: str = ""
    satisfied: bool | None = False
    method: str = "rule"
    evidence: str = ""
    reasoning: str = ""
    score: float | None = None


# ---------------------------------------------------------------------------------------------------------
# Episode records
# ---------------------------------------------------------------------------------------------------------

TERMINATIONS = ("recommended", "invalid_recommendation", "budget_exhausted", "no_tool_call", "agent_error",
                "infra_error")


@dataclass
class Step(Record):
    """One executed tool call (or a no-tool turn) of an episode, for analysis.

    `call_index` counts executed tool calls (1-based; 0 for a no-tool turn), which is what the budget caps.
    """

    index: int = 0                      # LLM turn number, 1-based
    call_index: int = 0
    tool: str | None = None
    arguments: Any = None               # the parsed arguments, or the raw string when it was not JSON
    is_error: bool = False
    error: str | None = None
    extra_calls: int = 0                # tool calls beyond the first in that turn (not executed)
    tool_latency_s: float = 0.0
    agent_latency_s: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    retries: int = 0
    revealed_slot: str | None = None    # ask_user: the slot this question revealed
    result_ids: list[str] = field(default_factory=list)   # product ids a search-like tool returned


@dataclass
class Trajectory(Record):
    """One episode: the original's predictions line (docs/original-harness.md §3.3) followed by ecab's own fields."""

    # -- the original predictions line
    id: str = ""
    intent_category: str = ""
    user_query: str = ""
    predicted_product_id: str | None = None
    reasoning: str = ""
    trajectory: list[dict[str, Any]] = field(default_factory=list)
    reasoning_trace: list[dict[str, Any]] = field(default_factory=list)
    model: str = ""
    total_tool_calls: int = 0
    ask_user_calls: int = 0
    get_profile_calls: int = 0
    finished: bool = False
    error: str | None = None
    # -- ecab
    unit: dict[str, Any] = field(default_factory=dict)      # task_id, model, budget, seed, trial
    termination: str = "budget_exhausted"
    recommended_id: str | None = None                       # what was recommended, valid or not
    recommend_call_index: int | None = None                 # executed calls when recommend_product ran
    steps: list[Step] = field(default_factory=list)
    tool_errors: int = 0
    revealed_slots: list[str] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)     # input/output/reasoning tokens, cost_usd
    wall_s: float = 0.0
    attempts: int = 1                                       # episode-level re-runs after infra errors

    OMIT_IF_NONE: ClassVar[tuple[str, ...]] = ("error",)

    @classmethod
    def _parse_field(cls, key, value, where):
        return _parse_list(value, Step, where) if key == "steps" else value


@dataclass
class Judgement(Record):
    """The verdicts of one episode (one line of `verdicts.jsonl`).

    correct = exact_product_match OR all_satisfied (docs/original-harness.md §4.4). A rubric whose verdict is unscored
    (satisfied None) makes `all_satisfied` None unless another rubric already failed; such episodes are
    reported as unscored, not counted wrong.
    """

    id: str = ""
    unit: dict[str, Any] = field(default_factory=dict)
    judge: str = "rules"
    predicted_product_id: str | None = None
    target_product_id: str = ""
    exact_product_match: bool = False
    all_satisfied: bool | None = False
    correct: bool | None = False
    verdicts: list[Verdict] = field(default_factory=list)
    runtime_error: bool = False
    error_message: str | None = None

    @classmethod
    def _parse_field(cls, key, value, where):
        return _parse_list(value, Verdict, where) if key == "verdicts" else value
