"""The LLM judge (`judge=llm`): an OpenAI-compatible model decides the rubrics the rules cannot judge well.
`LLMJudge` is its implementation of the judge protocol (protocol.py).

Which rubrics go to the LLM: the types in `judge.types` (default review_opinion) and, with
`judge.attribute_fallback`, the attribute_match rubrics the rules judge cannot settle, meaning the rules
verdict is unsatisfied AND the product has no value under the rubric's detail key (so only the free-text
features/description could decide it). Every other rubric keeps its rules verdict.

What changes from the original judge (docs/original-harness.md §4.2, §8 items 8, 12, 13):
- the judge sees the whole product (title, store, price, ratings, main_category, details, features,
  description) and, for review rubrics, up to 20 reviews in full (no 500-character cut), plus the voucher;
- results are matched by rubric_id, not by position; `satisfied` must be a JSON boolean (the exact
  strings "true"/"false" are read as such; "false" is never truthy). A reply with missing, extra or
  duplicate ids or a wrong type is retried with a note saying what was wrong, up to `max_attempts`;
  after that the rubrics are marked unscored (satisfied None, method llm), never counted wrong;
- replies are cached on disk (ecab/llm/cache.py, through the chat client): re-judging a run costs no calls;
- requests go through the model layer's chat client (ecab/llm/client.py): transport errors (429, 5xx,
  timeouts) are retried by its policy, `judge.concurrency` requests in flight.
- Exact-match episodes are still judged by default (judge_misjudged_count needs it); `skip_exact: true`
  keeps the rules verdicts for them and saves the calls.
"""
from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ecab.catalog.base import CatalogReader
from ecab.catalog.review_match import ReviewChecker
from ecab.config import ConfigError, LLMJudgeConfig, section
from ecab.core.rubric_types import ALL_RUBRIC_TYPES
from ecab.core.rubric_checks import no_product_verdict
from ecab.fields import lookup_detail
from ecab.judge.episode import make_judgement, recommended
from ecab.judge.rules import check_rubric
from ecab.llm.cache import ReplyCache
from ecab.llm.client import ChatClient, ChatError
from ecab.llm.settings import ModelSettings, model_settings
from ecab.schema import Judgement, Product, Review, Rubric, Task, Trajectory, Verdict, Voucher

LLM = "llm"
JUDGE_MARKER = "[ecab-judge]"      # first characters of the system prompt: lets the simulator recognise a judge call
MAX_REVIEWS = 20
GRANULARITIES = ("sample", "rubric")
LLM_TYPES = tuple(t.name for t in ALL_RUBRIC_TYPES)   # every type, the legacy one too (core/rubric_types.py)

JUDGE_SYSTEM_PROMPT = f"""{JUDGE_MARKER} You judge whether a product recommended by a shopping assistant meets a list of requirements (rubrics).

You receive the recommended product (title, store, price, ratings, main category, details, features, description), possibly some of its customer reviews, possibly a voucher, and the rubrics. Decide every rubric on the evidence given. Be strict but fair: mark a rubric satisfied only when the evidence clearly supports it; if the information is missing or ambiguous, it is NOT satisfied.

Rules per rubric type:
- attribute_match: the field names where the value should be (e.g. details.Material). Check the details first; if absent there, the features and description may state it. Accept an exact equivalent or a value that is more specific than the requirement ("made of TPU" satisfies "Thermoplastic Polyurethane"); never accept a broader or merely related value ("Personal Computer" does not satisfy "Laptop").
- negative_attribute: expected lists EXCLUDED values; satisfied only when the product's value at the field clearly differs from every excluded value (a partial overlap such as "blue-green" against "blue" is NOT satisfied). An empty list excludes nothing.
- numeric_range: expected is a number (exact), {{"min":X}}, {{"max":X}}, {{"min":X,"max":Y}}, [X, Y] (inclusive) or {{"value":X,"op":">"|">="|"<"|"<="|"=="}}; compare the product's value at the field.
- budget_match: apply the voucher rules to THIS product's price (a coupon applies when the price reaches its threshold; stacked coupons apply in order, the second to the reduced price; for tiers the highest tier reached applies) and check the final price is at most the expected budget. Without a voucher compare the list price.
- entity_match: the product must BE the named kind of thing; the same product type in other words is fine ("case for phone" matches "phone case"), a different category is not.
- store_match: the product comes from the named store.
- review_opinion: satisfied if at least one review of this product clearly expresses the same concrete claim as the opinion (wording may differ; a generic positive remark is not enough). With no reviews it is not satisfied.

Reply with a JSON object only, exactly one entry per rubric, identified by its rubric_id:
{{"results": [{{"rubric_id": "<id>", "satisfied": true, "reasoning": "<one short sentence>"}}]}}
"satisfied" must be the JSON boolean true or false."""


class JudgeReplyError(ValueError):
    """A judge reply that cannot be used: not JSON, not the expected shape, or not one result per rubric."""


# ---------------------------------------------------------------------------------------------------------
# Settings
# ---------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class JudgeSettings:
    """The `judge` group for judge=llm (conf/judge/llm.yaml): the judge's model and the judge's own knobs.

    `model` is the model layer's settings of `judge.model` as the judge calls it: its temperature
    (`judge.temperature`; none for a reasoning model), output limit (`judge.max_tokens`, else the model's),
    HTTP attempts per request (`judge.transport_attempts`), timeout (`judge.timeout_s`) and requests in
    flight (`judge.concurrency`). `max_replies` (`judge.max_attempts`) is how many replies are asked for when
    one does not match the rubric ids."""

    model: ModelSettings
    granularity: str
    types: tuple[str, ...]
    attribute_fallback: bool
    skip_exact: bool
    max_replies: int
    json_mode: bool
    cache: bool
    cache_dir: str | None
    max_reviews: int

    @property
    def model_id(self) -> str:
        return self.model.model_id

    def with_model(self, model: ModelSettings) -> "JudgeSettings":
        return dataclasses.replace(self, model=model)

    def describe(self) -> dict[str, Any]:
        """For the manifest: what judged, never the key."""
        return {"name": LLM, "model_id": self.model.model_id, "base_url": self.model.base_url,
                "temperature": self.model.temperature, "granularity": self.granularity, "types": list(self.types),
                "attribute_fallback": self.attribute_fallback, "skip_exact": self.skip_exact,
                "max_attempts": self.max_replies, "cache_dir": self.cache_dir}


# ---------------------------------------------------------------------------------------------------------
# The prompt
# ---------------------------------------------------------------------------------------------------------

def product_view(product: Product) -> dict[str, Any]:
    """Everything the judge may use about the product (the original hid description and main_category)."""
    return {"product_id": product.product_id, "title": product.title, "store": product.store,
            "main_category": product.main_category, "price": product.price,
            "average_rating": product.average_rating, "rating_number": product.rating_number,
            "details": product.details, "features": product.features, "description": product.description}


def judge_settings(judge: Any) -> JudgeSettings:
    """The judge=llm settings of the typed `judge` section (LLMJudgeConfig; a mapping gets conf/judge/llm.yaml's
    values for the keys it leaves out). One ConfigError line naming the bad key."""
    cfg = judge if isinstance(judge, LLMJudgeConfig) else section(LLMJudgeConfig, judge, defaults=["judge=llm"])
    if cfg.model in (None, ""):
        raise ConfigError("judge.model is required for judge=llm (a conf/model name or an inline block)")
    if cfg.granularity not in GRANULARITIES:
        raise ConfigError(f"judge.granularity must be one of {list(GRANULARITIES)}, got {cfg.granularity!r}")
    types = tuple(cfg.types or ())
    unknown = [t for t in types if t not in LLM_TYPES]
    if unknown:
        raise ConfigError(f"judge.types: unknown rubric type(s) {unknown}; expected some of {list(LLM_TYPES)}")
    model = model_settings(cfg.model, config_key="judge.model")
    model = model.for_role(temperature=cfg.temperature, max_output_tokens=cfg.max_tokens,
                           max_attempts=cfg.transport_attempts, timeout_s=float(cfg.timeout_s),
                           concurrency=cfg.concurrency)
    return JudgeSettings(model=model, granularity=cfg.granularity, types=types,
                         attribute_fallback=cfg.attribute_fallback, skip_exact=cfg.skip_exact,
                         max_replies=cfg.max_attempts, json_mode=cfg.json_mode, cache=cfg.cache,
                         cache_dir=cfg.cache_dir, max_reviews=cfg.max_reviews)


def rubric_line(rubric: Rubric) -> str:
    expected = rubric.opinion if rubric.type == "review_opinion" else rubric.expected_value
    return (f"- [{rubric.id}] ({rubric.type}) {rubric.description} | field: {rubric.field} | expected: "
            f"{json.dumps(expected, ensure_ascii=False)}")


def _one_line(text: str) -> str:
    return " ".join(str(text or "").split())


def user_prompt(product: Product, rubrics: Sequence[Rubric], *, reviews: Sequence[Review] | None = None,
                voucher: Voucher | None = None) -> str:
    lines = ["=== RECOMMENDED PRODUCT ===", json.dumps(product_view(product), indent=2, ensure_ascii=False)]
    if reviews is not None:
        lines += ["", f"=== REVIEWS ({len(reviews)}) ==="]
        # full text (no 500-character cut); line breaks folded so that one review is one line
        lines += [f"Review {i}: [{r.rating}*] {_one_line(r.title)} - {_one_line(r.text)}"
                  for i, r in enumerate(reviews, 1)]
    if voucher is not None:
        lines += ["", "=== VOUCHER / BUDGET CONTEXT ===", json.dumps(voucher.to_dict(), indent=2, ensure_ascii=False)]
    lines += ["", "=== RUBRICS ===", *(rubric_line(r) for r in rubrics), "",
              f"Answer for exactly these rubric_ids: {json.dumps([r.id for r in rubrics])}"]
    return "\n".join(lines)


def correction_note(error: str, rubric_ids: Sequence[str]) -> str:
    return (f"Your reply could not be used: {error}. Reply again with a JSON object only, "
            f'{{"results": [...]}}, with exactly one entry for each of these rubric_ids: '
            f"{json.dumps(list(rubric_ids))}, and \"satisfied\" as the JSON boolean true or false.")


# ---------------------------------------------------------------------------------------------------------
# Reading the reply
# ---------------------------------------------------------------------------------------------------------

def _boolean(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return None


def _flatten(results: list) -> list:
    flat = []
    for item in results:
        flat.extend(item if isinstance(item, list) else [item])
    return flat


def parse_results(content: str | None, rubric_ids: Sequence[str]) -> dict[str, tuple[bool, str]]:
    """{rubric_id: (satisfied, reasoning)} for exactly `rubric_ids`; JudgeReplyError says what is wrong."""
    if not content or not content.strip():
        raise JudgeReplyError("the reply is empty")
    text = content.strip()
    if text.startswith("```"):                       # a fenced block despite JSON mode
        text = text.strip("`").removeprefix("json").strip()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise JudgeReplyError(f"the reply is not valid JSON ({exc.msg})") from None
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(results, list):
        raise JudgeReplyError('the reply has no "results" list')
    wanted, found, seen, problems = set(rubric_ids), {}, set(), []
    for i, entry in enumerate(_flatten(results)):
        rid = entry.get("rubric_id") if isinstance(entry, dict) else None
        if not isinstance(rid, str) or not rid:
            problems.append(f"results[{i}] has no rubric_id")
            continue
        if rid not in wanted:
            problems.append(f"unknown rubric_id {rid!r}")
            continue
        if rid in seen:
            problems.append(f"rubric_id {rid!r} appears twice")
            continue
        seen.add(rid)
        satisfied = _boolean(entry.get("satisfied"))
        if satisfied is None:
            problems.append(f"rubric_id {rid!r}: satisfied is {entry.get('satisfied')!r}, not true or false")
            continue
        reasoning = entry.get("reasoning")
        found[rid] = (satisfied, reasoning if isinstance(reasoning, str) else "")
    missing = [rid for rid in rubric_ids if rid not in seen]
    if missing:
        problems.append(f"missing rubric_id(s) {missing}")
    if problems:
        raise JudgeReplyError("; ".join(problems))
    return found


# ---------------------------------------------------------------------------------------------------------
# Calling the model
# ---------------------------------------------------------------------------------------------------------

@dataclass
class Usage:
    """What judging cost: calls made, cache hits, tokens and dollars (replies served from cache cost 0)."""

    calls: int = 0
    cache_hits: int = 0
    retries: int = 0              # transport retries (429, 5xx, timeouts)
    invalid_replies: int = 0      # replies that failed validation and were asked again
    unscored: int = 0             # rubrics left unscored
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0

    def add(self, other: "Usage") -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def as_dict(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in self.__dataclass_fields__}
        out["cost_usd"] = round(self.cost_usd, 6)
        return out


@dataclass
class Decision:
    results: dict[str, tuple[bool, str]] | None      # None: unscored
    error: str = ""
    usage: Usage = field(default_factory=Usage)


class LLMJudge:
    """The LLM judge as a `Judge` (protocol.py): decides rubrics with an OpenAI-compatible model; one instance
    per judging pass (holds the chat client, whose gate bounds the requests in flight, and the reply cache).
    The rubrics it keeps for the rules are decided with `review_checker` (the process-wide one when None)."""

    name = LLM

    def __init__(self, settings: JudgeSettings, *, cache: ReplyCache | None = None, chat: ChatClient | None = None,
                 review_checker: ReviewChecker | None = None):
        self.settings = settings
        self.cache = cache
        self.chat = chat if chat is not None else ChatClient(settings.model, cache=cache)
        self.review_checker = review_checker
        self.usage = Usage()
        self._started = time.perf_counter()

    @property
    def model_name(self) -> str:
        return f"{LLM}:{self.settings.model_id}"

    async def aclose(self) -> None:
        await self.chat.aclose()

    # -- one request --------------------------------------------------------------------------------------

    async def _complete(self, messages: list[dict[str, str]], usage: Usage) -> str:
        """One reply's content (transport retries by the client's policy); JudgeReplyError when there is none."""
        try:
            reply = await self.chat.complete(self.chat.request(messages, json_mode=self.settings.json_mode))
        except ChatError as exc:   # any API failure leaves the rubrics unscored, never wrong
            usage.calls += exc.attempts
            usage.retries += len(exc.retries)
            raise JudgeReplyError(f"judge call failed: {exc.detail}") from None
        usage.calls += reply.attempts
        usage.retries += reply.log.count
        usage.input_tokens += reply.tokens.prompt
        usage.output_tokens += reply.tokens.completion
        usage.cost_usd += reply.cost_usd or 0.0     # an unpriced judge model: as before, $0 (priced separately)
        return reply.content

    async def decide(self, system: str, user: str, rubric_ids: Sequence[str]) -> Decision:
        """Ask until the reply matches `rubric_ids` (at most judge.max_attempts replies); cached when it does,
        under the first request's messages (`prompt`), so a re-judge finds it."""
        usage = Usage()
        prompt = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        messages = prompt
        if (hit := self.chat.cached(prompt)) is not None:
            try:
                usage.cache_hits += 1
                return Decision(parse_results(hit.content, rubric_ids), usage=usage)
            except JudgeReplyError:
                usage.cache_hits -= 1        # a stale entry (cannot happen unless edited): ask again
        error = ""
        for attempt in range(1, self.settings.max_replies + 1):
            before = (usage.input_tokens, usage.output_tokens, usage.cost_usd)
            try:
                content = await self._complete(messages, usage)
            except JudgeReplyError as exc:          # transport failure after the shared retry policy
                return Decision(None, str(exc), usage)
            try:
                results = parse_results(content, rubric_ids)
            except JudgeReplyError as exc:
                error = str(exc)
                usage.invalid_replies += 1
                messages = messages + [{"role": "assistant", "content": content},
                                       {"role": "user", "content": correction_note(error, rubric_ids)}]
                continue
            paid = {"input_tokens": usage.input_tokens - before[0], "output_tokens": usage.output_tokens - before[1],
                    "cost_usd": round(usage.cost_usd - before[2], 8), "attempts": attempt}
            self.chat.remember(prompt, content, paid)     # only a reply that matched every rubric
            return Decision(results, usage=usage)
        return Decision(None, f"unusable judge reply after {self.settings.max_replies} attempt(s): {error}", usage)

    # -- one episode ----------------------------------------------------------------------------------------

    def routes_to_llm(self, rubric: Rubric, product: Product, rules_verdict: Verdict | None) -> bool:
        if rubric.type in self.settings.types:
            return True
        if rubric.type == "attribute_match" and self.settings.attribute_fallback and rules_verdict is not None:
            return rules_verdict.satisfied is False and lookup_detail(product.details, rubric.field) is None
        return False

    async def judge_product(self, task: Task, product: Product | None, *, reviews: Sequence[Review] | None,
                            exact: bool) -> tuple[list[Verdict], Usage]:
        """One verdict per rubric in rubric order: LLM-routed rubrics by the model, the others by rules."""
        review_checker = self.review_checker
        if product is None:
            return [no_product_verdict(r) for r in task.rubrics], Usage()
        verdicts: dict[str, Verdict] = {}
        to_llm: list[Rubric] = []
        for rubric in task.rubrics:
            # review_opinion goes to the LLM without computing the (embedding) rules verdict first
            rules = None if rubric.type in self.settings.types else \
                check_rubric(rubric, product, voucher=task.voucher, reviews=list(reviews or []),
                             review_checker=review_checker)
            if (not exact or not self.settings.skip_exact) and self.routes_to_llm(rubric, product, rules):
                to_llm.append(rubric)
            elif rules is not None:
                verdicts[rubric.id] = rules
            else:   # skip_exact on an exact match: the rules judge keeps the rubric
                verdicts[rubric.id] = check_rubric(rubric, product, voucher=task.voucher, reviews=list(reviews or []),
                                                   review_checker=review_checker)
        usage = Usage()
        if to_llm:
            groups = [to_llm] if self.settings.granularity == "sample" else [[r] for r in to_llm]
            decided = await asyncio.gather(*(self._judge_group(task, product, reviews, g) for g in groups))
            for group_verdicts, group_usage in decided:
                usage.add(group_usage)
                verdicts.update(group_verdicts)
        self.usage.add(usage)
        return [verdicts[r.id] for r in task.rubrics], usage

    async def _judge_group(self, task: Task, product: Product, reviews: Sequence[Review] | None,
                           rubrics: list[Rubric]) -> tuple[dict[str, Verdict], Usage]:
        shown = list(reviews or [])[: self.settings.max_reviews] if any(r.type == "review_opinion" for r in rubrics) \
            else None
        prompt = user_prompt(product, rubrics, reviews=shown, voucher=task.voucher)
        decision = await self.decide(JUDGE_SYSTEM_PROMPT, prompt, [r.id for r in rubrics])
        out = {}
        for rubric in rubrics:
            if decision.results is None:
                decision.usage.unscored += 1
                satisfied, reasoning = None, f"unscored: {decision.error}"
            else:
                satisfied, reasoning = decision.results[rubric.id]
            out[rubric.id] = Verdict(rubric_id=rubric.id, type=rubric.type, info_source=rubric.info_source,
                                     field=rubric.field, satisfied=satisfied, method=LLM, reasoning=reasoning,
                                     evidence=f"llm judge {self.settings.model_id}")
        return out, decision.usage

    async def judge_episode(self, task: Task, trajectory: Trajectory, catalog: CatalogReader) -> Judgement:
        product, reviews = recommended(task, trajectory, catalog, review_limit=self.settings.max_reviews)
        predicted = trajectory.predicted_product_id
        exact = predicted is not None and predicted == task.target_product.product_id
        verdicts, usage = await self.judge_product(task, product, reviews=reviews, exact=exact)
        return make_judgement(task, trajectory, verdicts, judge_name=self.name,
                              extras={"judge_usage": usage.as_dict()})

    def describe(self) -> dict[str, Any]:
        """The settings (never the key), the usage totals and the reply cache's hits, for the manifest."""
        describe = self.settings.describe()
        describe["usage"] = self.usage.as_dict()
        describe["wall_s"] = round(time.perf_counter() - self._started, 3)
        if self.cache is not None:
            describe["cache"] = self.cache.describe()
        return describe


def open_cache(settings: JudgeSettings) -> ReplyCache | None:
    return ReplyCache(Path(settings.cache_dir)) if settings.cache and settings.cache_dir else None
