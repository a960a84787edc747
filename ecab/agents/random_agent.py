"""The floor: search with the shopper's words and recommend a random result."""
from __future__ import annotations

import random
import re

from ecab.agents.base import ScriptedAgent
from ecab.schema import Task

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9\-]*")


class RandomAgent(ScriptedAgent):
    name = "random"

    def __init__(self, task: Task, seed: int):
        super().__init__()
        self.query = task.user_query
        self.rng = random.Random(seed)

    def plan(self):
        words = _WORD.findall(self.query)
        # Broaden until something comes back: the whole query, then shorter and shorter prefixes.
        for n in (len(words), 8, 4, 2):
            result = yield "search_products", {"query": " ".join(words[:n])}
            hits = (result or {}).get("products") or []
            if hits:
                choice = self.rng.choice(hits)["product_id"]
                yield "recommend_product", {"product_id": choice, "reasoning": "random search result"}
                return
        yield "recommend_product", {"product_id": "NONE", "reasoning": "nothing found"}
