"""`python -m ecab.run [overrides]`: the main job, end to end.

catalog (built once, cached) -> benchmark (generated or a file) -> episodes (checkpointed) -> judge ->
reduce -> runs/<run.name>/. Re-running the same command resumes: finished units are skipped.

The composed config is parsed once into the typed `EcabConfig` (ecab/config/schema.py: every check runs there);
the stages below read its typed sections. Each stage also accepts the composed DictConfig (tests, ecab/api.py)
and parses it itself (`parse` returns a typed config as it is).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import hydra
from omegaconf import DictConfig, OmegaConf

from ecab.config import (ConfigError, EcabConfig, EndpointModelConfig, ModelConfig, die, parse, preflight,
                         register_schemas)
from ecab.config import naming
from ecab.core.process_env import configure_process_env
from ecab.core.signals import interrupted, stop_on_sigterm
from ecab.env.agent_protocol import EndpointRefused
from ecab.runner.protocol import RunnerFailed
from ecab.schema import FormatError, Task
from ecab.view import report_after_run

if TYPE_CHECKING:
    from ecab.runner.protocol import RunnerStats

Config = DictConfig | EcabConfig     # a composed config (parsed by the stage) or the parsed one

SECRET_MARKERS = ("api_key", "secret", "token", "password")
# Keys the typed schema gives every config of a section the run's identity (config hash) covers; left out of the
# identity while at these "unset" values, so a run recorded before them keeps its hash and resumes.
UNSET_IN_IDENTITY: dict[str, dict[str, object]] = {
    # keys added later, at their defaults, leave the hash of the runs made before them unchanged
    "model": {"target": None, "options": {}, "sim": None, "tool_call_format": "native", "tool_choice": "auto",
              "context_tokens": None, "stream": False, "idle_timeout_s": None, "send_seed": False},
    "catalog": {"target": None, "options": {}},
    "benchmark": {"name": None, "ids": None, "shuffle": False},
    "construct": {"min_category_size": None},
}


def redact(value):
    """Config without secrets: any key that looks like a credential is replaced (key *names* stay)."""
    if isinstance(value, dict):
        return {k: ("***" if any(m in k.lower() for m in SECRET_MARKERS) and not k.lower().endswith("_env")
                    and v not in (None, "") else redact(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value


def stable_hash(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def package_versions() -> dict[str, str]:
    out = {}
    for name in ("ecab", "ray", "lancedb", "pyarrow", "sentence-transformers", "openai", "tenacity", "hydra-core"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


# ------------------------------------------------------------------------------------------------ stages

def validate(cfg: Config) -> EcabConfig:
    """Parse (every range and choice check of the schema) and check what needs more than the config: the agent
    kind and its target, the model's settings and key, the benchmark file, the judge. Returns the typed config."""
    cfg = parse(cfg)
    from ecab.agents import check_agent_config, uses_endpoint
    check_agent_config(cfg.model)     # a known kind, or a python target that imports
    if uses_endpoint(cfg.model):
        validate_llm_model(cfg.model)
    if cfg.benchmark.source == "file":
        path = Path(str(cfg.benchmark.path))
        if not path.is_file():
            if cfg.benchmark.name == "released":
                from ecab.data import fetch_benchmark_command
                raise ConfigError(f"benchmark=released: {path} is not there yet; fetch it with: "
                                  f"{fetch_benchmark_command(path)}")
            raise ConfigError(f"benchmark.path: file not found: {path}")
    from ecab.judge.dispatch import check_judge_config
    check_judge_config(cfg.judge)   # an LLM judge's key is checked before any episode runs
    from ecab.env.tools import import_tools
    import_tools(tuple(cfg.tools.extra))   # users' tools import here first, not in every episode
    return cfg


def validate_llm_model(model: ModelConfig) -> None:
    """Before any work: the model id, the model settings, the simulator settings, and the API key (its
    variable, never its value)."""
    from ecab.llm import resolve_api_key
    from ecab.llm.settings import model_settings
    if not isinstance(model, EndpointModelConfig):
        raise ConfigError(f"model '{model.name}' names no endpoint: an endpoint model's YAML starts with "
                          "`defaults: [schema_endpoint, _self_]` and sets model_id")
    settings = model_settings(model)
    if settings.sim is not None:
        from ecab.sim import SimConfig
        try:
            SimConfig.from_any(settings.sim)
        except (ValueError, TypeError) as exc:
            raise ConfigError(str(exc)) from None
    resolve_api_key(settings, offline="pick an offline model (model=heuristic, model=oracle, model=sim)")


def start_simulator(cfg: EcabConfig) -> tuple[Any, EcabConfig]:
    """model=sim without a base_url: serve the simulator in this process, with the agent's reply policy;
    returns (server or None, the config to run with, its model.base_url pointing at the simulator)."""
    from ecab.agents import llm_settings
    from ecab.agents.sim_policy import HeuristicPolicy
    from ecab.sim import serve_if_simulated

    model = llm_settings(cfg.model)
    if model is None:
        return None, cfg
    served, server = serve_if_simulated(model, [HeuristicPolicy])
    if server is None:
        return None, cfg
    print(f"simulator: {served.base_url} (stopped at the end of the run)")
    assert isinstance(cfg.model, EndpointModelConfig)   # llm_settings found an endpoint
    return server, dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, base_url=served.base_url))


def open_catalog(cfg: Config):
    from ecab.catalog.build import ensure_catalog
    cfg = parse(cfg)
    return ensure_catalog(cfg.catalog, Path(cfg.cache_dir))


def load_tasks(cfg: Config, catalog=None) -> list[Task]:
    """The run's tasks (ecab/construct/task_set.py: a benchmark file, or the generated benchmark of `catalog`)."""
    from ecab.construct.task_set import load_tasks as task_set
    return task_set(parse(cfg), catalog)


def tasks_and_catalog(cfg: Config) -> tuple[list[Task], Any]:
    """The run's tasks and catalog, in the order that fails soonest: a benchmark file is read (any bad line
    refused) before the catalog is opened or built, and a file whose targets the catalog lacks is refused before
    any run folder (construct/target_check.py). One function for ecab.run and ecab.study, so neither skips a
    check."""
    from ecab.construct.target_check import check_targets
    cfg = parse(cfg)
    tasks = load_tasks(cfg) if cfg.benchmark.source == "file" else None
    catalog = open_catalog(cfg)
    tasks = tasks if tasks is not None else load_tasks(cfg, catalog)
    check_targets(cfg, tasks, catalog)
    return tasks, catalog


def run_name(cfg: Config) -> str:
    """run.name, else `<model>-b<budget>-<benchmark>` and every identity setting that differs from the
    defaults (ecab/config/naming.py): runs of different configs never share a folder."""
    return naming.run_name(parse(cfg))


def move_aside(path: Path, keep: tuple[str, ...] = ()) -> Path:
    """Move the contents of run folder `path` (all but `keep`) into a new sibling `<name>.<timestamp>`."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for n in range(1, 1000):
        aside = path.with_name(f"{path.name}.{stamp}" + (f"-{n}" if n > 1 else ""))
        try:
            aside.mkdir()
            break
        except FileExistsError:
            continue
    else:
        raise ConfigError(f"cannot move {path} aside: {path.name}.{stamp}* all taken")
    from ecab.runs.folder import MANIFEST
    # The manifest moves last: until it goes, what is left still carries the identity it must resume under,
    # so a kill in between can never leave episodes beside no manifest (or the new run's).
    entries = sorted(path.iterdir(), key=lambda entry: (entry.name == MANIFEST, entry.name))
    for entry in entries:
        if entry.name not in keep:
            entry.rename(aside / entry.name)
    return aside


def lock_folder(folder) -> None:
    """Take the run folder's lock (ecab/runs/lock.py), or refuse with one line naming the holder."""
    from ecab.runs.lock import RunLock, RunLocked, describe
    lock = RunLock(folder.path)
    try:
        lock.acquire()
    except RunLocked as exc:
        raise ConfigError(str(exc)) from None
    folder.lock = lock
    if lock.stale:
        print(f"run folder {folder.path}: taking over from a run that ended without releasing it "
              f"({describe(lock.stale)})")


def prepare_folder(cfg: Config, tasks: list[Task], catalog):
    """Lock, then create or reopen the run folder; refuse to resume into a run of a different config or task
    set. With run.resume=false an existing run is moved aside (`<name>.<timestamp>`), never deleted. The
    folder comes back locked: release it (`folder.release()`) when the run is over."""
    from ecab.runs import RunFolder
    cfg = parse(cfg)
    folder = RunFolder(Path(cfg.run.dir) / run_name(cfg))
    lock_folder(folder)
    try:
        _prepare_locked(cfg, tasks, catalog, folder)
    except BaseException:
        folder.release()
        raise
    return folder


def identity_of(resolved: dict, *, with_cache_paths: bool = False) -> dict:
    """What a run's results depend on, for its config hash: the resolved config without the runner (how the
    episodes are scheduled), the run (how it is named), the judge (which can be changed and re-run on finished
    episodes: python -m ecab.judge) and the benchmark file's read guard; without schema keys left unset; and
    without where the cache is (`cache_dir`, paths under it written relative to it): the catalog's fingerprint
    and the task set's hash say what was built, not where. `with_cache_paths`: the hash of runs made before
    that, which a resume still accepts (`_check_resumable`)."""
    identity = {k: v for k, v in resolved.items() if k not in ("run", "runner", "judge")}
    if isinstance(identity.get("model"), dict):   # whether the endpoint is checked first changes no result
        identity["model"] = {k: v for k, v in identity["model"].items() if k != "endpoint_check"}
    if not with_cache_paths:
        identity = _relative_to_cache(identity, resolved.get("cache_dir"))
    for group, unset in UNSET_IN_IDENTITY.items():
        if isinstance(identity.get(group), dict):
            identity[group] = {k: v for k, v in identity[group].items() if not (k in unset and v == unset[k])}
    if isinstance(identity.get("construct"), dict) and isinstance(identity["construct"].get("llm"), dict) \
            and identity["construct"]["llm"].get("max_tokens") is None:
        identity["construct"] = {**identity["construct"],
                                 "llm": {k: v for k, v in identity["construct"]["llm"].items() if k != "max_tokens"}}
    guards = {key.split(".", 1)[1] for key in naming.READ_GUARDS}   # benchmark.max_line_bytes, ...
    identity["benchmark"] = {k: v for k, v in identity["benchmark"].items() if k not in guards}
    return identity


def _relative_to_cache(value, cache_dir):
    """`value` with every `cache_dir` key dropped and paths under the cache written as `${cache_dir}/...`."""
    if isinstance(value, dict):
        return {k: _relative_to_cache(v, cache_dir) for k, v in value.items() if k != "cache_dir"}
    if isinstance(value, list):
        return [_relative_to_cache(v, cache_dir) for v in value]
    if isinstance(value, str) and cache_dir and (value == cache_dir or value.startswith(cache_dir.rstrip("/") + "/")):
        return "${cache_dir}" + value[len(cache_dir.rstrip("/")):]
    return value


def agent_prices(cfg: EcabConfig) -> dict | str | None:
    """The agent's price table as its cost is computed (ecab/llm/settings.py honest_prices), "unknown" when it
    has none (an own endpoint without prices given: its cost in the summary is not a price); None for an
    agent that calls no endpoint. Decided on the config as given, before any simulator is started."""
    from ecab.agents import llm_settings
    settings = llm_settings(cfg.model)
    if settings is None:
        return None
    return dict(settings.price_per_million) or "unknown"


def _prepare_locked(cfg: EcabConfig, tasks: list[Task], catalog, folder) -> None:
    from ecab.runs.lock import LOCK_NAME
    resolved = redact(dataclasses.asdict(cfg))
    # The runner (local or ray, its concurrency) never changes a result, so a run may resume on another.
    identity = identity_of(resolved)
    manifest = {
        "run_name": run_name(cfg),
        # what the summary and the report call the model: an own endpoint's label, never the provider's name
        "model": naming.run_model_label(cfg), "model_config": cfg.model.name,
        "config_hash": stable_hash(identity),
        "task_set_hash": stable_hash([t.to_dict() for t in tasks]),
        "catalog_fingerprint": getattr(catalog, "fingerprint", None),
        "tasks_path": folder.tasks_file.name,
        "n_tasks": len(tasks),
        "versions": package_versions(),
    }
    prices = agent_prices(cfg)
    if prices is not None:
        manifest["agent_prices"] = prices
    if cfg.run.resume:
        old = _old_manifest(folder)
        _check_resumable(folder, old, manifest, legacy_hash=stable_hash(identity_of(resolved, with_cache_paths=True)))
    else:
        old = None
        if any(entry.name != LOCK_NAME for entry in folder.path.iterdir()):
            aside = move_aside(folder.path, keep=(LOCK_NAME,))
            print(f"run.resume=false: the previous run in {folder.path} was moved to {aside}")
    # The manifest is written before any trajectory can be (the runner appends only after this returns): a
    # kill before it leaves no episode, a kill after it leaves episodes only beside their own manifest.
    folder.create()
    folder.write_config(OmegaConf.to_yaml(OmegaConf.create(resolved)))
    folder.write_tasks(tasks)
    manifest["started_at"] = old.get("started_at") if old is not None else time.strftime("%Y-%m-%dT%H:%M:%S")
    folder.write_manifest(manifest)


def _check_resumable(folder, old: dict | None, manifest: dict, legacy_hash: str | None = None) -> None:
    """Refuse to resume into a folder whose episodes may be of another run: a different config, task set or
    catalog, or episodes whose identity nobody recorded (no manifest). `legacy_hash`: this config's hash as runs
    made before the cache paths left the identity computed it; such a run resumes (and its manifest is
    rewritten with the new hash)."""
    if old is not None and legacy_hash is not None and old.get("config_hash") == legacy_hash:
        old = {**old, "config_hash": manifest["config_hash"]}
    if old is None:
        if folder.holds_episodes():
            raise ConfigError(f"run folder {folder.path} holds episodes but no {folder.manifest_path.name} (an "
                              "interrupted move or a deleted manifest): move it away or use run.resume=false")
        return
    changed = [k for k in ("config_hash", "task_set_hash", "catalog_fingerprint") if old.get(k) != manifest[k]]
    if changed:
        raise ConfigError(f"run folder {folder.path} holds a run with a different "
                          f"{' and '.join(c.replace('_', ' ') for c in changed)}; use another run.name, "
                          "or run.resume=false to start afresh")


def _old_manifest(folder) -> dict | None:
    """The folder's manifest, None when it has none. One that is there but unreadable, or not an object, is an
    error naming it: treating it as absent would let any config adopt the folder's episodes."""
    if not folder.manifest_path.exists():
        return None
    try:
        old = folder.read_manifest()
    except (OSError, ValueError) as exc:
        raise ConfigError(f"run folder {folder.path}: {folder.manifest_path.name} is unreadable ({exc}); "
                          "move the folder away or use run.resume=false") from None
    if not isinstance(old, dict):
        raise ConfigError(f"run folder {folder.path}: {folder.manifest_path.name} is not a JSON object; "
                          "move the folder away or use run.resume=false")
    return old


def run_episodes(cfg: Config, tasks: list[Task], catalog, folder, *, catalog_pool=None,
                 on_done=None) -> RunnerStats:
    """Run the units not yet finished in the folder (resume; infra_error ones run again) on the configured
    runner (`on_done(trajectory)` after each); records the runner's counts (retried units, catalog actor
    restarts, limiter rates) in the manifest under runner_stats and returns them. `catalog_pool`: see
    make_runner."""
    from ecab.core.unit import make_units
    from ecab.env.episode import EpisodeSettings
    from ecab.runner.factory import make_runner

    cfg = parse(cfg)
    units = make_units([t.id for t in tasks], cfg.model.name, cfg.budget, cfg.seed, cfg.trials)
    done = {k for k, t in folder.latest_trajectories().items() if t.termination != "infra_error"}
    todo = [u for u in units if u.key not in done]
    if len(todo) < len(units):
        print(f"resuming: {len(units) - len(todo)} of {len(units)} episodes already done")
    wall_clock = cfg.episode.wall_clock_s or \
        (cfg.model.wall_clock_s if isinstance(cfg.model, EndpointModelConfig) else None)
    settings = EpisodeSettings(budget=cfg.budget, final_warning=cfg.episode.final_warning,
                               wall_clock_s=float(wall_clock) if wall_clock else None)
    by_id = {t.id: t for t in tasks}
    simulator, cfg = start_simulator(cfg)   # after the manifest: the simulator's port is not part of the config
    try:
        runner = make_runner(cfg, catalog_pool=catalog_pool)
        stats = runner.run(todo, by_id, catalog, folder, settings, on_done=on_done)
    finally:
        folder.drop_empty_inflight()
        if simulator is not None:
            simulator.stop()
    stats.resumed_units = len(units) - len(todo)
    manifest = folder.read_manifest()
    manifest["runner_stats"] = stats.to_dict()
    folder.write_manifest(manifest)
    return stats


def judge_and_reduce(cfg: Config, tasks: list[Task], catalog, folder) -> dict:
    from ecab.judge.dispatch import judge_run
    from ecab.reduce import reduce_run

    cfg = parse(cfg)
    by_id = {t.id: t for t in tasks}
    trajectories = [t for t in folder.latest_trajectories().values() if t.id in by_id]
    judged = judge_run(cfg.judge, by_id, trajectories, catalog)   # judge=rules | llm
    folder.write_verdicts(judged.judge, judged.judgements)
    manifest = folder.read_manifest()
    if "review_checker" in judged.describe:
        manifest["review_checker"] = judged.describe["review_checker"]
    manifest["judge"] = judged.describe
    manifest["judge_model"] = judged.judge_model
    manifest["task_audit"] = task_audit(cfg, tasks, catalog)   # how hard the task set is (reduce shows it)
    manifest["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    folder.write_manifest(manifest)
    # Reduce from the files on disk, exactly as `python -m ecab.reduce runs/<name>` would.
    summary = reduce_run(folder.path)
    return summary


def task_audit(cfg: Config, tasks: list[Task], catalog) -> dict:
    """The validity audit headline of the run's task set (ecab/construct/validity.py): from the benchmark
    folder's audit (written at construction) when it covers every task, else computed when the catalog is
    small, else "not audited" with the reason. Never fails a finished run: an error becomes the reason."""
    from ecab.construct.validity import not_audited, task_set_audit
    cfg = parse(cfg)
    try:
        if cfg.benchmark.source == "file":
            bench_dir = Path(str(cfg.benchmark.path)).parent
        else:
            from ecab.construct.benchmark_cache import ensure_benchmark
            bench_dir = ensure_benchmark(cfg, catalog, Path(cfg.cache_dir), progress=False).parent
        return task_set_audit(tasks, catalog, benchmark_dir=bench_dir)
    except Exception as exc:  # noqa: BLE001 - the summary says why, the run's results stand
        return not_audited(f"the audit failed: {type(exc).__name__}: {exc}")


def infra_errors(folder, tasks: list[Task] | None = None) -> list:
    """The run's units left in infra_error (latest record per unit), in unit order."""
    ids = {t.id for t in tasks} if tasks is not None else None
    return [t for t in folder.latest_trajectories().values()
            if t.termination == "infra_error" and (ids is None or t.id in ids)]


def headline(summary: dict, folder, infra: list | None = None) -> str:
    pct = lambda x: f"{100 * (x or 0):.1f}%"  # noqa: E731
    infra = infra_errors(folder) if infra is None else infra
    lines = [f"results: {folder.path}/ (summary.md, summary.json, {folder.verdicts_path.name}, trajectories/)"]
    if infra:
        lines.append(f"INFRA ERRORS: {len(infra)} of {summary.get('total_samples', 0)} episodes did not finish "
                     f"(first: {infra[0].error}); re-run the same command to retry them")
    lines += [
             f"accuracy {pct(summary.get('overall_accuracy'))} "
             f"(exact {summary.get('exact_match_correct', 0)}, non-exact correct "
             f"{summary.get('non_exact_but_correct', 0)}) over {summary.get('evaluated_samples', 0)} episodes; "
             f"rubric satisfaction {pct(summary.get('overall_rubric_satisfaction'))}; "
             f"avg tool calls {summary.get('avg_tool_calls', 0):.1f}"]
    by_source = summary.get("by_source") or {}
    if by_source:
        lines.append("satisfaction by source: " + ", ".join(
            f"{s} {pct(v.get('satisfaction'))}" for s, v in by_source.items()))
    if (summary.get("task_audit") or {}).get("headline"):
        lines.append(f"task set: {summary['task_audit']['headline']}")
    lines += [f"WARNING: {warning}" for warning in summary.get("warnings") or []]
    return "\n".join(lines)


def warn_if_no_sandbox() -> None:
    """Say once, at the start, when python_execute cannot be isolated here (its calls then fail closed)."""
    from ecab.env.sandbox import sandbox_status

    status = sandbox_status()
    if not status.available:
        print(f"warning: {status.line()}")


def main_job(cfg: Config) -> dict:
    """The whole run of one composed (or parsed) config; returns the summary, with `infra_error_units` (units
    left in infra_error) added."""
    cfg = validate(cfg)
    started = time.perf_counter()
    check_agent_endpoint(cfg)   # an own endpoint is checked before anything is built (docs/local-models.md)
    tasks, catalog = tasks_and_catalog(cfg)
    folder = prepare_folder(cfg, tasks, catalog)
    try:
        print(f"ecab: {len(tasks)} tasks x {cfg.trials} trial(s), model={naming.run_model_label(cfg)}, "
              f"budget={cfg.budget}, "
              f"catalog={catalog.fingerprint[:12]} ({catalog.count()} products) -> {folder.path}")
        warn_if_no_sandbox()
        run_episodes(cfg, tasks, catalog, folder)
        summary = judge_and_reduce(cfg, tasks, catalog, folder)
        infra = infra_errors(folder, tasks)
    finally:
        folder.release()
    print(headline(summary, folder, infra))
    print(f"done in {time.perf_counter() - started:.1f} s")
    return {**summary, "infra_error_units": len(infra),
            "first_infra_error": infra[0].error if infra else None}


def check_agent_endpoint(cfg: EcabConfig) -> None:
    """Before any work, the agent's endpoint: reachable, serving the model id, and (one probe turn) answering
    with tool calls ecab can read, else a hint; a refusal is one ConfigError line. Skipped for agents that call no
    endpoint, for model=sim's own simulator, and for the OpenAI API (where a probe turn is a paid request and
    the model list and tool calls are known)."""
    from ecab.agents import llm_settings
    settings = llm_settings(cfg.model)
    if settings is None or settings.simulated or not settings.base_url \
            or not getattr(cfg.model, "endpoint_check", True):
        return
    from ecab.env.agent_protocol import system_prompt
    from ecab.env.tools import tool_schemas
    from ecab.llm.endpoint_check import check_endpoint
    report = check_endpoint(settings, probe=getattr(cfg.model, "kind", None) == "openai", tools=tool_schemas(),
                            system=system_prompt(cfg.budget))
    print("\n".join(report.lines()))


EXIT_INFRA_ERRORS = 3   # the run ended, but some units are left in infra_error: re-run to retry them
_exit_code = 0          # the worst outcome of the run's jobs (several in a -m sweep); sys.exit at the end


def exit_code() -> int:
    return _exit_code


register_schemas()   # conf/ composes against the typed schema (ecab/config/schema.py)
naming.register_resolvers()   # ${ecab_sweep:...}: a sweep's folder under run.dir (conf/config.yaml hydra.sweep)


def in_sweep() -> str | None:
    """This job's overrides when it is one job of a `-m` sweep, else None."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    if not HydraConfig.initialized() or HydraConfig.get().mode != RunMode.MULTIRUN:
        return None
    return " ".join(HydraConfig.get().overrides.task)


def fail_job(message: str, code: int = 2) -> None:
    """A job's one error line. A single run exits with `code`; one job of a sweep records it as the sweep's exit
    code and returns, so the other jobs run and the sweep's table is written."""
    global _exit_code
    job = in_sweep()
    if job is None:
        die(message, code)
    print(f"ecab: error: job {job}: {message}", file=sys.stderr)
    _exit_code = max(_exit_code, code)


@hydra.main(config_path="../conf", config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> str | None:
    """One job; returns its run folder (a sweep's callback collects them: ecab/reduce/sweep_callback.py), None
    when the job failed."""
    global _exit_code
    try:
        typed = parse(cfg)         # the one parse of this job's config
        summary = main_job(typed)
    except (ConfigError, FormatError) as exc:
        fail_job(str(exc))
        return None
    except EndpointRefused as exc:
        fail_job(f"{exc}; stopped the run (finished episodes are saved)")
        return None
    except RunnerFailed as exc:
        fail_job(str(exc))
        return None
    except KeyboardInterrupt:      # Ctrl-C, or SIGTERM (`ray job stop`) turned into one by stop_on_sigterm
        message, code = interrupted()
        die(message, code=code)
    if summary["infra_error_units"]:
        print(f"ecab: error: {summary['infra_error_units']} of {summary.get('total_samples', 0)} episodes ended "
              f"in infra_error (first: {summary['first_infra_error']}); re-run the same command to retry them",
              file=sys.stderr)
        _exit_code = max(_exit_code, EXIT_INFRA_ERRORS)
    folder = Path(typed.run.dir) / run_name(typed)
    report_after_run(folder)   # the report.html of the run; prints its path
    return str(folder)


if __name__ == "__main__":
    configure_process_env()   # first: before anything imports Ray, Hugging Face or tokenizers
    stop_on_sigterm()         # `ray job stop` sends SIGTERM: stop as Ctrl-C does, with one line and status 143
    if {"-h", "--help"} & set(sys.argv[1:]):
        # Hydra's help (below) lists the config groups and the composed config; say first what the command is
        what = "\n\n".join(__doc__.strip().split("\n\n")[:2])    # the user's part of the docstring
        print(f"usage: python -m ecab.run [overrides]\n\n{what}\n\noverrides: Hydra key=value pairs; "
              "conf/config.yaml has every key and its comment. Hydra's help follows.\n")
    try:
        # a sweep's jobs are validated up front (a missing key refused before the first job runs)
        sweep = bool({"-m", "--multirun"} & set(sys.argv[1:]))
        sys.argv[1:] = preflight(sys.argv[1:], check=validate if sweep else None)
    except ConfigError as exc:
        die(str(exc))
    main()
    sys.exit(exit_code())
