"""runner=local over several processes: one `LocalRunner` event loop per core when one loop cannot keep up.

One event loop runs the harness's Python (the chat client, the episode loop, JSON, the tools' glue) on one
core; at hundreds of episodes in flight that core is full and every LLM turn waits for it
(docs/decisions.md#episode-processes). `ProcessesRunner` splits the units over `processes` spawned children,
each a complete runner=local of its own: its own catalog handle (opened read-only from the same directory), its
own share of the episodes in flight and of the endpoint's limiter window, and its own part file
(`part-local-p<i>...`), so a child checkpoints exactly as runner=local does and a killed run resumes the same
way. A task's units stay in one child, whose page and query caches then see the repeats.

The parent only hands out the shares and gathers what comes back: a tick per finished episode (the trajectory
itself only when the caller asked for `on_done`), each child's RunnerStats at its end, or its error. A child
that fails stops the run like an exception in runner=local does: the others are stopped, what finished is in
the run folder, and a rerun resumes the rest. A child whose parent dies exits too.
"""
from __future__ import annotations

import multiprocessing
import os
import threading
from dataclasses import dataclass, replace
from multiprocessing.connection import wait
from typing import Any, Mapping, cast

from tqdm import tqdm

from ecab.core.unit import Unit
from ecab.env.agent_protocol import EndpointRefused
from ecab.env.episode import EpisodeSettings
from ecab.llm.limits import LimiterSettings, LimiterStats
from ecab.runner.admission import AdmissionSettings
from ecab.runner.episode import EpisodeOptions
from ecab.runner.protocol import OnDone, RunnerFailed, RunnerStats
from ecab.runs import RunFolder
from ecab.schema import Task

CHILD_EXIT_GRACE_S = 30.0   # a child that sent its stats gets this long to exit (its teardown took ~4 s here)


@dataclass
class ChildSpec:
    """Everything one episode process needs, as plain picklable values."""

    index: int
    run_dir: str
    catalog_path: str
    search_mode: str
    episode: EpisodeOptions       # its model_cfg the typed model section (picklable)
    settings: EpisodeSettings
    concurrency: int
    limits: LimiterSettings
    warm_queries: bool
    admission: AdmissionSettings  # each loop admits its own episodes, on its own queueing delay
    send_trajectories: bool       # the parent has an on_done that needs them; otherwise a tick is enough

    @property
    def writer(self) -> str:
        return f"local-p{self.index}"


def split_units(units: list[Unit], parts: int) -> list[list[Unit]]:
    """`parts` shares of about equal size, a task's units in one share, each share in the units' order.
    Tasks are placed largest first on the share with the fewest units (ties: the lower index)."""
    by_task: dict[str, list[int]] = {}
    for position, unit in enumerate(units):
        by_task.setdefault(unit.task_id, []).append(position)
    shares: list[list[int]] = [[] for _ in range(max(1, parts))]
    for positions in sorted(by_task.values(), key=len, reverse=True):   # stable: ties keep the unit order
        min(shares, key=len).extend(positions)
    return [[units[p] for p in sorted(share)] for share in shares if share]


def share_of(total: int, parts: int, index: int) -> int:
    """Child `index`'s part of `total` (the parts add up to `total`, each at least 1)."""
    return max(1, total // parts + (1 if index < total % parts else 0))


def limiter_share(limits: LimiterSettings, parts: int, index: int) -> LimiterSettings:
    """A child's part of the endpoint's window: the children together never exceed runner.limits."""
    initial = None if limits.initial is None else share_of(limits.initial, parts, index)
    maximum = share_of(limits.max_concurrency, parts, index)
    return replace(limits, max_concurrency=maximum, min_concurrency=min(limits.min_concurrency, maximum),
                   initial=initial)


def merge_limiter_stats(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One endpoint's limiter figures (LimiterStats.as_dict) over the children: counts and windows add up, the
    time span is the union, and LimiterStats recomputes the rate over it."""
    if len(parts) == 1:
        return parts[0]
    firsts = [p["first_at"] for p in parts if p.get("first_at")]
    lasts = [p["last_at"] for p in parts if p.get("last_at")]
    summed = {key: sum(p.get(key) or 0 for p in parts)
              for key in ("ok", "throttled", "failed", "peak_in_flight", "window", "min_window")}
    return LimiterStats(**summed, first_at=min(firsts, default=None), last_at=max(lasts, default=None),
                        paused_s=max((p.get("paused_s") or 0.0) for p in parts)).as_dict()


def merge_stats(parts: list[RunnerStats], concurrency: int) -> RunnerStats:
    limiters: dict[str, list[dict]] = {}
    for stats in parts:
        for key, figures in stats.limiters.items():
            limiters.setdefault(key, []).append(figures)
    return RunnerStats(runner="local", concurrency=concurrency, processes=len(parts),
                       retried_units=sum(s.retried_units for s in parts),
                       infra_reruns=sum(s.infra_reruns for s in parts),
                       limiters={key: merge_limiter_stats(figures) for key, figures in limiters.items()},
                       admission=merge_admission([s.admission for s in parts if s.admission]))


def merge_admission(parts: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The children's admission figures (Admission.describe): episodes in flight and windows add up (the peak
    as the sum of each child's peak, an upper bound), the delay is the worst child's."""
    if len(parts) <= 1:
        return parts[0] if parts else None
    merged = {key: sum(p[key] for p in parts) for key in ("limit", "peak_in_flight", "decreases")}
    merged.update({key: round(sum(p[key] for p in parts), 1) for key in ("mean_in_flight", "window")})
    delays = [p["delay_p95_ms"] for p in parts if p.get("delay_p95_ms") is not None]
    return {"enabled": parts[0]["enabled"], **merged, "delay_p95_ms": max(delays, default=None)}


class ProcessesRunner:
    """runner=local with `processes` > 1 (ecab/runner/factory.py picks it; the module docstring says how)."""

    name = "local"

    def __init__(self, episode: EpisodeOptions, *, processes: int, concurrency: int,
                 limits: LimiterSettings | None = None, progress: bool = True, warm_queries: bool = True,
                 admission: AdmissionSettings | None = None):
        self.episode, self.processes, self.concurrency = episode, processes, concurrency
        self.limits = limits or LimiterSettings()
        self.progress, self.warm_queries = progress, warm_queries
        self.admission = admission or AdmissionSettings()

    def run(self, units: list[Unit], tasks: Mapping[str, Task], catalog, folder: RunFolder,
            settings: EpisodeSettings, *, on_done: OnDone | None = None) -> RunnerStats:
        shares = split_units(units, min(self.processes, self.concurrency))
        if not units:
            return RunnerStats(runner="local")
        context = multiprocessing.get_context("spawn")   # a fork would copy LanceDB's and ONNX's threads
        children = [self._start(context, index, len(shares), share, tasks, catalog, folder, settings,
                                on_done is not None)
                    for index, share in enumerate(shares)]
        try:
            stats = self._gather(children, len(units), on_done)
        except BaseException:
            for child in children:
                child.stop()
            raise
        for child in children:   # each has sent its stats and is exiting: let it (see Child.stop)
            child.stop(grace_s=CHILD_EXIT_GRACE_S)
        return stats

    def _start(self, context, index: int, parts: int, share: list[Unit], tasks: Mapping[str, Task], catalog,
               folder: RunFolder, settings: EpisodeSettings, send_trajectories: bool) -> "Child":
        spec = ChildSpec(index=index, run_dir=str(folder.path), catalog_path=str(catalog.path),
                         search_mode=catalog.mode, episode=self.episode, settings=settings,
                         concurrency=share_of(self.concurrency, parts, index),
                         limits=limiter_share(self.limits, parts, index), warm_queries=self.warm_queries,
                         admission=self.admission, send_trajectories=send_trajectories)
        share_tasks = {u.task_id: tasks[u.task_id] for u in share}
        reader, writer = context.Pipe(duplex=False)
        process = context.Process(target=child_main, args=(spec, share, share_tasks, writer),
                                  name=f"ecab-episodes-{index}", daemon=True)
        process.start()
        writer.close()   # the child holds the only write end: its exit closes the pipe
        return Child(index, process, reader)

    def _gather(self, children: list["Child"], total: int, on_done: OnDone | None) -> RunnerStats:
        """Read the children's messages until each has sent its stats; a child's error, or its exit without
        them, ends the run with one line naming it."""
        finished: dict[int, RunnerStats] = {}
        open_pipes = {child.reader: child for child in children}
        bar = tqdm(total=total, desc="episodes", unit="ep", disable=not self.progress, dynamic_ncols=True)
        try:
            while open_pipes:
                for reader in wait(list(open_pipes)):
                    child = open_pipes[reader]
                    try:
                        kind, payload = cast(Any, reader).recv()   # a Connection (wait() is typed loosely)
                    except EOFError:   # it exited: fine once its stats are in, a death otherwise
                        del open_pipes[reader]
                        if child.index not in finished:
                            raise child.died() from None
                        continue
                    if kind == "done":
                        bar.update(1)
                        if on_done is not None:
                            on_done(payload)
                    elif kind == "stats":
                        finished[child.index] = payload
                    else:
                        raise child_error(child.index, payload)
        finally:
            bar.close()
        return merge_stats([finished[i] for i in sorted(finished)], self.concurrency)


@dataclass
class Child:
    """One episode process as the parent sees it: the process and the read end of its pipe."""

    index: int
    process: Any
    reader: Any

    def died(self) -> RunnerFailed:
        self.process.join(timeout=5)
        return RunnerFailed(f"episode process {self.index} (pid {self.process.pid}) exited with code "
                            f"{self.process.exitcode} before finishing its share; finished episodes are saved in "
                            "the run folder, run again to resume the rest")

    def stop(self, grace_s: float = 0.0) -> None:
        """End the process: at once (a run that failed), or after up to `grace_s` for one that finished its
        share and is exiting. Terminated in its interpreter's teardown, a child leaves semaphores behind and
        multiprocessing's resource tracker warns about them."""
        if grace_s:
            self.process.join(timeout=grace_s)
        if self.process.is_alive():
            self.process.terminate()
        self.process.join()
        self.reader.close()


def child_error(index: int, payload: dict) -> BaseException:
    if payload["kind"] == "EndpointRefused":
        return EndpointRefused(payload["message"].removeprefix("EndpointRefused: "))
    return RunnerFailed(f"episode process {index} failed: {payload['message']}; finished episodes are saved in "
                        "the run folder, run again to resume the rest")


# ----------------------------------------------------------------------------------------- in the child

def child_main(spec: ChildSpec, units: list[Unit], tasks: dict[str, Task], pipe) -> None:
    """A spawned episode process: runner=local over its share, writing part-local-p<i>; see the module
    docstring. Messages to the parent: ("done", trajectory or None) per episode, then ("stats", RunnerStats)
    or ("error", {kind, message})."""
    from ecab.core.process_env import configure_process_env

    configure_process_env()
    exit_with_parent()
    try:
        from ecab.catalog.facade import Catalog
        from ecab.env.tools import PAGE_SIZE
        from ecab.runner.local import LocalRunner, first_queries

        catalog = Catalog.open(spec.catalog_path, mode=spec.search_mode)
        # Load the query encoder before the episodes start, as the parent's catalog already has it.
        catalog.warm_searches(first_queries(units, tasks)[:1], PAGE_SIZE)
        runner = LocalRunner(spec.episode, concurrency=spec.concurrency, limits=spec.limits, progress=False,
                             writer=spec.writer, warm_queries=spec.warm_queries, admission=spec.admission)

        def sent(traj) -> None:
            pipe.send(("done", traj if spec.send_trajectories else None))

        stats = runner.run(units, tasks, catalog, RunFolder(spec.run_dir), spec.settings, on_done=sent)
    except BaseException as exc:
        pipe.send(("error", {"kind": type(exc).__name__, "message": f"{type(exc).__name__}: {exc}"}))
        pipe.close()
        raise SystemExit(1) from None
    pipe.send(("stats", stats))
    pipe.close()


def exit_with_parent() -> None:
    """Exit at once when the parent process goes away (killed included): an orphaned child would go on
    spending tokens for a run nobody is watching. Its finished episodes are already in its part file."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        wait([parent.sentinel])
        os._exit(1)

    threading.Thread(target=watch, name="ecab-parent-watch", daemon=True).start()
