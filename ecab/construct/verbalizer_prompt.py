"""The LLM verbalizer's prompt: what ecab/construct/llm_verbalizer.py sends, and what the simulator's verbalizer
policy (construct/sim_policy.py) reads back. The system prompt starts with a marker so the policy can claim
the request; the user prompt holds the template query and the required phrases, one JSON string per line.
"""
from __future__ import annotations

import json

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


def user_prompt(query: str, phrases: list[str]) -> str:
    # one JSON string per line: unambiguous for the model and for the simulator's parser
    return "\n".join([QUERY_HEADER, query, "", PHRASES_HEADER, *(f"- {json.dumps(p, ensure_ascii=False)}"
                                                                   for p in phrases)])


def correction_note(issues: list[str]) -> str:
    listed = "\n".join(f"- {issue}" for issue in issues)
    return (f"Your rewrite cannot be used:\n{listed}\nRewrite the template query again: keep every required "
            "phrase verbatim, keep every requirement, add nothing else. Reply with the message only.")
