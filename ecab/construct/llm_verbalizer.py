"""The optional LLM verbalizer (`construct.verbalizer=llm`): a chat model rephrases the user query, nothing else.

The template verbalizer (verbalize.py) runs first and writes everything: the query, the query rubrics'
surfaces, the persona and the clarification script. Then an OpenAI-compatible model (`construct.llm.model`,
a conf/model yaml) rewrites ONLY `draft.user_query` into a more natural shopper message. The prompt shows the
template query and the phrases that must stay verbatim (every query rubric's `query_surface`) and forbids
adding any product fact, value, brand or number.

A rewrite is kept only when the validator's own query checks pass on it (`validate.check_query_alignment`,
`validate.check_leaks`) and it states no number the template query does not; otherwise the model is asked
once more with the failures quoted (`construct.llm.max_attempts` replies in all), and if it still fails the
template query stays. `draft.meta["verbalizer"]` says which ("llm" | "template_fallback"), with the attempts
and the failures. Rubrics, persona and clarification answers are never touched: the rubric lock check of
validation proves it.

Every reply is cached on disk with the LLM judge's cache (keyed by model id, temperature and the messages),
so a rebuild with the same config is byte-identical and calls no model. Transport errors are retried with the
shared policy of ecab.agents.retry (the openai client's own retries off); a call that still fails raises,
and the pipeline records the candidate as a generation_runtime_error.

The settings are resolved once, before any work, in `pipeline.Settings.from_cfg` (`resolve`): the API key is
checked (a missing one is one ConfigError naming its variable), and `model: sim` starts ecab's simulator in
this process, whose URL then reaches the spawned workers inside `Settings`.
"""
from __future__ import annotations

import atexit
import dataclasses
import functools
import json
import os
import random
import re
import threading
from dataclasses import dataclass
from typing import Any

from ecab.config import ConfigError
from ecab.construct import validate
from ecab.construct.draft import Draft
from ecab.construct.verbalize import verbalize as template_verbalize

LLM = "llm"
TEMPLATE_FALLBACK = "template_fallback"
VERBALIZER_MARKER = "[ecab-verbalizer]"   # first characters of the system prompt: the simulator recognises the call
QUERY_HEADER = "=== TEMPLATE QUERY ==="
PHRASES_HEADER = "=== REQUIRED PHRASES (each must appear verbatim) ==="

SYSTEM_PROMPT = f"""{VERBALIZER_MARKER} You rewrite a shopper's message to an online shopping assistant so that it reads as if a real person wrote it.

You receive a TEMPLATE QUERY, written mechanically from the shopper's requirements, and the REQUIRED PHRASES. Every required phrase must appear in your rewrite exactly as given (same words, same spelling); you may change everything around them: the opening, the sentence order, the connecting words.

Rules:
- Keep every requirement of the template query and every required phrase verbatim. Drop nothing.
- Add nothing: no product fact, feature, attribute value, brand, model name, number, price, rating or review claim that is not already in the template query. A short friendly remark (a greeting, a thank-you) is fine when it states no product fact.
- Write in the first person, as the shopper, as one short paragraph of plain text.
- Reply with the rewritten message only: no quotes, no preamble, no notes."""

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


# ---------------------------------------------------------------------------------------------------------
# Settings (resolved once in the parent, then pickled to the workers inside pipeline.Settings)
# ---------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LLMVerbalizerSettings:
    """Everything a process needs to call the model; hashable, so each process builds one client for it.
    The API key is not here: each process reads it from the variable `api_key_env` names."""

    model: str                      # the conf/model name (or "inline")
    model_id: str
    base_url: str | None            # for model=sim: the simulator the parent started
    api_key_env: str | None
    temperature: float | None       # None for reasoning models (model.reasoning_effort), like the judge
    max_tokens: int | None
    max_tokens_param: str
    reasoning_effort: str | None
    extra_body: str                 # JSON text (a dict would make the settings unhashable)
    timeout_s: float
    transport_attempts: int         # tenacity attempts per request (the model config's max_attempts)
    max_retry_wait_s: float
    backoff_base_s: float
    max_attempts: int               # replies asked for per query (construct.llm.max_attempts)
    cache_dir: str | None           # None: no disk cache

    def fingerprint_fields(self) -> dict[str, Any]:
        """What changes the generated text (never the simulator's port, the cache or the retry waits)."""
        return {"model_id": self.model_id, "temperature": self.temperature, "reasoning_effort": self.reasoning_effort,
                "extra_body": json.loads(self.extra_body), "max_attempts": self.max_attempts}


def _plain(value: Any) -> Any:
    from omegaconf import DictConfig, OmegaConf
    return OmegaConf.to_container(value, resolve=True) if isinstance(value, DictConfig) else value


def resolve(llm_cfg: Any) -> LLMVerbalizerSettings:
    """The `construct.llm` block, checked before any work: model config, API key, simulator.

    Model settings are read exactly as the LLM judge reads them (JudgeSettings.from_config); its error
    messages are re-keyed to construct.llm.
    """
    from ecab.judge.llm import JudgeSettings, load_model_config

    cfg = dict(_plain(llm_cfg) or {})
    cfg.setdefault("model", "sim")
    try:
        model = load_model_config(cfg["model"])
        judge = JudgeSettings.from_config({
            "model": model, "temperature": cfg.get("temperature", 0.0), "max_tokens": cfg.get("max_tokens"),
            "max_attempts": cfg.get("max_attempts", 2), "transport_attempts": int(model.get("max_attempts") or 6),
            "timeout_s": float(model.get("timeout_s") or 120.0), "json_mode": False,
            "cache": cfg.get("cache", True), "cache_dir": cfg.get("cache_dir")})
    except ConfigError as exc:
        raise ConfigError(str(exc).replace("judge.", "construct.llm.")) from None
    name = cfg["model"] if isinstance(cfg["model"], str) else str(model.get("name") or "inline")
    _check_api_key(model, name)
    base_url = judge.base_url or _simulator_url(judge)
    return LLMVerbalizerSettings(
        model=name,
        model_id=judge.model_id, base_url=base_url, api_key_env=model.get("api_key_env") or None,
        temperature=judge.temperature, max_tokens=judge.max_tokens, max_tokens_param=judge.max_tokens_param,
        reasoning_effort=judge.reasoning_effort, extra_body=json.dumps(judge.extra_body, sort_keys=True),
        timeout_s=judge.timeout_s, transport_attempts=judge.transport_attempts,
        max_retry_wait_s=judge.max_retry_wait_s, backoff_base_s=judge.backoff_base_s,
        max_attempts=judge.max_attempts, cache_dir=str(judge.cache_dir) if judge.cache and judge.cache_dir else None)


def _check_api_key(model: dict[str, Any], name: str) -> None:
    """The API-key rule of ecab.agents.keys, with advice that fits construction (its own names the agent's
    offline models, which cannot verbalize)."""
    from ecab.agents.keys import resolve_api_key

    variable = model.get("api_key_env")
    try:
        resolve_api_key(model)
    except ConfigError:
        if not variable or os.environ.get(str(variable), "").strip():
            raise                          # not a missing key (a key written into the config)
        raise ConfigError(f"construct.llm.model={name} needs the environment variable {variable} (its API key); "
                          f"export {variable}=... and run again, or verbalize offline with construct.llm.model=sim"
                          ) from None


# One simulator per distinct `sim` block and process: Settings.from_cfg runs several times per build
# (fingerprint, construct), and every call must point the workers at the same server.
_SIMULATORS: dict[str, Any] = {}
_SIMULATORS_LOCK = threading.Lock()


def _simulator_url(judge) -> str | None:
    """model=sim with base_url null: serve the simulator in this process (stopped at exit), as
    `python -m ecab.run model=sim` and the sim judge do; None for a real endpoint (the openai default)."""
    if not isinstance(judge.model.get("sim"), dict):
        return None
    from ecab.judge.dispatch import start_judge_simulator
    key = json.dumps(judge.model["sim"], sort_keys=True)
    with _SIMULATORS_LOCK:
        if key not in _SIMULATORS:
            server = start_judge_simulator(judge)       # sets judge.base_url
            atexit.register(server.stop)
            _SIMULATORS[key] = server
        return _SIMULATORS[key].base_url


# ---------------------------------------------------------------------------------------------------------
# Prompt and checks
# ---------------------------------------------------------------------------------------------------------

def required_phrases(draft: Draft) -> list[str]:
    """Every query rubric's surface, in rubric order, without repeats."""
    phrases: list[str] = []
    for r in draft.rubrics:
        surface = str(r.extras.get("query_surface") or "")
        if r.info_source == "query" and surface and surface not in phrases:
            phrases.append(surface)
    return phrases


def user_prompt(query: str, phrases: list[str]) -> str:
    # one JSON string per line: unambiguous for the model and for the simulator's parser
    return "\n".join([QUERY_HEADER, query, "", PHRASES_HEADER, *(f"- {json.dumps(p, ensure_ascii=False)}"
                                                                   for p in phrases)])


def correction_note(issues: list[str]) -> str:
    listed = "\n".join(f"- {issue}" for issue in issues)
    return (f"Your rewrite cannot be used:\n{listed}\nRewrite the template query again: keep every required "
            "phrase verbatim, keep every requirement, add nothing else. Reply with the message only.")


def clean_reply(content: str | None) -> str:
    """The message as one line: code fences, enclosing quotes and line breaks removed."""
    text = (content or "").strip()
    if text.startswith("```"):
        text = text.strip("`").strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1]
    return " ".join(text.split())


def added_numbers(template: str, rewrite: str) -> list[str]:
    """Numbers in the rewrite that the template query does not state (a new price, size, count...)."""
    known = set(_NUMBER.findall(template))
    return sorted({n for n in _NUMBER.findall(rewrite) if n not in known})


def rewrite_issues(draft: Draft, template_query: str, rewrite: str) -> list[str]:
    """Why a rewrite cannot replace the template query: the validator's query checks, run on a copy of the
    draft with the new query, plus numbers the template does not state. Empty when it can."""
    if not rewrite:
        return ["the reply is empty"]
    trial = dataclasses.replace(draft, user_query=rewrite)
    issues = [text for _, text in validate.check_query_alignment(trial) + validate.check_leaks(trial)]
    issues += [f"adds the number {n!r}, which the template query does not state"
               for n in added_numbers(template_query, rewrite)]
    return issues


# ---------------------------------------------------------------------------------------------------------
# The verbalizer
# ---------------------------------------------------------------------------------------------------------

class LLMVerbalizer:
    """`(draft, rng) -> None` like verbalize.verbalize; one per settings and process (client and cache are
    opened on first use)."""

    def __init__(self, settings: LLMVerbalizerSettings):
        self.settings = settings
        self._client = None
        self._cache = None
        self._api_key: str | None = None

    def __call__(self, draft: Draft, rng: random.Random) -> None:
        template_verbalize(draft, rng)
        template_query = draft.user_query
        messages = [{"role": "system", "content": SYSTEM_PROMPT},
                    {"role": "user", "content": user_prompt(template_query, required_phrases(draft))}]
        failures: list[list[str]] = []       # the issues of each rejected reply, in order
        accepted = False
        for _ in range(self.settings.max_attempts):
            content = self.reply(messages)
            rewrite = clean_reply(content)
            issues = rewrite_issues(draft, template_query, rewrite)
            if not issues:
                draft.user_query, accepted = rewrite, True
                break
            failures.append(issues)
            messages = messages + [{"role": "assistant", "content": content or ""},
                                   {"role": "user", "content": correction_note(issues)}]
        draft.meta.update(verbalizer=LLM if accepted else TEMPLATE_FALLBACK,
                          verbalizer_attempts=len(failures) + accepted, verbalizer_issues=failures,
                          template_query=template_query)

    # -- one reply -------------------------------------------------------------------------------------------

    def reply(self, messages: list[dict[str, str]]) -> str:
        """The model's reply to `messages`: from the disk cache when present, else asked and stored."""
        from ecab.judge.cache import cache_key

        s = self.settings
        cache = self.cache
        key = cache_key(s.model_id, s.temperature, messages)
        if cache is not None and (hit := cache.get(key)) is not None:
            return hit.content
        content, usage = self._complete(messages)
        if cache is not None:
            cache.put(key, s.model_id, content, usage)
        return content

    @property
    def cache(self):
        if self._cache is None and self.settings.cache_dir:
            from ecab.judge.cache import JudgeCache
            self._cache = JudgeCache(self.settings.cache_dir)
        return self._cache

    @property
    def client(self):
        if self._client is None:
            import openai

            from ecab.agents.keys import NO_KEY_PLACEHOLDER, resolve_api_key
            self._api_key = resolve_api_key({"api_key_env": self.settings.api_key_env, "name": self.settings.model})
            # max_retries=0: every retry is made (and counted) by the shared policy in _complete
            self._client = openai.OpenAI(api_key=self._api_key or NO_KEY_PLACEHOLDER, base_url=self.settings.base_url,
                                         max_retries=0, timeout=self.settings.timeout_s)
        return self._client

    def _request(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        s = self.settings
        kwargs: dict[str, Any] = {"model": s.model_id, "messages": messages}
        if s.temperature is not None:
            kwargs["temperature"] = s.temperature
        if s.max_tokens:
            kwargs[s.max_tokens_param] = int(s.max_tokens)
        if s.reasoning_effort:
            kwargs["reasoning_effort"] = s.reasoning_effort
        extra = json.loads(s.extra_body)
        if extra:
            kwargs["extra_body"] = extra
        return kwargs

    def _complete(self, messages: list[dict[str, str]]) -> tuple[str, dict[str, Any]]:
        """One chat completion under the shared retry policy; (content, usage) or a RuntimeError."""
        from ecab.agents.keys import scrub
        from ecab.agents.retry import describe_error

        s = self.settings
        client, kwargs = self.client, self._request(messages)
        try:
            for attempt in sync_retrying(max_attempts=s.transport_attempts, max_wait=s.max_retry_wait_s,
                                         backoff_base=s.backoff_base_s):
                with attempt:
                    response = client.chat.completions.create(**kwargs)
        except Exception as exc:  # noqa: BLE001 - re-raised with a secret-free message
            raise RuntimeError(f"LLM verbalizer call to {s.model_id} failed: "
                               f"{scrub(describe_error(exc), self._api_key)}") from None
        choice = response.choices[0] if response.choices else None
        content = (choice.message.content or "") if choice is not None else ""
        usage = response.usage
        paid = {"input_tokens": int(getattr(usage, "prompt_tokens", 0) or 0),
                "output_tokens": int(getattr(usage, "completion_tokens", 0) or 0)}
        return content, paid


def sync_retrying(**kwargs):
    """ecab's retry policy (`ecab.agents.retry.retrying`: what is retried, Retry-After, backoff) for a
    synchronous client: the same stop / wait / retry objects in a tenacity.Retrying, which sleeps with
    time.sleep instead of asyncio."""
    import tenacity

    from ecab.agents.retry import retrying

    policy = retrying(**kwargs)
    return tenacity.Retrying(stop=policy.stop, wait=policy.wait, retry=policy.retry,
                             before_sleep=policy.before_sleep, reraise=True)


@functools.lru_cache(maxsize=None)
def verbalizer_for(settings: LLMVerbalizerSettings) -> LLMVerbalizer:
    """The process's verbalizer for these settings (the pipeline asks once per candidate)."""
    return LLMVerbalizer(settings)
