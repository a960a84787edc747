"""The throughput benchmark's measurements (ecab/bench/throughput.py): the figures it prints are only as good
as these windows and counters."""
import os
import subprocess
import sys
import time

from ecab.bench.process_tree import tree_cpu_seconds, tree_rss_mb
from ecab.bench.throughput import (CpuTimeline, PeakRss, admitted_rate, search_p95s, steady_end,
                                   steady_rate)
from ecab.schema import Step, Trajectory


def test_steady_state_is_while_every_slot_was_busy():
    # 10 units, C=4: one finish per second; the last 4 finishes are the tail (slots idling).
    finishes = [float(t) for t in range(10)]
    assert steady_rate(finishes, 4) == 5 / 5.0           # finishes 0..5: 5 episodes in 5 s
    assert steady_end(finishes, 4) == 5.0


def test_admitted_rate_counts_from_the_first_request_until_the_tail():
    # 120 admissions per second for 10 s, then 20 per second for 5 s of ramp-down (t in tenths of a second).
    bins = {str(1000 + ds): 12 for ds in range(100)}
    bins.update({str(1100 + ds): 2 for ds in range(50)})
    assert admitted_rate(bins, until=110.0) == 120.0       # the ramp-down is left out
    assert admitted_rate(bins, until=115.0) == (1200 + 100) / 15.0
    assert admitted_rate({}, until=110.0) == 0.0


def test_peak_is_the_highest_sample_inside_the_block_only():
    resident = {"mb": 100.0}
    with PeakRss(measure=lambda: resident["mb"]) as big:
        resident["mb"] = 164.0
        wait_for_samples(big, 3)
        resident["mb"] = 100.0
    with PeakRss(measure=lambda: resident["mb"]) as small:
        pass
    assert big.growth_mb == 64.0
    assert small.growth_mb == 0.0                  # a process-lifetime peak would still say 64


# In a fresh interpreter: a long-lived process's allocator may hand a new 64 MB block pages that are already
# resident (freed by earlier work, never returned), and then its resident memory rightly does not grow.
REAL_RSS = """
import time
from ecab.bench.throughput import PeakRss
with PeakRss() as big:
    block = bytearray(64 * 2**20)
    block[::4096] = b"x" * len(block[::4096])      # touch every page so it is resident
    held, deadline = big.samples, time.monotonic() + 10
    while big.samples < held + 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    del block
with PeakRss() as small:
    pass
print(big.growth_mb, small.growth_mb, big.samples - held)
"""


def test_peak_memory_is_this_blocks_not_the_process_lifetimes():
    out = subprocess.run([sys.executable, "-c", REAL_RSS], capture_output=True, text=True, check=True).stdout
    big, small, samples_while_held = (float(x) for x in out.split())
    assert samples_while_held >= 3, "the sampler never ran while the block was held"
    assert big >= 48
    assert small < 16        # ru_maxrss would still report the 64 MB above


def wait_for_samples(peak: PeakRss, count: int) -> None:
    held, deadline = peak.samples, time.monotonic() + 10
    while peak.samples < held + count and time.monotonic() < deadline:   # a loaded machine may delay the sampler
        time.sleep(0.05)
    assert peak.samples >= held + count, "the sampler never ran"


def episode(wall_s: float, first_search_s: float | None) -> Trajectory:
    steps = [Step(index=1, tool="get_user_profile", tool_latency_s=0.5)]
    if first_search_s is not None:
        steps += [Step(index=2, tool="search_products", tool_latency_s=first_search_s),
                  Step(index=3, tool="search_products", tool_latency_s=9.0)]   # not its first search
    return Trajectory(steps=steps, wall_s=wall_s)


def test_first_wave_is_the_c_episodes_that_started_first():
    # (finish time, trajectory): starts at 0, 0, 0 (the first wave, C=3) and 10, 20 (later waves).
    records = [(10.0, episode(10.0, 0.2)), (12.0, episode(12.0, 0.4)), (11.0, episode(11.0, 0.3)),
               (30.0, episode(20.0, 5.0)), (40.0, episode(20.0, 6.0))]
    assert search_p95s(records, 3) == {"first_wave_first": 0.4, "later_first": 6.0,   # C = 3 started first
                                       "first_wave_all": 9.0, "later_all": 9.0}
    assert search_p95s([(1.0, episode(1.0, None))], 3) == dict.fromkeys(
        ("first_wave_first", "later_first", "first_wave_all", "later_all"))     # no search, no later episode


def test_process_tree_cpu_counts_children_and_leaves_out_an_excluded_subtree():
    spin = "import time\nend = time.process_time() + 0.6\nwhile time.process_time() < end: pass\ntime.sleep(30)"
    counted = subprocess.Popen([sys.executable, "-c", spin])
    excluded = subprocess.Popen([sys.executable, "-c", spin])
    try:
        time.sleep(0.2)
        before = tree_cpu_seconds(os.getpid(), {excluded.pid})
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and tree_cpu_seconds(counted.pid) < 0.6:
            time.sleep(0.05)
        while time.monotonic() < deadline and tree_cpu_seconds(excluded.pid) < 0.6:
            time.sleep(0.05)
        grown = tree_cpu_seconds(os.getpid(), {excluded.pid}) - before
        assert 0.3 <= grown < 1.2, grown          # the counted child's spin, not the excluded one's too
        assert tree_rss_mb(os.getpid()) > tree_rss_mb(os.getpid(), {counted.pid, excluded.pid}) > 0
    finally:
        counted.kill()
        excluded.kill()
        counted.wait()
        excluded.wait()


def test_cpu_timeline_counts_a_window_and_keeps_the_simulator_apart():
    spin = "import time\nend = time.process_time() + 0.8\nwhile time.process_time() < end: pass\ntime.sleep(30)"
    idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])   # the "simulator"
    try:
        with CpuTimeline(os.getpid(), idle.pid, every_s=0.1) as timeline:
            time.sleep(0.3)
            quiet = time.time()
            child = subprocess.Popen([sys.executable, "-c", spin])
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and tree_cpu_seconds(child.pid) < 0.8:
                time.sleep(0.05)
            busy_end = time.time()
        before = timeline.cores(timeline.samples[0][0], quiet)
        during = timeline.cores(quiet, busy_end)
        assert before["harness"] < 0.3, before        # the sampler's own CPU is not the harness's
        assert during["harness"] * (busy_end - quiet) >= 0.6, during
        assert during["simulator"] < 0.1
        child.kill()
        child.wait()
    finally:
        idle.kill()
        idle.wait()
