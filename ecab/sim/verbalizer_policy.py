"""The simulator's verbalizer: answers the LLM verbalizer's prompts (ecab.construct.llm_verbalizer) offline.

It reads the template query and the required phrases back from the prompt and rewrites the query the way a
careful model would, deterministically: another opening ("I need" -> "I'm shopping for"), the sentences after
the opening in reverse order, and a closing thank-you that states no product fact. Every required phrase is
kept verbatim: a variant that would break one is dropped for a plainer one (the last, the template plus the
thank-you, always keeps them). A correction turn gets the same answer.

Hook for the sim server (in its request handler, next to the judge's):

    if is_verbalizer_request(messages): content = verbalizer_reply(messages)   # plain text, no tool calls
"""
from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from ecab.construct.llm_verbalizer import PHRASES_HEADER, QUERY_HEADER, VERBALIZER_MARKER

# First-sentence openings of the template verbalizer (verbalize._opening) and the sim's wording for each.
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
    first = messages[0] if messages else {}
    return first.get("role") == "system" and str(first.get("content") or "").startswith(VERBALIZER_MARKER)


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
