"""Value pools: the plausible values of every field, from the rows of the task file and of the distractors,
so that a sibling takes a value another product of its own kind carries; and the cents the file's real
prices end in, the one distribution every listing's price (the target's included) is rendered with."""
from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from ecab.core.rubric_types import type_of
from ecab.core.text import keyword_tokens
from ecab.fields import canonical_field
from ecab.schema import Product, Task


OPTION_SEPARATORS = re.compile(r"\s*[,;|/]\s*")


def canonical(field_name: str) -> str:
    return canonical_field(field_name.split(".", 1)[1] if field_name.startswith("details.") else field_name)


def split_options(value: Any) -> list[str]:
    if isinstance(value, (list, tuple)):
        return [o for v in value for o in split_options(v)]
    if not isinstance(value, str):
        return []
    return [o.strip() for o in OPTION_SEPARATORS.split(value) if 1 < len(o.strip()) <= 40]


@dataclass
class ValuePools:
    """The values each canonical detail field takes on other products: the task file's real rows and the
    distractors, indexed so a sibling takes a value another product of its own kind carries first."""

    real: list[tuple[str, frozenset, dict[str, list[str]]]] = field(default_factory=list)   # category, kind
    other: dict[tuple[str, str], list[tuple[frozenset, list[str]]]] = field(default_factory=dict)
    asked: dict[str, list[str]] = field(default_factory=dict)      # values the tasks' rubrics ask for
    stores: list[str] = field(default_factory=list)
    cents: list[int] = field(default_factory=list)                 # the file's real prices' cents, sorted

    @staticmethod
    def _options(product: Product) -> dict[str, list[str]]:
        return {canonical(k): split_options(v) for k, v in (product.details or {}).items()}

    @classmethod
    def build(cls, real_products: Iterable[Product], tasks: Iterable[Task],
              other_products: Iterable[Product] = ()) -> "ValuePools":
        pools = cls()
        stores: set[str] = set()
        tasks = list(tasks)
        kinds: dict[str, set[str]] = {}     # a real product's kind: the entity head word of its tasks
        for task in tasks:
            kinds.setdefault(task.target_product.product_id, set()).add(kin_token(task) or "")
        for product in real_products:
            if product.price is not None:
                pools.cents.append(int(round(float(product.price) * 100)) % 100)
            pools.real.append((product.main_category, frozenset(kinds.get(product.product_id, ())),
                               cls._options(product)))
            stores.add(product.store or product.brand)
        for task in tasks:
            for r in task.rubrics:
                if type_of(r).violation in ("value", "excluded") and r.field.startswith("details."):
                    values = r.expected_value if isinstance(r.expected_value, list) else [r.expected_value]
                    pools.asked.setdefault(canonical(r.field), []).extend(
                        v for v in values if isinstance(v, str) and v.strip())
        for product in other_products:
            tokens = frozenset(keyword_tokens(product.title))
            for key, options in cls._options(product).items():
                pools.other.setdefault((product.main_category, key), []).append((tokens, options))
            stores.add(product.store)
        pools.stores = sorted(s for s in stores if s)
        pools.cents.sort()
        return pools

    def values(self, category: str, field_name: str, rng: random.Random, kin: str | None = None) -> list[str]:
        """Candidate values of a field, in tiers (each in a seeded order): real products of the same kind
        (their title has the entity's head word `kin`), generated ones of the same kind and category, real
        ones of the category, generated ones of the category, then any real value or asked-for value."""
        name = canonical(field_name)
        other = self.other.get((category, name), [])
        tiers = [
            [o for c, t, opts in self.real if kin in t for o in opts.get(name, ())],
            [o for t, opts in other if kin in t for o in opts],
            [o for c, t, opts in self.real if c == category for o in opts.get(name, ())],
            [o for t, opts in other for o in opts],
            [o for c, t, opts in self.real for o in opts.get(name, ())] + self.asked.get(name, []),
        ]
        out: list[str] = []
        seen: set[str] = set()
        for tier in tiers:
            group = sorted(set(tier) - seen)
            rng.shuffle(group)
            out += group
            seen.update(group)
        return out


def kin_token(task: Task) -> str | None:
    """The head word of the task's entity phrase ("protector" for "screen protector"): a product's kind."""
    for r in task.rubrics:
        if r.type == "entity_match":
            tokens = keyword_tokens(r.extras.get("title_span") or r.expected_value)
            return tokens[-1] if tokens else None
    return None
