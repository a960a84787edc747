"""`python -m ecab.judge runs/<name> judge=llm [overrides]`: re-judge a finished run, then re-reduce it.

It lives in reduce/, the layer above judge/ and runs/ that it uses; `python -m ecab.judge` (judge/__main__.py)
runs it by name, so the judge package imports nothing above it (docs/architecture.md §1).

No agent runs again: the trajectories, the task file (manifest `tasks_path`) and the run's own
config.yaml (catalog, cache_dir) are read from the run folder. The judge section comes from the
command line (`judge=llm judge.model=gpt-5-mini ...`, composed from conf/judge/ like any override);
other overrides (e.g. `cache_dir=...`) replace the run's value. Verdicts go to verdicts.<judge>.jsonl.gz (the
previous judge's file is kept) and the manifest names that judge active and records it and its cost;
summary.json / summary.md are rebuilt with ecab.reduce.reduce_run, and the command ends by rebuilding
report.html (ecab.view.refresh_report).
"""
from __future__ import annotations

import argparse
import importlib
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from ecab.config import CatalogConfig, ConfigError, JudgeConfig, load_config, section
from ecab.core.process_env import configure_process_env
from ecab.env.agent_protocol import EndpointRefused
from ecab.schema import FormatError


def _override_key(text: str) -> str:
    return text.split("=", 1)[0].lstrip("+~")


@dataclass(frozen=True)
class RejudgeConfig:
    """What re-judging reads of the config, typed: the judge section, the run's catalog and cache folder."""

    judge: JudgeConfig
    catalog: CatalogConfig
    cache_dir: Path


def judge_config(run_dir: Path, overrides: list[str]) -> RejudgeConfig:
    """The run's config.yaml with the judge section (and any other overridden key) from the command line,
    parsed once into the typed sections re-judging reads."""
    from ecab.runs import RunFolder

    path = RunFolder(run_dir).config_path
    if not path.is_file():
        raise FormatError("file not found (is this a run folder of python -m ecab.run?)", path=path)
    cfg = OmegaConf.load(path)
    if not isinstance(cfg, DictConfig):
        raise FormatError("expected a mapping", path=path)
    composed = load_config(overrides)
    OmegaConf.set_struct(cfg, False)
    # unresolved, so that ${cache_dir} in the judge group resolves against the run's own cache_dir
    cfg.judge = OmegaConf.create(OmegaConf.to_container(composed.judge, resolve=False))
    for text in overrides:
        key = _override_key(text)
        if key != "judge" and not key.startswith("judge."):
            OmegaConf.update(cfg, key, OmegaConf.select(composed, key), merge=False)
    from ecab.catalog.build import catalog_config

    judge_type = OmegaConf.get_type(composed.judge)
    assert isinstance(judge_type, type) and issubclass(judge_type, JudgeConfig)
    judge = section(judge_type, OmegaConf.to_container(cfg.judge, resolve=True))
    catalog = OmegaConf.to_container(cfg.catalog, resolve=True)
    if not isinstance(catalog, dict):
        raise FormatError("expected a catalog mapping", path=RunFolder(run_dir).config_path)
    return RejudgeConfig(judge=judge, catalog=catalog_config({str(k): v for k, v in catalog.items()}),
                         cache_dir=Path(str(cfg.cache_dir)))


def rejudge(run_dir: str | Path, overrides: list[str] | None = None) -> dict:
    """Re-judge the run folder with the judge of `overrides`; rewrites the verdict files and the summary."""
    from ecab.catalog.build import ensure_catalog
    from ecab.judge.dispatch import check_judge_config, judge_run
    from ecab.reduce import reduce_run
    from ecab.runs import RunFolder

    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise FormatError("run folder not found", path=run_dir)
    cfg = judge_config(run_dir, list(overrides or []))
    check_judge_config(cfg.judge)                 # a missing key or bad judge option fails before any work
    folder = RunFolder(run_dir)
    tasks = folder.read_tasks(folder.load_manifest())
    trajectories = list(folder.latest_trajectories().values())
    if not trajectories:
        raise FormatError("no trajectories to judge", path=folder.trajectories_dir)
    catalog = ensure_catalog(cfg.catalog, cfg.cache_dir)
    started = time.perf_counter()
    judged = judge_run(cfg.judge, tasks, trajectories, catalog)
    describe = judged.describe
    describe["judged_at"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    describe["wall_s"] = round(time.perf_counter() - started, 3)
    folder.write_verdicts(judged.judge, judged.judgements)
    manifest = folder.read_manifest()
    manifest["judge"] = describe
    manifest["judge_model"] = judged.judge_model
    manifest.setdefault("judges", {})[judged.judge] = describe
    folder.write_manifest(manifest)
    return reduce_run(run_dir)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ecab.judge", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", type=Path, help="the run folder, e.g. runs/<name>")
    parser.add_argument("overrides", nargs="*", help="judge=llm judge.model=... (Hydra-style overrides)")
    args = parser.parse_args(argv)
    configure_process_env()   # before anything loads the embedder (ecab/core/process_env.py)
    try:
        summary = rejudge(args.run_dir, args.overrides)
    except (ConfigError, ValueError, OSError, EndpointRefused) as exc:   # FormatError: a ValueError naming file/line
        print(f"error: {exc}", file=sys.stderr)
        return 2
    judge = summary.get("tokens_and_cost", {}).get("judge", {}).get("total", {})
    print(f"re-judged {args.run_dir} with {summary.get('judge_model')}: accuracy "
          f"{100 * summary.get('overall_accuracy', 0):.1f}%, rubric satisfaction "
          f"{100 * summary.get('overall_rubric_satisfaction', 0):.1f}%, unscored rubrics "
          f"{summary.get('unscored_rubrics', 0)}; judge calls {judge.get('calls', 0)}, cache hits "
          f"{judge.get('cache_hits', 0)}, cost ${judge.get('cost_usd', 0)}")
    from ecab.runs import RunFolder
    print(f"wrote {RunFolder(args.run_dir).verdicts_path}, summary.json, summary.md")
    # The report follows the new verdicts (one warning line if it cannot). ecab.view is a layer above
    # reduce: named here, not imported (docs/architecture.md §1).
    importlib.import_module("ecab.view").refresh_report(args.run_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
