"""The typed config: one dataclass per config group and for the root, registered in Hydra's ConfigStore as the
schemas of the conf/ YAML files, so composition type-checks (an unknown key, a string where an integer goes).

Rule for defaults: every value lives in ONE place. The conf/ YAML files hold every value a shipped group option
sets (that is where a user reads and overrides it). A dataclass field has a default only for a key no shipped YAML
sets: the plug-in keys (`kind`, `target`, `options`), keys only some options have (`benchmark.name`), the runner's
`admission` and `limits` blocks (their values live here; conf/runner/*.yaml only names them in a comment), and
the endpoint knobs an inline model block may leave out (ecab.llm.settings.ModelSettings takes its defaults from
EndpointModelConfig). Code below the entry points reads the typed section, never `cfg.get(key, default)`.

Checks: each section's `__post_init__` (run by `OmegaConf.to_object`, i.e. by `parse`) checks its numbers
(`num(...)` fields) and its choices, with one line naming the key. A "number" field (an int or a float, as the
YAML wrote it) is typed `Any` so that `1` stays `1` in the run's config (its hash) and the check names the key.

`max_attempts` is per section, each documented at its field: runner (episode attempts when one ends in
infra_error), model (HTTP attempts per request), judge (replies asked for; judge.transport_attempts: HTTP attempts),
construct (drafts per candidate product), construct.llm (replies per query).

Schemas of options with keys of their own are subclasses, chosen by the option's defaults list
(`defaults: [schema_endpoint, _self_]` in conf/model/gpt-5.yaml): EndpointModelConfig, LLMJudgeConfig,
LocalRunnerConfig, RayRunnerConfig, TargetsCatalogConfig.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from omegaconf import MISSING

from ecab.config.checks import ConfigError, check_number

Number = Any   # an int or a finite float, checked by `num`; kept as written (1 stays 1)


def num(kind: str, low: float | None = None, inclusive: bool = True, nullable: bool = False,
        default: Any = MISSING) -> Any:
    """A numeric field checked in `__post_init__` (ecab.config.checks.check_number)."""
    return field(default=default, metadata={"check": (kind, low, inclusive, nullable)})


def _opt_dict() -> Any:
    return field(default_factory=dict)


@dataclass
class Section:
    """A config section: `KEY` is where it sits (for error messages); numbers are checked after composition."""

    KEY: ClassVar[str] = ""

    def __post_init__(self) -> None:
        for f in fields(self):
            spec = f.metadata.get("check")
            if spec is not None:
                check_number(self.key(f.name), getattr(self, f.name), *spec)
        self.check()

    def key(self, name: str) -> str:
        return f"{self.KEY}.{name}" if self.KEY else name

    def check(self) -> None:
        """Checks beyond the numbers (choices, cross-field); one ConfigError line naming the key."""

    def choice(self, name: str, choices: tuple[str, ...]) -> None:
        value = getattr(self, name)
        if value not in choices:
            raise ConfigError(f"{self.key(name)} must be one of {', '.join(choices)}, got {value!r}")


# ----------------------------------------------------------------------------------------------- model

@dataclass
class ModelConfig(Section):
    """conf/model/*.yaml: which agent (`kind`: oracle, heuristic, random, query-only, openai, a registered name,
    or python with `target: pkg.mod:function`), and the user's own keys for it (`options`)."""

    KEY: ClassVar[str] = "model"
    name: str = MISSING
    kind: str = MISSING
    target: str | None = None
    options: dict[str, Any] = _opt_dict()


HTTP_CLIENTS = ("aiohttp", "httpx")
TOOL_CALL_FORMATS = ("native", "hermes", "json")   # where a model writes its tool calls (ecab/llm/tool_text.py)
TOOL_CHOICES = ("auto", "required", "none")


@dataclass
class EndpointModelConfig(ModelConfig):
    """An OpenAI-compatible endpoint (kind openai; conf/model/gpt-5.yaml and the others). The defaults are
    those of an inline block (judge.model, construct.llm.model) that leaves a knob out."""

    model_id: str = MISSING
    base_url: str | None = None                     # None: the OpenAI API
    api_key_env: str | None = None                  # the variable's NAME, never the key
    temperature: Number = num("number", 0, nullable=True, default=1.0)     # None: not sent
    max_output_tokens: int | None = num("int", 1, nullable=True, default=None)
    max_tokens_param: str = "max_completion_tokens"
    reasoning_effort: str | None = None
    parallel_tool_calls: bool | None = False
    extra_body: dict[str, Any] = _opt_dict()
    echo_reasoning: bool = True
    price_per_million: dict[str, Any] = _opt_dict()  # input, cached_input, output (USD)
    timeout_s: Number = num("number", 0, inclusive=False, default=300.0)
    max_attempts: int = num("int", 1, default=6)      # HTTP attempts per request, retries included
    max_retry_wait_s: Number = num("number", 0, default=60.0)
    backoff_base_s: Number = num("number", 0, default=1.0)
    concurrency: int = num("int", 1, default=64)
    http_client: str = "aiohttp"
    wall_clock_s: Number = num("number", 0, inclusive=False, nullable=True, default=None)
    sim: dict[str, Any] | None = None               # model=sim: the simulator's settings (ecab/sim)
    # Locally served models (docs/local-models.md): where tool calls are written, what the request asks for,
    # the context the conversation must fit, streaming with an idle timeout, a seed per episode.
    tool_call_format: str = "native"                # native | hermes | json
    tool_choice: str = "auto"                       # auto | required | none
    context_tokens: int | None = num("int", 256, nullable=True, default=None)   # None: no limit kept
    stream: bool = False                            # stream replies; idle_timeout_s then bounds each wait
    idle_timeout_s: Number | None = num("number", 0, inclusive=False, nullable=True, default=None)
    send_seed: bool = False                         # send the episode's seed (llama.cpp, vLLM honour it)
    endpoint_check: bool = True                     # check an own base_url before any work (ecab/llm/endpoint_check.py)

    def check(self) -> None:
        self.choice("http_client", HTTP_CLIENTS)
        self.choice("tool_call_format", TOOL_CALL_FORMATS)
        self.choice("tool_choice", TOOL_CHOICES)


# --------------------------------------------------------------------------------------------- catalog

@dataclass
class CatalogConfig(Section):
    """conf/catalog/*.yaml: where the products come from (`source`; python with `target: pkg.mod:function`
    for a user's source, `options` for its own keys), and how the catalog is built (never in the fingerprint)."""

    KEY: ClassVar[str] = "catalog"
    source: str = MISSING
    products: int | None = num("int", 1, nullable=True)
    seed: int = num("int")
    shards: int = num("int", 1)
    replicas: int = num("int", 1)
    path: str | None = MISSING
    reviews_path: str | None = MISSING
    batch_size: int = num("int", 1)
    max_reviews: int = num("int", 0)
    review_seed: int = MISSING
    builder: str = MISSING
    ray_address: str | None = MISSING
    embed_workers: int = num("int", 1)
    embed_cpus: Number = num("number", 0)
    embed_device: str = MISSING
    target: str | None = None
    options: dict[str, Any] = _opt_dict()

    def check(self) -> None:
        if self.builder not in ("local", "ray"):
            raise ConfigError(f"catalog.builder: unknown builder {self.builder!r}; choose one of: local, ray")


@dataclass
class TargetsCatalogConfig(CatalogConfig):
    """catalog=targets: the tasks' targets, their siblings and distractors (ecab/catalog/siblings)."""

    siblings: int = num("int", 0)
    query_only_siblings: int = num("int", 0)


# ------------------------------------------------------------------------------------------- benchmark

@dataclass
class BenchmarkConfig(Section):
    KEY: ClassVar[str] = "benchmark"
    source: str = MISSING                       # generated | file
    path: str | None = MISSING
    n_per_intent: int = num("int", 1)
    limit: int | None = num("int", 1, nullable=True)
    # The selection (ecab/construct/task_selection.py): exactly these task ids; a seeded order before the limit.
    ids: list[str] | None = None
    shuffle: bool = False
    max_line_bytes: int = num("int", 1)
    name: str | None = None                     # benchmark=released: names the run and the fetch command
    allow_missing_targets: bool = False         # file: run even when targets are not in the catalog (issue 29)

    def check(self) -> None:
        self.choice("source", ("generated", "file"))
        if self.source == "file" and self.path is None:
            raise ConfigError("missing required config key 'benchmark.path' (set it on the command line: "
                              "benchmark.path=...)")
        if self.ids is not None:
            # exact tasks: a limit or shuffle beside them would be silently ignored (yet named in the run name)
            if not self.ids:
                raise ConfigError("benchmark.ids=[] selects no task: give task ids (benchmark.ids=[id1,id2]) or "
                                  "leave it unset")
            given = [k for k, on in (("limit", self.limit is not None), ("shuffle", self.shuffle)) if on]
            if given:
                raise ConfigError(f"benchmark.ids selects exact tasks, so benchmark.{given[0]} does not apply: "
                                  f"unset one of them")


# ----------------------------------------------------------------------------------------------- judge

@dataclass
class JudgeConfig(Section):
    """conf/judge/*.yaml: `name` names the verdict file; `kind` the judge (None: the name, rules or llm; a
    registered name; python with `target`); `options` the user's own keys."""

    KEY: ClassVar[str] = "judge"
    name: str = MISSING
    kind: str | None = None
    target: str | None = None
    options: dict[str, Any] = _opt_dict()
    review_threshold: Number = num("number", nullable=True, default=None)


@dataclass
class LLMJudgeConfig(JudgeConfig):
    """judge=llm (conf/judge/llm.yaml)."""

    model: Any = MISSING                        # a conf/model name, or an inline endpoint block
    temperature: Number = num("number", 0, nullable=True)
    max_tokens: int | None = num("int", 1, nullable=True)
    granularity: str = MISSING
    types: list[str] = MISSING
    attribute_fallback: bool = MISSING
    skip_exact: bool = MISSING
    max_attempts: int = num("int", 1)          # replies asked for when one does not match the rubric ids
    transport_attempts: int = num("int", 1)    # HTTP attempts per request
    concurrency: int = num("int", 1)
    timeout_s: Number = num("number", 0, inclusive=False)
    json_mode: bool = MISSING
    cache: bool = MISSING
    cache_dir: str | None = MISSING
    max_reviews: int = num("int", 0)


# ---------------------------------------------------------------------------------------------- runner

@dataclass
class AdmissionConfig(Section):
    """runner.admission (runner=local): how episodes start (ecab/runner/admission.py)."""

    KEY: ClassVar[str] = "runner.admission"
    enabled: bool = True             # false: all C start at once and stay in flight (the fixed window)
    target_delay_s: Number = num("number", 0, inclusive=False, default=0.1)   # the queueing delay held under
    initial: int = num("int", 1, default=16)                # episodes allowed in flight at the start
    growth_per_s: Number = num("number", 0, default=16.0)   # window growth per second under the target
    decrease: Number = num("rate", 0, inclusive=False, default=0.9)   # window = in flight x this, over the target
    decide_every_s: Number = num("number", 0, inclusive=False, default=1.0)   # on the median probe since the last
    probe_interval_s: Number = num("number", 0, inclusive=False, default=0.1)
    floor: int = num("int", 1, default=4)                   # the window never shrinks below this


@dataclass
class LimitsConfig(Section):
    """runner.limits: the adaptive per-endpoint concurrency window (ecab/llm/limits.py)."""

    KEY: ClassVar[str] = "runner.limits"
    max_concurrency: int = num("int", 1, default=1024)      # the window never grows past this
    min_concurrency: int = num("int", 1, default=1)
    initial: int | None = num("int", 1, nullable=True, default=None)   # None: max_concurrency (a 429 shrinks it fast)
    decrease: Number = num("rate", 0, inclusive=False, default=0.7)    # window *= decrease on a 429 (once per cooldown)
    increase: Number = num("number", 0, inclusive=False, default=1.0)  # window += increase per window of successes
    max_retry_after_s: Number = num("number", 0, default=30.0)        # cap on an honoured Retry-After

    def check(self) -> None:
        if self.max_concurrency < self.min_concurrency:
            raise ConfigError("runner.limits: need 1 <= min_concurrency <= max_concurrency")


RUNNER_NAMES = ("local", "ray")   # ecab/runner/factory.py RUNNERS


@dataclass
class RunnerConfig(Section):
    KEY: ClassVar[str] = "runner"
    name: str = MISSING
    concurrency: int = num("int", 1)            # episodes in flight
    max_attempts: int = num("int", 1)           # episode attempts when one ends in infra_error
    step_delay_s: Number = num("number", 0)     # test/bench aid: sleep before each agent turn
    # an episode in flight is checkpointed at most this often (trajectories/inflight/); null: never
    checkpoint_every_s: Number | None = num("number", 0, nullable=True, default=5.0)
    RUNNER: ClassVar[str] = ""                  # the runner.name whose keys this section has

    def check(self) -> None:
        # Here, not only where the runner is made: every check runs before the run folder exists.
        self.choice("name", RUNNER_NAMES)
        if self.RUNNER and self.name != self.RUNNER:
            raise ConfigError(f"runner.name={self.name} needs the keys of conf/runner/{self.name}.yaml (choose "
                              f"the runner with runner={self.name}, not runner.name=...)")


def process_count(value: Any) -> int | None:
    """runner.processes: None for auto (or unset), else the count; anything else is one line naming the key."""
    if value is None or str(value) == "auto":
        return None
    try:
        count = int(value)
    except (TypeError, ValueError):
        count = 0
    if count < 1 or str(count) != str(value).strip():
        raise ConfigError(f"runner.processes must be auto or a whole number >= 1, got {value!r}")
    return count


@dataclass
class LocalRunnerConfig(RunnerConfig):
    processes: Any = MISSING                    # auto | a whole number >= 1
    admission: AdmissionConfig = field(default_factory=AdmissionConfig)
    warm_queries: bool = MISSING
    # runner=local keeps no `limits` block: the limiter's defaults (LimitsConfig) apply
    limits: LimitsConfig = field(default_factory=LimitsConfig)

    RUNNER: ClassVar[str] = "local"

    def check(self) -> None:
        super().check()
        process_count(self.processes)


@dataclass
class RayRunnerConfig(RunnerConfig):
    address: str | None = MISSING
    workers: int = num("int", 1)
    worker_cpus: Number = num("number", 0)
    catalog_cpus: Number = num("number", 0)
    catalog_max_concurrency: int = num("int", 1)
    worker_restarts: int = num("int", 0)
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    RUNNER: ClassVar[str] = "ray"


# ------------------------------------------------------------------------------------------ root groups

@dataclass
class EpisodeConfig(Section):
    KEY: ClassVar[str] = "episode"
    final_warning: bool = MISSING
    wall_clock_s: Number = num("number", 0, inclusive=False, nullable=True)


SEARCH_MODES = ("hybrid", "fts", "vector", "original")


@dataclass
class ToolsConfig(Section):
    KEY: ClassVar[str] = "tools"
    search: str = MISSING
    user: str = MISSING
    extra: list[str] = field(default_factory=list)   # import paths of users' Tool records (docs/extending.md)

    def check(self) -> None:
        if self.search not in SEARCH_MODES:
            raise ConfigError(f"tools.search must be hybrid, fts, vector or original, got {self.search!r}")


@dataclass
class RunConfig(Section):
    KEY: ClassVar[str] = "run"
    name: str | None = MISSING
    dir: str = MISSING
    resume: bool = MISSING
    progress: bool = MISSING


@dataclass
class ConstructLLMConfig(Section):
    """construct.llm (construct.verbalizer=llm): ecab/construct/llm_verbalizer.py."""

    KEY: ClassVar[str] = "construct.llm"
    model: Any = MISSING                        # a conf/model name, or an inline endpoint block
    temperature: Number = num("number", 0, nullable=True)
    max_attempts: int = num("int", 1)           # replies per query
    cache: bool = MISSING
    cache_dir: str | None = MISSING
    max_tokens: int | None = num("int", 1, nullable=True, default=None)


@dataclass
class ConstructConfig(Section):
    KEY: ClassVar[str] = "construct"
    seed: int = num("int")
    n_per_intent: int = num("int", 0)
    intents: list[str] = MISSING
    max_matches: int = num("int", 1)
    load_bearing_only: bool = MISSING
    min_hidden_load_bearing: Number = num("rate", 0)
    min_query_load_bearing: Number = num("rate", 0)
    min_query_matches: int = num("int", 0)
    audit_reviews: bool = MISSING
    workers: int = num("int", 1)
    max_attempts: int = num("int", 1)           # drafts tried per candidate product (re-seeded each time)
    max_candidates: int | None = num("int", 1, nullable=True)
    verbalizer: str = MISSING                   # template | llm
    llm: ConstructLLMConfig = MISSING
    out: str | None = MISSING
    min_category_size: int | None = num("int", 1, nullable=True, default=None)   # None: the sampler's own

    def check(self) -> None:
        self.choice("verbalizer", ("template", "llm"))


@dataclass
class EcabConfig(Section):
    """The root: conf/config.yaml with one option of each group."""

    model: ModelConfig = MISSING
    catalog: CatalogConfig = MISSING
    benchmark: BenchmarkConfig = MISSING
    judge: JudgeConfig = MISSING
    runner: RunnerConfig = MISSING
    budget: int = num("int", 1)
    seed: int = num("int")
    trials: int = num("int", 1)
    cache_dir: str = MISSING
    episode: EpisodeConfig = MISSING
    tools: ToolsConfig = MISSING
    run: RunConfig = MISSING
    construct: ConstructConfig = MISSING


# The schemas by the names conf/ refers to them (config.yaml's and the options' defaults lists).
SCHEMAS: dict[tuple[str | None, str], type] = {
    (None, "schema"): EcabConfig,
    ("model", "schema_endpoint"): EndpointModelConfig,
    ("catalog", "schema_targets"): TargetsCatalogConfig,
    ("judge", "schema_llm"): LLMJudgeConfig,
    ("runner", "schema_local"): LocalRunnerConfig,
    ("runner", "schema_ray"): RayRunnerConfig,
}


def register_schemas() -> None:
    """Store the schemas in Hydra's ConfigStore (idempotent)."""
    from hydra.core.config_store import ConfigStore

    store = ConfigStore.instance()
    for (group, name), node in SCHEMAS.items():
        store.store(group=group, name=name, node=node)


def field_check(object_type: Any, name: Any) -> tuple | None:
    """The numeric check of field `name` of schema class `object_type` (for a value composition refused)."""
    if not isinstance(object_type, type) or not issubclass(object_type, Section):
        return None
    found = {f.name: f for f in fields(object_type)}.get(str(name))
    return None if found is None else found.metadata.get("check")
