"""`ecab.evaluate`: one run from Python (a notebook, a script, a test), the same run `python -m ecab.run` makes.

    import ecab
    result = ecab.evaluate(["model=oracle", "benchmark.limit=5"])     # or evaluate(model="oracle", benchmark={"limit": 5})
    result.accuracy, result.path, result.summary

Errors are raised, not printed: a bad override or config is an `ecab.ConfigError` naming the key, exactly the
line the command prints.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from ecab.core.process_env import configure_process_env
from ecab.core.worker_start import refuse_in_starting_worker


@dataclass
class RunResult:
    """A finished run: its folder (everything is there: summary.json, verdicts, trajectories/, report.html)
    and its summary."""

    path: Path
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def accuracy(self) -> float:
        """The paper's accuracy as a fraction (exact target OR every rubric satisfied), over judged episodes."""
        return float(self.summary.get("overall_accuracy") or 0.0)

    @property
    def infra_error_units(self) -> int:
        """Episodes left in infra_error (re-running the same config retries them)."""
        return int(self.summary.get("infra_error_units") or 0)

    @property
    def report(self) -> Path:
        return self.path / "report.html"


def as_overrides(overrides: Sequence[str] | Mapping[str, Any] | None = None, **keys: Any) -> list[str]:
    """Hydra overrides from a list (`["model=oracle"]`), a mapping and/or keywords (`model="oracle"`,
    `benchmark={"limit": 5}` for `benchmark.limit=5`)."""
    if isinstance(overrides, str):
        raise TypeError("evaluate takes a list of overrides (['model=oracle']), not one string")
    items: list[str] = []
    if isinstance(overrides, Mapping):
        keys = {**dict(overrides), **keys}
    elif overrides is not None:
        items += [str(o) for o in overrides]
    for key, value in keys.items():
        items += _flatten(key, value)
    return items


def _flatten(key: str, value: Any) -> list[str]:
    if isinstance(value, Mapping):
        return [item for k, v in value.items() for item in _flatten(f"{key}.{k}", v)]
    if value is None:
        return [f"{key}=null"]
    if isinstance(value, bool):
        return [f"{key}={str(value).lower()}"]
    if isinstance(value, (list, tuple)):
        return [f"{key}=[{','.join(str(v) for v in value)}]"]
    return [f"{key}={value}"]


def evaluate(overrides: Sequence[str] | Mapping[str, Any] | None = None, *, report: bool = True,
             **keys: Any) -> RunResult:
    """Compose the config (conf/ plus `overrides`), run every episode, judge and reduce; the run folder is
    the one `python -m ecab.run` with the same overrides writes (and resumes)."""
    refuse_in_starting_worker("ecab.evaluate")    # an unguarded script re-run by a worker would deadlock
    configure_process_env()
    from ecab.config import load_config
    from ecab.run import main_job, run_name

    cfg = load_config(as_overrides(overrides, **keys))
    summary = main_job(cfg)
    path = Path(str(cfg.run.dir)) / run_name(cfg)
    if report:
        from ecab.view import report_after_run
        report_after_run(path)
    return RunResult(path=path, summary=summary)
