"""Every seed ecab derives from a config, in one place.

Seeds come from sha256 over their parts, never from Python's per-process salted `hash`, so the same config
gives the same episodes and the same generated tasks on any machine and in any process. Each recipe below
(separator, width) is the one the existing runs and benchmarks were made with: changing one changes every
episode seed or every generated task, so a new need gets a new function, never an edit.
"""
from __future__ import annotations

import hashlib
import random
from typing import Any


def _sha256_u64(text: str) -> int:
    """The first 8 bytes of sha256(text), big-endian."""
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


# ------------------------------------------------------------------------------------------------ episodes

def episode_seed(base_seed: int, task_id: str, trial: int) -> int:
    """The seed of one episode (what the agent draws from): `(seed, task id, trial)` joined by \\x1f,
    63 bits so it is a non-negative signed 64-bit integer."""
    return _sha256_u64("\x1f".join(str(p) for p in (base_seed, task_id, trial))) & 0x7FFF_FFFF_FFFF_FFFF


# ------------------------------------------------------------------------------------------- construction

def construction_seed(*parts: Any) -> int:
    """A 64-bit seed for task construction: the parts joined by "|"."""
    return _sha256_u64("|".join(str(p) for p in parts))


def task_rng(seed: int, intent: str, index: int, attempt: int) -> random.Random:
    """What attempt `attempt` at candidate `index` of `intent` draws from (construct/candidate.py)."""
    return random.Random(construction_seed("task", seed, intent, index, attempt))


def candidate_order_rng(seed: int, intent: str) -> random.Random:
    """What orders an intent's candidate pool across categories (construct/sample.py::interleave_by_category)."""
    return random.Random(construction_seed("pool", seed, intent))


def rubric_rng(sample_id: str) -> random.Random:
    """The rubric plan's draws when build_rubrics is called without a generator (construct/rubrics.py)."""
    return random.Random(construction_seed("rubrics", sample_id))
