"""The throughput benchmark's measurements (ecab/bench/throughput.py): the figures it prints are only as good
as these windows and counters."""
import time

from ecab.bench.throughput import PeakRss, admitted_rate, steady_end, steady_rate


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


def test_peak_memory_is_this_blocks_not_the_process_lifetimes():
    with PeakRss() as big:
        block = bytearray(64 * 2**20)
        block[::4096] = b"x" * len(block[::4096])          # touch every page so it is resident
        time.sleep(0.3)                                     # a few samples while it is held
        del block
    with PeakRss() as small:
        pass
    assert big.growth_mb >= 48
    assert small.growth_mb < 16        # ru_maxrss would still report the 64 MB above
