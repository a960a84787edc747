"""Session fixtures shared by the test files: the released samples (optional), the embedder (loaded once)
and small built catalogs.

Building a catalog costs seconds (embedding), so each one is built once per session in a tmp dir.

Released EComAgentBench samples are optional test data, never copied into the repository. Tests that need
them take the `released_samples` fixture (the path of a released benchmark.jsonl), found in this order:
$ECAB_RELEASED_SAMPLES, `../shared/real/benchmark_sample.jsonl` beside the clone, then the file the data-fetch
command writes (`ecab.data.released_samples_default_path()`). When none exists those tests are skipped with
one reason; with CI=true the session stops at once instead (CI has the samples; a skip there would hide a
broken set-up).
"""
from __future__ import annotations

import asyncio
import gc
import inspect
import itertools
import os
import sys
import threading
from pathlib import Path

import pytest

from ecab.catalog.base import CatalogBatch
from ecab.core.process_env import configure_process_env
from ecab.data import released_samples_default_path
from ecab.schema import Product, Review

REPO_ROOT = Path(__file__).resolve().parents[1]
RELEASED_SAMPLES_ENV = "ECAB_RELEASED_SAMPLES"
SIBLING_SAMPLES = REPO_ROOT.parent / "shared" / "real" / "benchmark_sample.jsonl"
RELEASED_SAMPLES_MISSING = (
    f"released EComAgentBench samples not found: set {RELEASED_SAMPLES_ENV} to a released benchmark.jsonl "
    f"(also looked for ../shared/real/benchmark_sample.jsonl and {released_samples_default_path()})")


def find_released_samples() -> Path | None:
    """$ECAB_RELEASED_SAMPLES (which must exist), else the first of the default places that exists, else None."""
    named = os.environ.get(RELEASED_SAMPLES_ENV, "").strip()
    if named:
        path = Path(named).expanduser()
        if not path.is_file():
            raise pytest.UsageError(f"{RELEASED_SAMPLES_ENV}={named}: no such file")
        return path
    return next((p for p in (SIBLING_SAMPLES, released_samples_default_path()) if p.is_file()), None)


_RELEASED = pytest.StashKey[object]()
_FINDER_LINE = inspect.getsourcelines(find_released_samples)[1]


def pytest_configure(config):
    configure_process_env()   # what `python -m ecab.run` sets first, before any test module imports Ray or HF
    config.stash[_RELEASED] = find_released_samples()
    if config.stash[_RELEASED] is None and os.environ.get("CI", "").strip().lower() in ("true", "1", "yes"):
        raise pytest.UsageError(f"CI=true and {RELEASED_SAMPLES_MISSING}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Report every skip for missing samples at one place (the finder), so pytest's summary folds them into
    one line (a skip raised in a fixture is otherwise reported at each test's own location)."""
    report = yield
    if report.skipped and isinstance(report.longrepr, tuple) and RELEASED_SAMPLES_MISSING in str(report.longrepr[2]):
        report.longrepr = (__file__, _FINDER_LINE, report.longrepr[2])
    return report


HANG_REPORT_MARGIN_S = 20   # before pytest-timeout's limit: when a test still runs then, say what it waits on


def _running_loops() -> list[asyncio.AbstractEventLoop]:
    return [o for o in gc.get_objects() if isinstance(o, asyncio.AbstractEventLoop) and o.is_running()]


def report_waiting_tasks() -> None:
    """Print every running event loop's tasks and what each awaits, to stderr (captured with the test's output):
    pytest-timeout dumps the threads, which show an idle loop but not which await never ended."""
    lines = [f"\n+++ {HANG_REPORT_MARGIN_S} s before the test's timeout: the asyncio tasks of each running loop +++"]
    for loop in _running_loops():
        try:
            tasks = list(asyncio.all_tasks(loop))
        except RuntimeError:          # the set changed while copied (another thread's loop): one more try
            tasks = list(asyncio.all_tasks(loop))
        lines.append(f"loop {loop!r}: {len(tasks)} task(s)")
        for task in tasks:
            lines.append(f"  {task.get_name()}: {' -> '.join(_await_chain(task.get_coro())) or '(done)'}")
    sys.stderr.write("\n".join(lines) + "\n")
    sys.stderr.flush()


def _await_chain(awaitable) -> list[str]:
    """Outermost first: each coroutine's function and line, down to what the innermost one awaits."""
    chain = []
    while awaitable is not None and len(chain) < 64:
        frame = getattr(awaitable, "cr_frame", None) or getattr(awaitable, "gi_frame", None) \
            or getattr(awaitable, "ag_frame", None)
        if frame is None:
            chain.append(repr(awaitable)[:200])   # a future, or a finished coroutine
            break
        chain.append(f"{frame.f_code.co_name} ({Path(frame.f_code.co_filename).name}:{frame.f_lineno})")
        awaitable = getattr(awaitable, "cr_await", None) or getattr(awaitable, "gi_yieldfrom", None) \
            or getattr(awaitable, "ag_await", None)
    return chain


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Arm `report_waiting_tasks` shortly before pytest-timeout fails the test (a hang then says which await);
    armed over setup, call and teardown, as pytest-timeout's own timer is."""
    marker = item.get_closest_marker("timeout")
    limit = float(marker.args[0]) if marker and marker.args else float(item.config.getini("timeout") or 0)
    timer = None
    if limit > 2 * HANG_REPORT_MARGIN_S:
        timer = threading.Timer(limit - HANG_REPORT_MARGIN_S, report_waiting_tasks)
        timer.daemon = True
        timer.start()
    try:
        return (yield)
    finally:
        if timer is not None:
            timer.cancel()


@pytest.hookimpl(tryfirst=True)   # before `-m` selects by marker
def pytest_collection_modifyitems(config, items):
    """tests/redteam/'s attack suites (kill and rerun whole runs at every step) are the slow tier, like the
    tests marked `slow` where they are defined (pyproject.toml's markers)."""
    for item in items:
        if item.path.is_relative_to(REPO_ROOT / "tests" / "redteam"):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def released_samples(pytestconfig) -> Path:
    """The released samples file; every test that needs it is skipped, with one reason, when there is none."""
    path = pytestconfig.stash[_RELEASED]
    if path is None:
        pytest.skip(RELEASED_SAMPLES_MISSING)
    return path


SMALL_CATALOG_PRODUCTS = 400   # synthetic products in `small_catalog` (plus the probes below)
SMALL_CATALOG_SEED = 7


def _probe(pid: str, title: str, store: str, price: float | None, rating: float, **details) -> Product:
    return Product.from_dict({
        "product_id": pid, "title": title, "main_category": "Probe Category", "store": store,
        "average_rating": rating, "rating_number": 42, "price": price,
        "features": [f"feature of {title}"], "description": [], "details": {"Brand": store, **details},
    })


def _review(rid: int, pid: str, rating: float, title: str, text: str) -> Review:
    return Review.from_dict({"review_id": rid, "product_id": pid, "rating": rating, "title": title, "text": text,
                             "helpful_vote": rid % 3, "verified_purchase": True, "timestamp": 1700000000 + rid})


# Hand-made products with known titles, mixed into the small catalog so tests can probe exact semantics.
PROBE_PRODUCTS = [
    _probe("PROBE-USBC", "Braidex USB-C Charger Cable 6ft Braided", "Braidex", 12.99, 4.6,
           **{"Connector Type": "USB Type C"}),
    _probe("PROBE-USBSPLIT", "Braidex Wall Charger USB Port with Type C Adapter", "Braidex", 18.50, 4.2),
    _probe("PROBE-CASE", "Slimfold Phone Case for Pixel 8 Matte Black", "Slimfold", 8.99, 4.0,
           Color="Black"),
    _probe("PROBE-CASES", "Slimfold Clear Phone Cases Bundle 3 Pack", "Slimfold", 14.99, 3.9),
    _probe("PROBE-SKILLET", "Forgewell Cast Iron Skillet 12 inch Pre-Seasoned", "Forgewell", 34.00, 4.8,
           Material="Cast Iron"),
    _probe("PROBE-CAFE", "Crème Brûlée Café Mug — 12 oz Stoneware", "Forgewell", None, 4.4),
]
PROBE_REVIEWS = [
    _review(900001, "PROBE-USBC", 5, "Fast charging", "Charges my laptop quickly, great braided cable."),
    _review(900002, "PROBE-USBC", 2, "Frayed", "The cable frayed after two weeks of use."),
    _review(900003, "PROBE-USBC", 4, "Works", "Works fine with my phone and tablet."),
    _review(900004, "PROBE-CASE", 4, "Nice case", "My old charging cable frayed but this case is great."),
    _review(900005, "PROBE-CASE", 5, "Slim", "Fits the phone perfectly and feels thin."),
]


def small_catalog_batches() -> list[CatalogBatch]:
    """The small catalog's source: synthetic products then the probes (a list, so it can be replayed)."""
    from ecab.catalog.synthetic import iter_synthetic

    synthetic = list(iter_synthetic(SMALL_CATALOG_PRODUCTS, SMALL_CATALOG_SEED, 200))
    return synthetic + [CatalogBatch(list(PROBE_PRODUCTS), list(PROBE_REVIEWS))]


@pytest.fixture(scope="session")
def embedder():
    from ecab.catalog.embed import get_embedder

    return get_embedder()


@pytest.fixture(scope="session")
def catalog_batches() -> list[CatalogBatch]:
    return small_catalog_batches()


def _build(tmp_path_factory, name: str, batches, embedder, shards: int):
    from ecab.catalog.facade import Catalog
    from ecab.catalog.writer import build_catalog

    out = tmp_path_factory.mktemp("catalogs") / name
    build_catalog(iter(batches), out, shards=shards, embedder=embedder, fingerprint=f"test-{name}",
                  progress=False)
    return Catalog.open(out, embedder=embedder)


def targets_catalog_of(tmp_path_factory, released_samples: Path, embedder, distractors: int):
    """catalog=targets for the released samples: their targets plus `distractors` synthetic ones, in LanceDB."""
    from ecab.catalog.targets import iter_targets

    batches = iter_targets(released_samples, n_distractors=distractors, seed=0)
    return _build(tmp_path_factory, f"targets-{distractors}", batches, embedder, shards=1)


@pytest.fixture(scope="session")
def released_tasks(released_samples):
    """The released samples' tasks, read once."""
    from ecab.schema import read_tasks

    return read_tasks(released_samples)


@pytest.fixture(scope="session")
def released_targets_catalog(tmp_path_factory, embedder, released_samples):
    """catalog=targets for the released samples with 300 synthetic distractors, built once per session."""
    return targets_catalog_of(tmp_path_factory, released_samples, embedder, distractors=300)


@pytest.fixture(scope="session")
def small_catalog(tmp_path_factory, catalog_batches, embedder):
    """~400 synthetic products + the probes, one shard, default mode hybrid."""
    return _build(tmp_path_factory, "small", catalog_batches, embedder, shards=1)


@pytest.fixture(scope="session")
def small_catalog_sharded(tmp_path_factory, catalog_batches, embedder):
    """The same products as `small_catalog`, split over two shards."""
    return _build(tmp_path_factory, "small-2shards", catalog_batches, embedder, shards=2)


def all_products(catalog) -> list[Product]:
    return list(itertools.chain.from_iterable(catalog.iter_products(256)))


# A tiny catalog for the validity audit (tests/test_validity.py): one target and products that differ from
# it in known ways, so each rubric of the hand-made tasks there is, or is not, load-bearing by construction.
AUDIT_CATEGORY = "Audit Category"
AUDIT_OPINION = "the bristles stay soft after many washes"


def _audit_product(pid: str, title: str = "Glowbrush Silicone Face Mask Brush 2 Pack for Cream Masks", *,
                   rating: float = 4.6, count: int = 120, price: float | None = 9.99, **details) -> Product:
    base = {"Brand": "Glowbrush", "Material": "Silicone", "Color": "Pink", "Item Form": "Cream"}
    return Product.from_dict({
        "product_id": pid, "title": title, "main_category": AUDIT_CATEGORY, "store": "Glowbrush",
        "average_rating": rating, "rating_number": count, "price": price,
        "features": ["Soft flexible head for even application"], "description": [],
        "details": {**base, **details}})


AUDIT_PRODUCTS = [
    _audit_product("AUD-TARGET"),
    _audit_product("AUD-BLUE", Color="Blue"),                        # differs only in Color
    _audit_product("AUD-LOWRATED", rating=3.9),                      # differs only in average_rating
    _audit_product("AUD-NOREVIEW"),                                  # its reviews lack the opinion
    _audit_product("AUD-NYLON-BLUE", Material="Nylon", Color="Blue"),  # differs in Material AND Color
    _audit_product("AUD-SPONGE", "Glowbrush Makeup Sponge Blender Set", Material="Foam"),
]
AUDIT_REVIEWS = [
    _review(800001, "AUD-TARGET", 5, "Lovely", f"After a month of use {AUDIT_OPINION}. Great for clay masks."),
    _review(800002, "AUD-TARGET", 4, "Good", "Arrived quickly and works as described."),
    _review(800003, "AUD-BLUE", 5, "Lovely", f"Honestly {AUDIT_OPINION}, would buy again."),
    _review(800004, "AUD-LOWRATED", 5, "Nice", f"I can say {AUDIT_OPINION}."),
    _review(800005, "AUD-NOREVIEW", 2, "Meh", "The box was crushed when it arrived and shipping took two weeks."),
    _review(800006, "AUD-NYLON-BLUE", 5, "Soft", f"Yes, {AUDIT_OPINION}."),
    _review(800007, "AUD-SPONGE", 4, "Fine", "Blends foundation evenly."),
]


@pytest.fixture(scope="session")
def audit_catalog(tmp_path_factory, embedder):
    """AUDIT_PRODUCTS (and their reviews) plus 60 synthetic products of other categories, one shard."""
    from ecab.catalog.synthetic import iter_synthetic

    batches = list(iter_synthetic(60, 3, 60)) + [CatalogBatch(list(AUDIT_PRODUCTS), list(AUDIT_REVIEWS))]
    return _build(tmp_path_factory, "audit", batches, embedder, shards=1)


# Two small finished runs on the same generated tasks, for the report's tests (tests/view/).
# 2,000 products: on 600 the heuristic finds every target, and the report's tests need wrong episodes too.
VIEW_RUN_CONFIG = ["catalog.products=2000", "benchmark.n_per_intent=1", "trials=2", "run.progress=false"]


@pytest.fixture(scope="session")
def view_runs(tmp_path_factory) -> dict[str, Path | str]:
    """{"heuristic": run folder, "random": run folder, "heuristic_log": what the command printed}: 8 tasks x
    2 trials each, run once per session. The heuristic run goes through the command line (`python -m
    ecab.run`, as `make run` does, so its last line names the report), the random one through `main_job`."""
    import subprocess
    import sys

    from ecab.config import load_config
    from ecab.run import main_job

    cache, runs = tmp_path_factory.mktemp("view-cache"), tmp_path_factory.mktemp("view-runs")
    common = [*VIEW_RUN_CONFIG, f"cache_dir={cache}", f"run.dir={runs}"]
    cli = subprocess.run([sys.executable, "-m", "ecab.run", *common, "model=heuristic", "run.name=heuristic"],
                         cwd=REPO_ROOT, capture_output=True, text=True, timeout=1200)
    assert cli.returncode == 0, cli.stderr[-3000:]
    main_job(load_config([*common, "model=random", "run.name=random"]))
    return {"heuristic": runs / "heuristic", "random": runs / "random", "heuristic_log": cli.stdout}


# A small generated benchmark (600 products, 2 tasks per intent): `python -m ecab.run`'s end-to-end tests share
# its cache, so the catalog and the tasks are built once per session.
SMALL_RUN = ["catalog.products=600", "benchmark.n_per_intent=2", "run.progress=false"]


@pytest.fixture(scope="session")
def small_run_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("ecab-small-run-cache")


def untimed(value):
    """A summary without what differs between identical runs (timing, the runner's own counts): two runs of the
    same units compare equal on it."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if k not in ("wall_s", "latency", "runner", "seconds")}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


class _VirtualTimeSelector:
    """Wraps an event loop's selector: when nothing is ready, instead of blocking until the next timer it moves
    the loop's virtual clock to that timer (see `run_in_virtual_time`)."""

    def __init__(self, selector, loop: "VirtualTimeLoop"):
        self._selector, self._loop = selector, loop

    def select(self, timeout=None):
        events = self._selector.select(0 if timeout is not None else None)
        if not events and timeout:
            self._loop.now += timeout
        return events

    def __getattr__(self, name):
        return getattr(self._selector, name)


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """An event loop whose time() is virtual: sleeps and timers complete at once, in the right order, and the
    clock reads exactly what they add up to, however loaded the machine is."""

    def __init__(self):
        super().__init__()
        self.now = 0.0
        self._selector = _VirtualTimeSelector(self._selector, self)
        self._clock_resolution = 1e-9

    def time(self) -> float:
        return self.now


def run_in_virtual_time(main):
    """asyncio.run(main) on a VirtualTimeLoop: code under test takes `clock=asyncio.get_running_loop().time`."""
    with asyncio.Runner(loop_factory=VirtualTimeLoop) as runner:
        return runner.run(main)
