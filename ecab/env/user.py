"""The simulated shopper behind `get_user_profile` and `ask_user` (docs/original-harness.md §2.2 tools 7 and 8).

`ScriptedUser` replays a task's `clarification_script` deterministically. The default matcher,
"original", is the released harness's rule, kept exactly so that scores mean the same thing:

1. every call consumes a turn, even a rejected one;
2. past `max_clarification_turns` the user refuses;
3. a question longer than 100 characters is rejected (exactly 100 is fine);
4. each not-yet-revealed slot scores +2 per trigger keyword that is a substring of the lowercased
   question, else +1 if some whitespace-split question word of >= 3 characters contains the keyword or
   is contained in it; the highest score wins, ties go to the earliest slot, a score of 0 reveals nothing;
5. at most one slot is revealed per question and a revealed slot never matches again.

"strict" is ecab's opt-in fix for docs/original-harness.md §8 item 16 (short words like "for" hitting "form factor"):
keywords must appear as whole words / phrases, and single words only count when they are at least 4 letters long
and equal a question word up to a plural "s". Selection, turn accounting and messages are unchanged.

The task is never mutated: the user works on its own copy of the slots, so one task can back any number
of concurrent episodes.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ecab import schema

MAX_QUESTION_CHARS = 100
DEFAULT_MAX_TURNS = 10
TOO_MANY_TURNS = "You have asked too much. I'm not interested in answering your questions anymore."
TOO_LONG = "There is over 100 chars in your question. I can't answer that. Shorten your question."
NO_PROFILE = "No user profile available"
MATCHERS = ("original", "strict")


@dataclass
class _SlotState:
    slot_id: str
    keywords: list[str]  # lowercased once, in script order
    user_response: str
    revealed: bool


@dataclass
class AskLogEntry:
    """One ask_user call: the question, the slot it revealed (or None) and why it got that answer."""

    question: str
    slot_id: str | None
    outcome: str  # "revealed" | "default" | "too_long" | "turn_limit"
    turn: int


# ---------------------------------------------------------------------------------------------------------
# Scoring rules (pure functions of one question and one slot's keywords)
# ---------------------------------------------------------------------------------------------------------

def original_score(question_lower: str, words: set[str], keywords: list[str]) -> int:
    """The released harness's lenient substring score (docs/original-harness.md §2.2 tool 8, step 4)."""
    score = 0
    for kw in keywords:
        if kw in question_lower:
            score += 2
        elif any(len(w) >= 3 and (kw in w or w in kw) for w in words):
            score += 1
    return score


_WORD = re.compile(r"[a-z0-9]+")


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


def strict_score(question_lower: str, words: set[str], keywords: list[str]) -> int:
    """Whole-word variant: a keyword phrase must occur on word boundaries (+2); otherwise a keyword word of
    >= 4 letters equal to a question word up to a plural "s" gives +1."""
    tokens = _WORD.findall(question_lower)
    text = " " + " ".join(tokens) + " "
    stems = {_singular(t) for t in tokens if len(t) >= 4}
    score = 0
    for kw in keywords:
        kw_tokens = _WORD.findall(kw)
        if not kw_tokens:
            continue
        if " " + " ".join(kw_tokens) + " " in text:
            score += 2
        elif any(len(t) >= 4 and _singular(t) in stems for t in kw_tokens):
            score += 1
    return score


_SCORERS = {"original": original_score, "strict": strict_score}


# ---------------------------------------------------------------------------------------------------------
# The per-episode user
# ---------------------------------------------------------------------------------------------------------

@dataclass
class ScriptedUser:
    """One episode's simulated user. Build a fresh one per episode (the original does the same)."""

    script: schema.ClarificationScript
    matcher: str = "original"
    turns_used: int = 0
    log: list[AskLogEntry] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.matcher not in _SCORERS:
            raise ValueError(f"unknown ask_user matcher {self.matcher!r}; expected one of {list(MATCHERS)}")
        self._score = _SCORERS[self.matcher]
        self._slots = [_SlotState(s.slot_id, [str(k).lower() for k in s.trigger_keywords], s.user_response,
                                  bool(s.revealed))
                       for s in self.script.clarification_slots]
        # The schema fills the original's fallback text (docs/original-harness.md §2.2 tool 8) when the key is absent;
        # an explicit null gets it too.
        self.default_response = self.script.default_response or schema.DEFAULT_USER_RESPONSE
        turns = self.script.max_clarification_turns
        self.max_turns = int(turns) if turns is not None else DEFAULT_MAX_TURNS

    @property
    def revealed_slot_ids(self) -> list[str]:
        """Revealed slots in script order (including any the script marked revealed up front)."""
        return [s.slot_id for s in self._slots if s.revealed]

    @property
    def turns_remaining(self) -> int:
        return max(self.max_turns - self.turns_used, 0)

    def reveals(self, question: str) -> str | None:
        """The slot id this question would reveal now, without changing any state (None: nothing)."""
        slot = self._best_slot(question)
        return slot.slot_id if slot is not None else None

    def ask(self, question: str) -> dict:
        """The ask_user tool: `{"user_response": str, "turns_remaining": int}`."""
        question = str(question)
        self.turns_used += 1
        if self.turns_used > self.max_turns:
            self.log.append(AskLogEntry(question, None, "turn_limit", self.turns_used))
            return {"user_response": TOO_MANY_TURNS, "turns_remaining": 0}
        remaining = self.max_turns - self.turns_used
        if len(question) > MAX_QUESTION_CHARS:
            self.log.append(AskLogEntry(question, None, "too_long", self.turns_used))
            return {"user_response": TOO_LONG, "turns_remaining": remaining}
        slot = self._best_slot(question)
        if slot is None:
            self.log.append(AskLogEntry(question, None, "default", self.turns_used))
            return {"user_response": self.default_response, "turns_remaining": remaining}
        slot.revealed = True
        self.log.append(AskLogEntry(question, slot.slot_id, "revealed", self.turns_used))
        return {"user_response": slot.user_response, "turns_remaining": remaining}

    def _best_slot(self, question: str) -> _SlotState | None:
        q = str(question).lower()
        words = set(q.split())
        best, best_score = None, 0
        for slot in self._slots:
            if slot.revealed:
                continue
            score = self._score(q, words, slot.keywords)
            if score > best_score:  # strictly greater: ties keep the earliest slot
                best, best_score = slot, score
        return best


def persona_is_empty(persona: schema.Persona | dict | None) -> bool:
    """True when the persona carries no information at all (the original tests the dict's truthiness;
    a parsed empty persona still has its keys, so look at the values)."""
    if persona is None:
        return True
    data = persona.to_dict() if isinstance(persona, schema.Record) else persona
    return not any(data.values())


def profile_response(persona: schema.Persona | dict | None) -> dict:
    """The get_user_profile tool: `{"profile": <persona dict>}` or the empty-profile message."""
    if persona is None or persona_is_empty(persona):
        return {"profile": {}, "message": NO_PROFILE}
    return {"profile": persona.to_dict() if isinstance(persona, schema.Record) else dict(persona)}
