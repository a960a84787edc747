"""The optional LLM verbalizer (`construct.verbalizer=llm`): a chat model rephrases the user query, nothing else.

The template verbalizer (verbalize/) runs first and writes everything: the query, the query rubrics'
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

Requests go through the model layer's chat client (ecab/llm/client.py, its blocking path: construction's
workers have no event loop). Every reply is cached on disk by it (keyed by model id, temperature and the
messages), so a rebuild with the same config is byte-identical and calls no model. Transport errors are
retried by its policy; a call that still fails raises, and the pipeline records the candidate as a
generation_runtime_error.

The settings are resolved once, before any work, in `settings.construct_settings` (`resolve`): the API key is
checked (a missing one is one ConfigError naming its variable). When construction starts
(`settings.serve_verbalizer`, `simulated`), `model: sim` starts ecab's simulator in this process, with the
verbalizer's reply policy (construct/sim_policy.py); its URL then reaches the spawned workers inside `Settings`.
"""
from __future__ import annotations

import atexit
import dataclasses
import functools
import json
import random
import re
import threading
from dataclasses import dataclass
from typing import Any

from ecab.config import ConstructLLMConfig, section
from ecab.construct import validate
from ecab.construct.draft import Draft
from ecab.construct.verbalize import verbalize as template_verbalize
from ecab.construct.verbalizer_prompt import SYSTEM_PROMPT, correction_note, user_prompt
from ecab.llm.cache import ReplyCache
from ecab.llm.client import ChatClient, ChatError
from ecab.llm.settings import ModelSettings, model_settings

LLM = "llm"
TEMPLATE_FALLBACK = "template_fallback"
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


# ---------------------------------------------------------------------------------------------------------
# Settings (resolved once in the parent, then pickled to the workers inside settings.Settings)
# ---------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LLMVerbalizerSettings:
    """The `construct.llm` block: the verbalizer's model and its own knobs. Hashable, so each process builds
    one client for it. The API key is not here: each process reads it from the variable the model names.

    `model` is the model layer's settings of `construct.llm.model` as the verbalizer calls it: its temperature
    (`construct.llm.temperature`; none for a reasoning model), output limit, and, for model=sim, the URL of
    the simulator the parent started. `max_replies` (`construct.llm.max_attempts`) is how many replies are
    asked for per query."""

    model: ModelSettings
    max_replies: int
    cache_dir: str | None           # None: no disk cache

    def fingerprint_fields(self) -> dict[str, Any]:
        """What changes the generated text (never the simulator's port, the cache or the retry waits)."""
        m = self.model
        return {"model_id": m.model_id, "temperature": m.temperature, "reasoning_effort": m.reasoning_effort,
                "extra_body": m.extra_body, "max_attempts": self.max_replies}


def resolve(llm_cfg: Any) -> LLMVerbalizerSettings:
    """The typed `construct.llm` section (a mapping gets conf/config.yaml's construct.llm values for the keys it
    leaves out), checked before any work: model config and API key. No simulator is started here (`simulated`)."""
    from ecab.llm.keys import resolve_api_key

    cfg = llm_cfg if isinstance(llm_cfg, ConstructLLMConfig) else section(ConstructLLMConfig, llm_cfg or {}, defaults=[])
    model = model_settings(cfg.model, config_key="construct.llm.model")
    model = model.for_role(temperature=cfg.temperature, max_output_tokens=cfg.max_tokens)
    resolve_api_key(model, offline="verbalize offline with construct.llm.model=sim")
    cache_dir = cfg.cache_dir if cfg.cache else None
    return LLMVerbalizerSettings(model=model, max_replies=cfg.max_attempts,
                                 cache_dir=str(cache_dir) if cache_dir else None)


def simulated(settings: LLMVerbalizerSettings) -> LLMVerbalizerSettings:
    """The settings pointed at the simulator this process serves when the model is ecab's simulator without an
    endpoint (construct.llm.model=sim); the same settings otherwise."""
    model = _simulated(settings.model)
    return settings if model is settings.model else dataclasses.replace(settings, model=model)


# One simulator per distinct `sim` block and process: every build of the process (and the fingerprint's
# settings) points its workers at the same server.
_SIMULATORS: dict[str, Any] = {}
_SIMULATORS_LOCK = threading.Lock()


def _simulated(model: ModelSettings) -> ModelSettings:
    """model=sim with base_url null: the settings pointing at the simulator this process serves (stopped at
    exit) with the verbalizer's reply policy; any other model as it is."""
    if not model.simulated:
        return model
    from ecab.construct.sim_policy import VerbalizerPolicy
    from ecab.sim import serve_if_simulated
    key = json.dumps(model.sim, sort_keys=True)
    with _SIMULATORS_LOCK:
        if key not in _SIMULATORS:
            served, server = serve_if_simulated(model, [VerbalizerPolicy])
            if server is not None:
                atexit.register(server.stop)
            _SIMULATORS[key] = served.base_url
        return model.replace(base_url=_SIMULATORS[key])


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
        self._chat: ChatClient | None = None

    def __call__(self, draft: Draft, rng: random.Random) -> None:
        template_verbalize(draft, rng)
        template_query = draft.user_query
        messages = [{"role": "system", "content": SYSTEM_PROMPT},
                    {"role": "user", "content": user_prompt(template_query, required_phrases(draft))}]
        failures: list[list[str]] = []       # the issues of each rejected reply, in order
        accepted = False
        for _ in range(self.settings.max_replies):
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
        chat = self.chat
        if (hit := chat.cached(messages)) is not None:
            return hit.content
        try:
            reply = chat.complete_blocking(chat.request(messages))
        except ChatError as exc:
            raise RuntimeError(f"LLM verbalizer call to {chat.settings.model_id} failed: {exc.detail}") from None
        chat.remember(messages, reply.content, {"input_tokens": reply.tokens.prompt,
                                                "output_tokens": reply.tokens.completion,
                                                "cost_usd": reply.cost_usd})
        return reply.content

    @property
    def chat(self) -> ChatClient:
        """The chat client, opened on first use (in the worker process that verbalizes), with the reply cache."""
        if self._chat is None:
            cache = ReplyCache(self.settings.cache_dir) if self.settings.cache_dir else None
            self._chat = ChatClient(self.settings.model, cache=cache)
        return self._chat


@functools.lru_cache(maxsize=None)
def verbalizer_for(settings: LLMVerbalizerSettings) -> LLMVerbalizer:
    """The process's verbalizer for these settings (candidate.choose_verbalizer asks once per candidate)."""
    return LLMVerbalizer(simulated(settings))
