"""core/process_wide.py: one object per process, built on first use, the same for racing threads; a failed
build is tried again. core/machine.py: the cores a process may use."""
import threading
import time
from pathlib import Path

import pytest

from ecab.core.machine import cgroup_cpu_limit, usable_cores
from ecab.core.process_wide import process_wide


def test_racing_threads_get_one_object_built_once():
    built = []

    def slow_factory():
        time.sleep(0.05)          # a race window: every thread arrives before the first build ends
        built.append(object())
        return built[-1]

    get = process_wide(slow_factory)
    got = []
    threads = [threading.Thread(target=lambda: got.append(get())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(built) == 1 and all(g is built[0] for g in got)


def test_a_failed_build_is_tried_again():
    calls = []

    def flaky():
        calls.append(1)
        if len(calls) == 1:
            raise OSError("model file missing")
        return "loaded"

    get = process_wide(flaky)
    with pytest.raises(OSError):
        get()
    assert get() == "loaded" and get() == "loaded" and len(calls) == 2


@pytest.mark.parametrize("text, cores", [("200000 100000", 2.0), ("150000 100000", 1.5), ("max 100000", None),
                                         ("garbage", None)])
def test_cgroup_quota_in_cores(tmp_path: Path, text, cores):
    path = tmp_path / "cpu.max"
    path.write_text(text + "\n")
    assert cgroup_cpu_limit(path) == cores


def test_usable_cores_is_at_least_one_and_at_most_the_affinity_mask():
    import os

    assert 1 <= usable_cores() <= len(os.sched_getaffinity(0))
