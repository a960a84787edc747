"""The persona verbalizer (docs/original-harness.md §5.8): product_requirements from the persona rubrics, plus
whitelisted, product-free noise."""
from __future__ import annotations

import random
from typing import Any, Iterable

from ecab.construct.draft import Draft
from ecab.construct.verbalize.tables import NOISE_POOLS
from ecab.core.rubric_types import type_of
from ecab.fields import SAFE_NOISE_FIELDS, persona_key
from ecab.schema import Persona, Rubric


def persona_noise(rng: random.Random) -> dict[str, dict[str, Any]]:
    """Whitelisted, product-free profile context (docs/original-harness.md §5.8), in SAFE_NOISE_FIELDS order."""
    noise: dict[str, dict[str, Any]] = {}
    for section, keys in SAFE_NOISE_FIELDS.items():
        noise[section] = {}
        for key in keys:
            pool = NOISE_POOLS[section][key]
            noise[section][key] = rng.sample(pool, rng.randint(2, 3)) if key == "hobbies" else rng.choice(pool)
    return noise


AVOID_KEY = "avoid_preferences"


def product_requirements(rubrics: Iterable[Rubric]) -> dict[str, Any]:
    """The persona mapping of docs/original-harness.md §5.8, by the rubric type's value_kind: excluded values
    (negatives) go to `avoid_preferences` WITH their values (the original extended the list by `[]`), a bare
    number threshold is a maximum for price, the value itself otherwise."""
    reqs: dict[str, Any] = {}
    for r in rubrics:
        if r.info_source != "persona":
            continue
        kind = type_of(r).value_kind
        if kind == "excluded":
            reqs.setdefault(AVOID_KEY, []).extend(str(v) for v in r.expected_value)
        elif kind == "range" and not isinstance(r.expected_value, (dict, list)):
            reqs[persona_key(r.field)] = {"max": r.expected_value} if r.field == "price" else r.expected_value
        else:
            reqs[persona_key(r.field)] = r.expected_value
    return reqs


def expected_requirement_keys(rubrics: Iterable[Rubric]) -> set[str]:
    return {AVOID_KEY if type_of(r).value_kind == "excluded" else persona_key(r.field)
            for r in rubrics if r.info_source == "persona"}


def build_persona(draft: Draft, rng: random.Random) -> Persona:
    noise = persona_noise(rng)
    return Persona(user_id=f"U_{rng.randint(10000, 99999)}", demographics=noise["demographics"],
                   lifestyle=noise["lifestyle"], shopping_habits=noise["shopping_habits"],
                   product_requirements=product_requirements(draft.rubrics))
