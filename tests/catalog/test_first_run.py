"""The first-run notice (ecab/catalog/first_run.py): one line before building what the cache lacks, none when
everything is cached."""
from __future__ import annotations

from ecab.catalog.build import catalog_dir, catalog_config, ensure_catalog, missing_parts
from ecab.construct.benchmark_cache import ensure_benchmark
from ecab.fields import INTENTS

SMALL = {"source": "synthetic", "products": 120, "seed": 3}


def test_catalog_notice_on_a_cold_cache_only(tmp_path, embedder, capsys):
    ensure_catalog(SMALL, tmp_path, embedder=embedder, progress=False)
    cold = capsys.readouterr().out
    assert cold.count("first run:") == 1
    assert "building the synthetic catalog (120 products, ~" in cold and str(tmp_path) in cold
    assert "later runs reuse them" in cold
    ensure_catalog(SMALL, tmp_path, embedder=embedder, progress=False)
    assert "first run" not in capsys.readouterr().out


def test_the_query_encoder_is_announced_when_not_exported(tmp_path, monkeypatch):
    monkeypatch.setenv("ECAB_CACHE_DIR", str(tmp_path))         # a cache without the exported graph
    cfg = catalog_config(SMALL)
    parts = missing_parts(cfg, catalog_dir(cfg, tmp_path), embedder=None)
    assert [p.split(" (")[0] for p in parts] == ["the synthetic catalog", "the ONNX query encoder"]


def test_benchmark_notice_on_a_cold_cache_only(small_catalog, tmp_path, capsys):
    conf = {"construct": {"seed": 0, "n_per_intent": 1, "intents": [INTENTS[0]], "max_matches": 3, "workers": 1,
                          "max_attempts": 3, "verbalizer": "template"}}
    ensure_benchmark(conf, small_catalog, tmp_path, progress=False)
    cold = capsys.readouterr().out
    assert cold.count("first run:") == 1 and "the benchmark (1 task, ~" in cold
    ensure_benchmark(conf, small_catalog, tmp_path, progress=False)
    assert "first run" not in capsys.readouterr().out


def test_the_encoder_export_uses_torchscript_and_falls_back_to_dynamo(tmp_path, monkeypatch):
    """The first run's encoder export takes the fast TorchScript exporter; a torch without it still exports."""
    from ecab.catalog import onnx_encoder

    calls = []
    monkeypatch.setattr(onnx_encoder, "_export_torchscript", lambda *a: calls.append("torchscript"))
    monkeypatch.setattr(onnx_encoder, "_export_dynamo", lambda *a: calls.append("dynamo"))
    onnx_encoder._export(None, None, 8, tmp_path / "graph.onnx")
    assert calls == ["torchscript"]

    def gone(*args):
        calls.append("torchscript")
        (tmp_path / "graph.onnx").write_bytes(b"partial")
        raise RuntimeError("no TorchScript exporter")

    calls.clear()
    monkeypatch.setattr(onnx_encoder, "_export_torchscript", gone)
    onnx_encoder._export(None, None, 8, tmp_path / "graph.onnx")
    assert calls == ["torchscript", "dynamo"] and not (tmp_path / "graph.onnx").exists()
