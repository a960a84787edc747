"""Episode admission (ecab/runner/admission.py): the window, its growth and decrease, order, cancellation,
settings."""
import asyncio

import pytest

from ecab.runner.admission import Admission, AdmissionSettings


def settings(**kw) -> AdmissionSettings:
    base = dict(initial=2, growth_per_s=1.0, probe_interval_s=0.1, target_delay_s=0.05, decrease=0.5,
                decide_every_s=1.0, floor=1)
    return AdmissionSettings(**{**base, **kw})


async def start(gate: Admission, n: int, started: list[int], release: asyncio.Event) -> list[asyncio.Task]:
    async def episode(i: int) -> None:
        async with gate:
            started.append(i)
            await release.wait()

    tasks = [asyncio.ensure_future(episode(i)) for i in range(n)]
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    return tasks


def test_the_window_starts_small_grows_under_the_target_and_admits_in_unit_order():
    async def main():
        gate, started, release = Admission(8, settings()), [], asyncio.Event()
        tasks = await start(gate, 8, started, release)
        assert started == [0, 1]                       # initial = 2
        gate.observe(0.001, now=0.0)
        gate.observe(0.001, now=0.5)                   # decisions come once a second
        assert gate.window == 2.0
        gate.observe(0.001, now=1.0)                   # median under the target: +1/s x 1 s
        await asyncio.sleep(0)
        assert gate.window == 3.0 and started == [0, 1, 2]
        for t in range(2, 12):
            gate.observe(0.001, now=float(t))
        await asyncio.sleep(0)
        assert started == list(range(8)) and gate.window == 8.0   # never past the limit (C)
        release.set()
        await asyncio.gather(*tasks)
        figures = gate.describe()
        assert figures["peak_in_flight"] == 8 and figures["limit"] == 8 and figures["decreases"] == 0
    asyncio.run(main())


def test_a_lasting_delay_shrinks_the_window_and_never_pauses_running_episodes():
    async def main():
        gate, started, release = Admission(10, settings(initial=10)), [], asyncio.Event()
        tasks = await start(gate, 12, started, release)
        assert len(started) == 10
        gate.observe(0.5, now=100.0)
        gate.observe(0.5, now=100.5)
        gate.observe(0.5, now=101.0)                   # the second's median is over the target
        assert gate.window == 5.0 and gate.decreases == 1   # 10 in flight x 0.5
        assert len(started) == 10 and gate.in_flight == 10   # the ten already running go on
        release.set()
        await asyncio.gather(*tasks)
        assert sorted(started) == list(range(12))      # the two waiting ones started once there was room
        assert gate.describe()["delay_p95_ms"] == 500.0
    asyncio.run(main())


def test_a_short_burst_of_queueing_does_not_shrink_the_window():
    gate = Admission(10, settings(initial=10))
    gate.in_flight = 10
    for i, delay in enumerate([0.01, 2.0, 0.01, 0.01, 0.01]):   # one slow probe in the second
        gate.observe(delay, now=200.0 + 0.25 * i)
    assert gate.decreases == 0 and gate.window == 10.0


def test_the_window_never_shrinks_below_the_floor():
    gate = Admission(10, settings(initial=10, floor=3))
    gate.in_flight = 2
    gate.observe(9.0, now=5.0)
    gate.observe(9.0, now=6.0)
    assert gate.window == 3.0


def test_disabled_admission_starts_all_at_once_and_runs_no_probe():
    async def main():
        gate, started, release = Admission(6, AdmissionSettings(enabled=False)), [], asyncio.Event()
        tasks = await start(gate, 8, started, release)
        assert started == list(range(6))
        await asyncio.wait_for(gate.run_probe(), 1)   # returns at once
        release.set()
        await asyncio.gather(*tasks)
    asyncio.run(main())


def test_a_cancelled_waiter_gives_no_place_away_and_takes_none():
    async def main():
        gate, started, release = Admission(1, settings(initial=1)), [], asyncio.Event()
        tasks = await start(gate, 3, started, release)
        tasks[1].cancel()
        await asyncio.gather(tasks[1], return_exceptions=True)
        release.set()
        await asyncio.gather(tasks[0], tasks[2])
        assert started == [0, 2] and gate.in_flight == 0
    asyncio.run(main())


def test_the_probe_measures_the_tool_threads_and_the_loop():
    """The probe's round trip is timed on the gate's clock: a fake one that ticks 0.01 s per reading, so each
    probe measures 0.01 s (under the 0.05 s target) and the third probe is 0.04 s after the first, past
    decide_every_s: the window grows. No assertion depends on how fast this machine runs the probes."""
    ticks = iter(range(1, 10**6))

    def clock() -> float:
        return next(ticks) * 0.01

    async def main():
        gate = Admission(4, settings(probe_interval_s=0.001, decide_every_s=0.03), clock=clock)
        probe = asyncio.ensure_future(gate.run_probe())
        while len(gate.delays) < 3:              # however long this machine takes to run three probes
            await asyncio.sleep(0.001)
        probe.cancel()
        await asyncio.gather(probe, return_exceptions=True)
        assert all(d == pytest.approx(0.01) for d in gate.delays)   # sent and back: one tick apart
        assert gate.window > 2
    asyncio.run(main())


def test_settings_are_the_typed_runner_admission_section_and_name_a_bad_key():
    from ecab.config import AdmissionConfig, ConfigError, load_config, parse, section

    assert AdmissionSettings is AdmissionConfig
    assert parse(load_config([])).runner.admission == AdmissionSettings()
    assert parse(load_config(["runner.admission.enabled=false"])).runner.admission.enabled is False
    assert section(AdmissionSettings, {"target_delay_s": 0.2}).target_delay_s == 0.2
    with pytest.raises(ConfigError, match="runner.admission: unknown key.*targt"):
        section(AdmissionSettings, {"targt": 1})
    with pytest.raises(ConfigError, match="runner.admission.decrease must be a number in \\(0, 1\\), got 1.5"):
        AdmissionSettings(decrease=1.5)
    with pytest.raises(ConfigError, match="runner.admission.target_delay_s must be a number > 0"):
        parse(load_config(["runner.admission.target_delay_s=0"]))


def test_the_probes_kept_for_the_p95_are_bounded():
    from ecab.runner.admission import PROBES_KEPT

    gate = Admission(4, settings())
    for i in range(PROBES_KEPT + 10):
        gate.observe(1.0 if i < 10 else 0.01, now=i * 0.1)
    assert len(gate.delays) == PROBES_KEPT and gate.describe()["delay_p95_ms"] == 10.0   # the first ten aged out
