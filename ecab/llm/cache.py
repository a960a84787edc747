"""The disk cache of model replies: one SQLite file per cache directory. The chat client (ecab/llm/client.py)
reads and writes it; re-judging a run or rebuilding a benchmark costs no calls (docs/original-harness.md §8 item 8).

Key = sha256 of (model id, temperature, prompt): a different model, temperature or prompt (for the judge:
product, reviews, voucher, rubrics, rules text) is a different entry. What is stored is the caller's choice:
the LLM judge stores only replies that parsed and matched every rubric (a reply that ended unscored gets a
fresh chance on the next re-judge), the LLM verbalizer every reply. Each entry keeps the token counts (and
cost) the original call paid, for reporting what the cache saved.

SQLite in WAL mode with a busy timeout lets several processes (Ray workers, a second re-judge) read and
write the same file safely; a write is one short transaction.
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CACHE_FILE = "judge_cache.sqlite"   # the judge's name, kept so that existing caches stay valid
BUSY_TIMEOUT_MS = 30_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS replies (
    key TEXT PRIMARY KEY,
    model_id TEXT NOT NULL,
    content TEXT NOT NULL,
    usage TEXT NOT NULL,
    created_at REAL NOT NULL
)
"""


def cache_key(model_id: str, temperature: float | None, prompt: Any) -> str:
    """sha256 over the model id, the temperature and the prompt (any JSON-able value, e.g. the
    message list); key order inside the prompt is fixed by sort_keys so equal prompts hash equal."""
    payload = json.dumps({"model": model_id, "temperature": temperature, "prompt": prompt},
                         sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedReply:
    content: str
    usage: dict[str, Any]       # input_tokens, output_tokens, cost_usd of the call that produced it


class ReplyCache:
    """get/put of model replies by key; thread-safe within a process, process-safe through SQLite."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / CACHE_FILE
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False,
                                     isolation_level=None)
        self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        self._conn.execute("PRAGMA journal_mode = WAL")
        self._conn.execute("PRAGMA synchronous = NORMAL")
        self._conn.execute(_SCHEMA)
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> CachedReply | None:
        with self._lock:
            row = self._conn.execute("SELECT content, usage FROM replies WHERE key = ?", (key,)).fetchone()
            if row is None:
                self.misses += 1
                return None
            self.hits += 1
        return CachedReply(content=row[0], usage=json.loads(row[1]))

    def put(self, key: str, model_id: str, content: str, usage: dict[str, Any]) -> None:
        with self._lock:
            self._conn.execute("INSERT OR REPLACE INTO replies (key, model_id, content, usage, created_at) "
                               "VALUES (?, ?, ?, ?, ?)", (key, model_id, content, json.dumps(usage), time.time()))

    def __len__(self) -> int:
        with self._lock:
            return self._conn.execute("SELECT COUNT(*) FROM replies").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def describe(self) -> dict[str, Any]:
        return {"path": str(self.path), "hits": self.hits, "misses": self.misses}
