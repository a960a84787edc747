"""The search benchmark's verdicts and its replica-memory probe (ecab/bench/search.py)."""
import pytest

from ecab.bench.search import Row, measure, replica_memory, target_verdict, timed_and_warmup_queries


def hybrid(p50_ms: float, qps_1: float, qps_n: float) -> Row:
    return Row("lance hybrid", p50_ms, 2 * p50_ms, qps_1, qps_n, hit_at_20=0.5, mean_total=10.0)


def test_each_size_is_held_to_the_largest_target_it_reaches():
    assert target_verdict(10_000, 8, hybrid(30.0, 10.0, 10.0)) is None               # below every target
    at_100k = target_verdict(100_000, 8, hybrid(12.0, 110.0, 90.0))
    assert at_100k.startswith("target at 100,000: hybrid p50 <= 15 ms: MET")
    assert "hybrid >= 100 q/s with the better of 1 client and 8: MET (110.0 q/s)" in at_100k
    # At 1M the q/s must come from the 8 clients: 1 client's 90 q/s does not count.
    at_1m = target_verdict(1_000_000, 8, hybrid(19.0, 90.0, 70.0))
    assert "hybrid p50 <= 20 ms: MET (19.00 ms)" in at_1m
    assert "hybrid >= 80 q/s with 8 clients: NOT MET (70.0 q/s)" in at_1m
    assert "NOT MET (21.00 ms)" in target_verdict(3_700_000, 8, hybrid(21.0, 90.0, 85.0))


@pytest.mark.slow
def test_replica_memory_is_a_fresh_process_opening_and_serving_the_catalog(small_catalog):
    opened, peak = replica_memory(small_catalog.path, ["wireless charger", "black face mask brush"], 2)
    assert 50 < opened <= peak < 4096        # an interpreter with lancedb and the query encoder loaded


def test_review_benchmark_times_rows_lazy_and_cached_searches(small_catalog, monkeypatch, capsys):
    from ecab.bench import reviews

    monkeypatch.setattr("ecab.catalog.build.ensure_catalog", lambda *args, **kwargs: small_catalog)
    small_catalog.clear_caches()
    reviews.main(["--products", "3"])
    out = capsys.readouterr().out
    assert [line.split()[0] for line in out.splitlines()[2:5]] == ["rows", "lazy", "cached"]
    assert "review texts/s" in out and "Precomputing every review vector at build time" in out


def test_warm_up_queries_run_untimed_before_the_cold_timed_ones(small_catalog):
    """The index is warm and the timed texts are cold: warm-up texts are other queries, run before the cache is
    cleared, and never among the timed ones."""
    queries, warm = timed_and_warmup_queries(small_catalog, 20, 10)
    assert len(warm) == 10 and not set(warm) & {q.text for q in queries}
    calls = []
    run = lambda text: calls.append(text) or ([], 0)
    measure("probe", run, queries, 2, clear_cache=lambda: calls.append("<cleared>"), warmup=warm)
    assert calls[:11] == warm + ["<cleared>"]
    assert calls[11:31] == [q.text for q in queries]          # the timed pass, in order, after the warm-up
