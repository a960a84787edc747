"""The LLM verbalizer's reply policy for the simulator (ecab/sim): answers the LLM verbalizer's prompts
(construct/verbalizer_prompt.py) offline. `construct.llm.model=sim` starts the simulator with
`VerbalizerPolicy` (construct/llm_verbalizer.py).

It reads the template query and the required phrases back from the prompt and rewrites the query the way a
careful model would, deterministically: another opening ("I need" -> "I'm shopping for"), the sentences after
the opening in reverse order, and a closing thank-you that states no product fact. Every required phrase is
kept verbatim: a variant that would break one is dropped for a plainer one (the last, the template plus the
thank-you, always keeps them). A correction turn gets the same answer.

It claims a request by its system prompt's marker (`is_verbalizer_request`) and answers plain text, no tool
calls.
"""
from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from ecab.construct.verbalizer_prompt import PHRASES_HEADER, QUERY_HEADER, VERBALIZER_MARKER
from ecab.sim.policy import TextPolicy, system_prompt_starts_with

# First-sentence openings of the template verbalizer (verbalize.query._opening) and the sim's wording for each.
OPENING_SWAPS = [
    ("I need ", "I'm shopping for "),
    ("Find me ", "Help me find "),
    ("I'm looking for ", "I'm hunting for "),
    ("Please recommend ", "I'd like a recommendation for "),
    ("Can you find me ", "Could you track down "),
    ("Any suggestions for ", "Do you have any suggestions for "),
    ("Could you help me pick ", "Can you help me choose "),
    (", so I need ", ", so I'm after "),
    (", and I need ", ", and I'm shopping for "),
    (", so I'm looking for ", ", so I'm hunting for "),
]
# Closings with no product fact (and no word likely to be a catalog value).
CLOSINGS = ["Thanks in advance for your help!", "Thank you so much for helping me out.",
            "I appreciate you taking a look."]
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def is_verbalizer_request(messages: list[dict[str, Any]]) -> bool:
    """A chat-completions conversation from the LLM verbalizer: its system prompt starts with the marker."""
    return system_prompt_starts_with(messages, VERBALIZER_MARKER)


def parse_prompt(prompt: str) -> tuple[str, list[str]]:
    """(template query, required phrases) of a verbalizer prompt."""
    query_lines: list[str] = []
    phrases: list[str] = []
    section = None
    for line in prompt.splitlines():
        if line.strip() in (QUERY_HEADER, PHRASES_HEADER):
            section = line.strip()
        elif section == QUERY_HEADER and line.strip():
            query_lines.append(line.strip())
        elif section == PHRASES_HEADER and line.startswith("- "):
            phrases.append(json.loads(line[2:]))
    return " ".join(query_lines), phrases


def swap_opening(sentence: str) -> str:
    """The first opening of OPENING_SWAPS found in the sentence, reworded (unchanged when there is none)."""
    for old, new in OPENING_SWAPS:
        at = sentence.find(old)
        if at == 0 or (at > 0 and old.startswith(",")):
            return sentence[:at] + new + sentence[at + len(old):]
    return sentence


def rewrites(query: str) -> list[str]:
    """Candidate rewrites, boldest first; each ends with the same closing, chosen by the query's hash."""
    closing = CLOSINGS[int(hashlib.sha256(query.encode("utf-8")).hexdigest(), 16) % len(CLOSINGS)]
    sentences = _SENTENCE_END.split(query.strip())
    opening, rest = swap_opening(sentences[0]), sentences[1:]
    return [" ".join([opening, *reversed(rest), closing]),
            " ".join([opening, *rest, closing]),
            f"{query.strip()} {closing}"]


def verbalizer_reply(messages: list[dict[str, Any]]) -> str:
    """The rewritten query for a verbalizer conversation (the first user message holds the prompt)."""
    prompt = next((str(m.get("content") or "") for m in messages if m.get("role") == "user"), "")
    query, phrases = parse_prompt(prompt)
    candidates = rewrites(query)
    return next((c for c in candidates if all(p in c for p in phrases)), candidates[-1])


class VerbalizerPolicy(TextPolicy):
    """The simulator policy answering the LLM verbalizer's requests (the simulator's config is not needed)."""

    def __init__(self, config=None):
        # verbalizer_reply looked up at each call: a test may replace it
        super().__init__(lambda request: is_verbalizer_request(request.get("messages") or []),
                         lambda messages: verbalizer_reply(messages))
