"""catalog.builder=ray (ecab/catalog/ray_build.py, docs/decisions.md#ray-data-builds) against real LanceDB, real
embeddings and a real local Ray: the same rows as the local builder, resumable after a SIGKILL."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import lancedb
import pytest

from ecab.catalog.build import CatalogConfigError, catalog_fingerprint, ensure_catalog, ray_build_options
from ecab.catalog.layout import META_FILE, PRODUCTS, REVIEWS, read_meta, shard_dir
from ecab.catalog.ray_build import STATE_FILE

# Starts a Ray of its own: one at a time under pytest-xdist (`--dist loadgroup`, the Makefile's XDIST).
# Slow (Ray, whole builds): make test-slow.
pytestmark = [pytest.mark.xdist_group("ray"), pytest.mark.slow]

# Small enough for the suite (a 10k comparison: python -m ecab.bench.build --products 10000); two shards so
# the routing is compared too, six batches so a build can be killed between them.
CATALOG = {"source": "synthetic", "products": 120, "seed": 3, "shards": 2, "batch_size": 20,
           "embed_workers": 2, "embed_cpus": 0}
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def ray_local():
    import ray

    from ecab.core.ray_connect import ensure_ray

    started = ensure_ray("local", num_cpus=2)   # never another process's cluster
    yield
    if started:
        ray.shutdown()


@pytest.fixture(scope="module")
def local_build(tmp_path_factory, embedder) -> Path:
    cache = tmp_path_factory.mktemp("local-cache")
    return Path(ensure_catalog({**CATALOG, "builder": "local"}, cache, embedder=embedder, progress=False).path)


def tables(path: Path) -> dict[tuple[int, str], list[dict]]:
    """Every shard's rows, in seq order."""
    meta = read_meta(path)
    out = {}
    for i in range(meta["shards"]):
        db = lancedb.connect(str(shard_dir(path, i)))
        for name in (PRODUCTS, REVIEWS):
            out[i, name] = db.open_table(name).to_arrow().sort_by("seq").to_pylist()
    return out


def assert_same_rows(expected: Path, got: Path) -> None:
    want, have = tables(expected), tables(got)
    assert want.keys() == have.keys()
    for key in want:
        assert len(have[key]) == len(want[key]), key
        for a, b in zip(want[key], have[key]):
            assert a == b, (key, a["seq"])   # vectors included: the same float32s, not merely close


def test_builder_is_not_in_the_fingerprint():
    assert catalog_fingerprint({**CATALOG, "builder": "ray", "embed_workers": 7}) == \
        catalog_fingerprint({**CATALOG, "builder": "local"})


@pytest.mark.parametrize("key,value", [("builder", "spark"), ("embed_device", "tpu"), ("embed_workers", 0),
                                       ("embed_cpus", "many")])
def test_bad_ray_settings_name_their_key(tmp_path, key, value):
    cfg = {**CATALOG, "builder": "ray", key: value}
    with pytest.raises(CatalogConfigError, match=rf"^catalog\.{key}(: | must be)"):
        ray_build_options(cfg)
        ensure_catalog(cfg, tmp_path, progress=False)
    assert not (tmp_path / "catalogs").exists() or not any((tmp_path / "catalogs").iterdir())


def test_ray_build_writes_the_local_builders_rows(tmp_path, ray_local, local_build):
    built = Path(ensure_catalog({**CATALOG, "builder": "ray"}, tmp_path, progress=False).path)
    assert built.name == local_build.name   # one fingerprint, one directory name
    assert_same_rows(local_build, built)
    meta = read_meta(built)
    assert meta["counts"] == read_meta(local_build)["counts"]
    assert meta["builder"]["name"] == "ray" and meta["builder"]["resumed_at_batch"] == 0
    assert meta["builder"]["runs"] == 1 and meta["build_seconds"] == meta["builder"]["this_run_s"]


def test_a_killed_ray_build_resumes_from_its_checkpoint(tmp_path, ray_local, local_build):
    import ray

    # The killed build joins the test's Ray by catalog.ray_address, as a build joins a cluster.
    address = ray.get_runtime_context().gcs_address
    script = textwrap.dedent(f"""
        from ecab.catalog.build import ensure_catalog
        ensure_catalog({{**{CATALOG!r}, "builder": "ray", "embed_workers": 1, "ray_address": {address!r}}},
                       {str(tmp_path)!r}, progress=False)
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_USAGE_STATS_ENABLED": "0"}
    out = tmp_path / "catalogs" / local_build.name
    work = out.parent / f".{out.name}.ray-build"
    child = subprocess.Popen([sys.executable, "-c", script], env=env, cwd=ROOT, start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # Generous: on a loaded machine the child's imports, its actor and two batches can take minutes.
        started, reached = time.time(), False
        while time.time() < started + 480 and child.poll() is None:
            state = work / STATE_FILE
            if state.exists() and json.loads(state.read_text())["batches"] >= 2:
                reached = True
                break
            time.sleep(0.1)
        assert child.poll() is None, f"the build ended (code {child.returncode}) before it could be killed"
        assert reached, f"no checkpoint of 2 batches after {time.time() - started:.0f} s"
    finally:
        os.killpg(child.pid, signal.SIGKILL)   # the driver: Ray ends its job's actors
        child.wait()
    assert not out.exists()   # the catalog appears complete or not at all
    done = json.loads((work / STATE_FILE).read_text())
    assert 2 <= done["batches"] < 6

    # An append that committed after the last checkpoint: resuming must drop it, not keep it twice.
    products = lancedb.connect(str(shard_dir(work, 0))).open_table(PRODUCTS)
    extra = products.to_arrow().slice(0, 1)
    extra = extra.set_column(0, "seq", [[done["seq_ends"][PRODUCTS] + 5]])
    products.add(extra)

    built = Path(ensure_catalog({**CATALOG, "builder": "ray", "embed_workers": 1}, tmp_path, progress=False).path)
    assert (built / META_FILE).exists() and not work.exists()
    meta = read_meta(built)
    assert meta["builder"]["resumed_at_batch"] == done["batches"] and meta["builder"]["runs"] == 2
    # the killed run's time up to its checkpoint counts: the build took both runs
    assert done["elapsed_s"] > 0 and meta["build_seconds"] == pytest.approx(
        done["elapsed_s"] + meta["builder"]["this_run_s"], abs=0.02)
    assert_same_rows(local_build, built)
