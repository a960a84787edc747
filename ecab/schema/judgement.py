"""Judging records: the verdict on one rubric and the judgement of one episode (a line of a run folder's
`verdicts.<judge>.jsonl.gz`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ecab.schema.record import Record, parse_list

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


@dataclass
class Judgement(Record):
    """The verdicts of one episode (one line of `verdicts.<judge>.jsonl.gz`).

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
        return parse_list(value, Verdict, where) if key == "verdicts" else value
