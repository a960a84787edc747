"""One side of one case of the peer benchmark (ecab/bench/peer.py), in a process of its own:

    python -m ecab.bench.peer_case SPEC.json RESULT.json

SPEC names the side (`ecab` or `inspect`), the simulator's URL, the concurrency C, the budget, the episodes
and the config overrides of the catalog and tasks. The process loads the catalog and tasks as the throughput
benchmark does (throughput.Setup, from the cache the parent filled), runs the episodes, and writes RESULT:
per episode its finish time, LLM turns, whether it failed and its tool calls; for the process, the CPU
seconds spent while the episodes ran and its peak resident memory. A fresh process per side and case, so
neither side's memory or CPU is counted for the other, and each starts with cold caches.

ecab's side runs runner=local (LocalRunner, as the throughput benchmark drives it); inspect_ai's side runs
peer_inspect.py, under the interpreter of the peer's own virtual environment (peer_env.py: how that
interpreter finds ecab and its dependencies behind inspect_ai's pins).

This module imports only the standard library (and ecab's process-env defaults) at the top: it runs under
both interpreters.
"""
from __future__ import annotations

import json
import resource
import sys
import tempfile
import time
from pathlib import Path

from ecab.bench.peer_records import call_entry, episode_record
from ecab.core.process_env import configure_process_env

SIDES = ("ecab", "inspect")
MAX_ERRORS = 5          # distinct error messages of failed episodes kept in a result


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def peak_rss_mb() -> float:
    """This process's resident-memory peak over its life (ru_maxrss, KiB on Linux): the episodes' peak, since
    the process does nothing bigger."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def ecab_record(traj) -> dict:
    """An ecab trajectory as an episode record: its executed calls paired in order with the tool messages."""
    steps = [s for s in traj.steps if s.tool is not None]
    results = [m.get("content") or "" for m in traj.trajectory if m.get("role") == "tool"]
    calls = [call_entry(s.tool, s.arguments, text) for s, text in zip(steps, results)]
    unit = traj.unit or {}
    return episode_record(unit.get("task_id", traj.id), int(unit.get("trial", 0)), len(traj.steps),
                          traj.termination in ("infra_error", "agent_error"), calls)


def run_ecab(setup, spec: dict, units: list) -> tuple[list[dict], list[str]]:
    """The units through runner=local's LocalRunner against the simulator, as the throughput benchmark runs
    them: (the episode records in finishing order, the distinct errors of failed episodes)."""
    from ecab.bench.throughput import sim_model_cfg
    from ecab.env.episode import EpisodeSettings
    from ecab.llm.limits import LimiterSettings
    from ecab.runner.episode import EpisodeOptions
    from ecab.runner.local import LocalRunner
    from ecab.runs import RunFolder

    records: list[dict] = []
    concurrency = spec["concurrency"]
    episode = EpisodeOptions(model_cfg=sim_model_cfg(spec["base_url"], concurrency),
                             tool_options={"search_mode": setup.cfg.tools.search})
    runner = LocalRunner(episode, concurrency=concurrency, limits=LimiterSettings(max_concurrency=concurrency),
                         progress=False)
    with tempfile.TemporaryDirectory() as tmp:
        folder = RunFolder(Path(tmp) / "run").create()
        # records are made as episodes finish, so that each carries its own finish time
        runner.run(units, {t.id: t for t in setup.tasks}, setup.catalog, folder,
                   EpisodeSettings(budget=spec["budget"]), on_done=lambda traj: records.append(ecab_record(traj)))
        errors = sorted({t.error for t in folder.latest_trajectories().values() if t.error})
    return records, errors


def run_side(spec: dict) -> dict:
    process_start = time.time()
    from ecab.bench.throughput import Setup, sim_model_cfg
    from ecab.core.machine import resident_mb

    setup = Setup(spec["overrides"])
    model_name = sim_model_cfg(spec["base_url"], spec["concurrency"]).name
    units = setup.units(spec["episodes"], spec["budget"], model_name)
    rss_before = resident_mb()
    cpu_start, started = cpu_seconds(), time.time()
    if spec["side"] == "ecab":
        records, errors = run_ecab(setup, spec, units)
    else:
        from ecab.bench.peer_inspect import run_inspect
        records, errors = run_inspect(setup, spec, units)
    return {"side": spec["side"], "concurrency": spec["concurrency"], "started_at": started,
            "setup_s": started - process_start,
            "wall_s": time.time() - started, "cpu_s": cpu_seconds() - cpu_start, "rss_before_mb": rss_before,
            "peak_rss_mb": peak_rss_mb(),
            "units": len(units), "episodes": records, "errors": errors[:MAX_ERRORS], "versions": side_versions(spec["side"])}


def side_versions(side: str) -> dict[str, str]:
    from importlib.metadata import version

    import ecab
    versions = {"ecab": ecab.__version__, "python": sys.version.split()[0]}
    if side == "inspect":
        versions["inspect_ai"] = version("inspect_ai")
    return versions


def main(argv: list[str] | None = None) -> int:
    args = list(argv if argv is not None else sys.argv[1:])
    if any(a in ("-h", "--help") for a in args):
        print("usage: python -m ecab.bench.peer_case SPEC.json RESULT.json\n\n" + __doc__.strip())
        return 0
    if len(args) != 2:   # peer.py always passes exactly the two paths
        print("peer_case: error: expected SPEC.json RESULT.json (see --help)", file=sys.stderr)
        return 2
    spec_path, result_path = args
    configure_process_env()
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    if spec["side"] not in SIDES:
        print(f"peer_case: unknown side {spec['side']!r}; expected one of {list(SIDES)}", file=sys.stderr)
        return 2
    result = run_side(spec)
    Path(result_path).write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
