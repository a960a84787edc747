"""The LLM judge's reply policy for the simulator (ecab/sim): answers LLM-judge prompts (ecab.judge.llm)
deterministically, offline. `judge.model=sim` starts the simulator with `JudgePolicy` (judge/dispatch.py).

It reads back what the judge prompt shows (the product JSON, the reviews, the voucher, the rubric lines)
and decides each rubric with ecab's rules judge, except review_opinion, which it decides lexically (the
opinion's content words all occur in one review), so the sim judge needs no embedder. The reply has the
strict shape the LLM judge asks for: {"results": [{"rubric_id", "satisfied", "reasoning"}]}.

It claims a request by its JSON mode or its system prompt's marker (`is_judge_request`) and answers plain
text, no tool calls.
"""
from __future__ import annotations

import json
import re
from typing import Any

from ecab.judge.llm import JUDGE_MARKER
from ecab.core.text import keyword_tokens, normalize
from ecab.core.rubric_types import reads_reviews, rubric_verdict
from ecab.schema import Product, Rubric, Voucher
from ecab.sim.policy import TextPolicy, system_prompt_starts_with

PRODUCT_HEADER = "=== RECOMMENDED PRODUCT ==="
VOUCHER_HEADER = "=== VOUCHER / BUDGET CONTEXT ==="
_RUBRIC_LINE = re.compile(r"^- \[(?P<id>[^\]]+)\] \((?P<type>\w+)\) (?P<description>.*?) \| field: (?P<field>.*?)"
                          r" \| expected: (?P<expected>.*)$")
_REVIEW_LINE = re.compile(r"^Review \d+: \[[^\]]*\] (?P<body>.*)$")


def is_judge_request(body: dict[str, Any]) -> bool:
    """A chat-completions request from the LLM judge: JSON mode, or a system prompt with the judge marker."""
    if (body.get("response_format") or {}).get("type") == "json_object":
        return True
    return system_prompt_starts_with(body.get("messages") or [], JUDGE_MARKER)


def _json_after(text: str, header: str) -> Any:
    at = text.find(header)
    if at < 0:
        return None
    start = text.find("{", at + len(header))
    return json.JSONDecoder().raw_decode(text[start:])[0] if start >= 0 else None


def parse_prompt(prompt: str) -> tuple[Product | None, list[str], Voucher | None, list[Rubric]]:
    """(product, review lines, voucher, rubrics) shown in a judge prompt."""
    product_data, voucher_data = _json_after(prompt, PRODUCT_HEADER), _json_after(prompt, VOUCHER_HEADER)
    product = Product.from_dict(product_data) if isinstance(product_data, dict) else None
    voucher = Voucher.from_dict(voucher_data) if isinstance(voucher_data, dict) else None
    reviews, rubrics = [], []
    for line in prompt.splitlines():
        if (m := _REVIEW_LINE.match(line)) is not None:
            reviews.append(m.group("body"))
        elif (m := _RUBRIC_LINE.match(line)) is not None:
            expected = json.loads(m.group("expected"))
            rubrics.append(Rubric(id=m.group("id"), type=m.group("type"), field=m.group("field"),
                                  expected_value=expected, description=m.group("description")))
    return product, reviews, voucher, rubrics


def opinion_in_reviews(opinion: str, reviews: list[str]) -> str | None:
    """The first review whose words include every content word of the opinion."""
    wanted = set(keyword_tokens(normalize(opinion)))
    for review in reviews:
        if wanted and wanted <= set(keyword_tokens(normalize(review))):
            return review
    return None


def decide(product: Product | None, reviews: list[str], voucher: Voucher | None, rubric: Rubric) -> tuple[bool, str]:
    if product is None:
        return False, "No product shown."
    if reads_reviews(rubric):
        hit = opinion_in_reviews(rubric.opinion, reviews)
        return (True, f"A review says it: {hit[:120]!r}") if hit else (False, "No review states this opinion.")
    verdict = rubric_verdict(rubric, product, voucher=voucher)
    return bool(verdict.satisfied), verdict.reasoning


def judge_reply(messages: list[dict[str, Any]]) -> str:
    """The JSON reply to a judge conversation (the first user message holds the prompt; a correction turn
    gets the same, now well-formed, answer)."""
    prompt = next((str(m.get("content") or "") for m in messages if m.get("role") == "user"), "")
    product, reviews, voucher, rubrics = parse_prompt(prompt)
    results = []
    for rubric in rubrics:
        satisfied, reasoning = decide(product, reviews, voucher, rubric)
        results.append({"rubric_id": rubric.id, "satisfied": satisfied, "reasoning": reasoning})
    return json.dumps({"results": results}, ensure_ascii=False)


class JudgePolicy(TextPolicy):
    """The simulator policy answering the LLM judge's requests (the simulator's config is not needed)."""

    def __init__(self, config=None):
        super().__init__(is_judge_request, judge_reply)
