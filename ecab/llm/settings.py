"""One model endpoint's settings, built once from the typed model section (`ecab.config.EndpointModelConfig`: a
`conf/model/<name>.yaml`, or an inline block), by `model_settings`.

Every LLM caller reads its model through `ModelSettings`: the agent (`model`), the LLM judge (`judge.model`)
and the LLM verbalizer (`construct.llm.model`). One meaning per field: `max_output_tokens` is the output-token
limit (sent as `max_tokens_param` names it), `max_attempts` the HTTP attempts per request (retries included),
`concurrency` the requests in flight through one client. A role with knobs of its own (the judge's
temperature, its reply attempts) keeps them in its own small settings object next to a `ModelSettings`
(`for_role` applies the role's temperature and output limit). Errors name the config key the block came from
(`config_key`: model, judge.model, construct.llm.model), so no caller has to rewrite them. The fields' defaults
(for an inline block that leaves a knob out) are the schema's (ecab/config/schema.py).
"""
from __future__ import annotations

import dataclasses
import functools
import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from ecab.config import CONF_DIR, ConfigError, EndpointModelConfig, ModelConfig, plain, section
from ecab.config.schema import HTTP_CLIENTS

__all__ = ["HTTP_CLIENTS", "ModelSettings", "ROLE_OUTPUT_TOKENS", "endpoint_config", "model_settings"]

ROLE_OUTPUT_TOKENS = 4096     # a role's output limit when neither the role nor the model sets one
# null means "do not send" for these; for every other field null means the default
NULLABLE = ("base_url", "api_key_env", "temperature", "max_output_tokens", "reasoning_effort", "parallel_tool_calls",
            "sim", "wall_clock_s", "context_tokens", "idle_timeout_s")


def _default(name: str) -> Any:
    """The schema's default of EndpointModelConfig.<name> (the one place it is written)."""
    return EndpointModelConfig.__dataclass_fields__[name].default


@dataclass(frozen=True)
class ModelSettings:
    """What it takes to call one OpenAI-compatible model; immutable (`replace` makes a variant)."""

    name: str
    model_id: str
    base_url: str | None = None                         # None: the OpenAI API
    api_key_env: str | None = None                      # the variable's NAME (ecab/llm/keys.py)
    temperature: float | None = _default("temperature")        # None: not sent
    max_output_tokens: int | None = None                # None: not sent
    max_tokens_param: str = _default("max_tokens_param")       # OpenRouter and vLLM also accept it; some want max_tokens
    reasoning_effort: str | None = None                 # OpenAI reasoning models (top-level field)
    parallel_tool_calls: bool | None = False            # with tools only; None: not sent
    extra_body: dict[str, Any] = field(default_factory=dict)    # provider fields, merged into the body
    echo_reasoning: bool = True                         # keep provider reasoning fields on the message
    price_per_million: dict[str, float] = field(default_factory=dict)   # input, cached_input, output (USD)
    timeout_s: float = _default("timeout_s")                   # per HTTP attempt
    max_attempts: int = _default("max_attempts")               # HTTP attempts per request, retries included
    max_retry_wait_s: float = _default("max_retry_wait_s")     # cap on Retry-After and backoff
    backoff_base_s: float = _default("backoff_base_s")
    concurrency: int = _default("concurrency")                 # requests in flight through one client
    http_client: str = _default("http_client")                 # or "httpx" (ecab/llm/client.py::http_client)
    sim: dict[str, Any] | None = None                   # the simulator's settings (model=sim), see ecab/sim
    tool_call_format: str = _default("tool_call_format")       # native | hermes | json (ecab/llm/tool_text.py)
    tool_choice: str = _default("tool_choice")                 # auto | required | none, sent with the tools
    context_tokens: int | None = None                   # the conversation is kept under it (None: no limit)
    stream: bool = _default("stream")                          # stream the reply (idle_timeout_s per chunk)
    idle_timeout_s: float | None = None                 # with stream: the longest wait for the next chunk
    send_seed: bool = _default("send_seed")                    # send the episode's seed with each request
    config_key: str = "model"                           # where the block was configured, for error messages

    # A frozen dataclass with dict fields has no usable generated hash; the settings are hashed as JSON
    # (the LLM verbalizer keeps one client per settings and process).
    def __hash__(self) -> int:
        return hash(json.dumps(dataclasses.asdict(self), sort_keys=True, default=str))

    def replace(self, **changes: Any) -> "ModelSettings":
        return dataclasses.replace(self, **changes)

    def for_role(self, *, temperature: float | None, max_output_tokens: int | None = None,
                 **changes: Any) -> "ModelSettings":
        """These settings as a role with its own temperature and output limit uses them (the judge, the
        verbalizer): no temperature for a reasoning model (reasoning_effort set: OpenAI's reject any but their
        default); the role's output limit, else the model's, else ROLE_OUTPUT_TOKENS."""
        return self.replace(temperature=None if self.reasoning_effort or temperature is None else float(temperature),
                            max_output_tokens=max_output_tokens or self.max_output_tokens or ROLE_OUTPUT_TOKENS,
                            **changes)

    @property
    def simulated(self) -> bool:
        """A simulator model (a `sim` block) with no endpoint yet: whoever calls it starts the simulator."""
        return self.sim is not None and not self.base_url

    def check_http_client(self) -> None:
        if self.http_client not in HTTP_CLIENTS:
            raise ConfigError(f"{self.config_key}.http_client must be one of {', '.join(HTTP_CLIENTS)}, "
                              f"got {self.http_client!r}")

    def cost_usd(self, prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0) -> float | None:
        """USD for one reply from the price table; cached prompt tokens at `cached_input` (else `input`). None
        when there is no price table (an own endpoint without prices, `honest_prices`): the cost is unknown,
        and $0 would read as free."""
        price = self.price_per_million
        if not price:
            return None
        cached_price = price.get("cached_input", price.get("input", 0.0))
        fresh = max(prompt_tokens - cached_tokens, 0)
        dollars = (fresh * price.get("input", 0.0) + cached_tokens * cached_price
                   + completion_tokens * price.get("output", 0.0)) / 1e6
        return round(dollars, 8)


def model_settings(model: Any, *, config_key: str = "model") -> ModelSettings:
    """The settings of a model section: the typed `EndpointModelConfig` (an entry point parsed it), or a
    conf/model name or an inline block (judge.model, construct.llm.model), typed here first."""
    typed = endpoint_config(model, config_key)
    settings = ModelSettings(
        name=typed.name, model_id=str(typed.model_id), base_url=typed.base_url, api_key_env=typed.api_key_env,
        temperature=typed.temperature, max_output_tokens=typed.max_output_tokens,
        max_tokens_param=typed.max_tokens_param, reasoning_effort=typed.reasoning_effort,
        parallel_tool_calls=typed.parallel_tool_calls, extra_body=dict(typed.extra_body),
        echo_reasoning=typed.echo_reasoning, price_per_million=_prices(honest_prices(typed), config_key),
        timeout_s=typed.timeout_s, max_attempts=typed.max_attempts, max_retry_wait_s=typed.max_retry_wait_s,
        backoff_base_s=typed.backoff_base_s, concurrency=typed.concurrency, http_client=typed.http_client,
        sim=dict(typed.sim) if typed.sim is not None else None, tool_call_format=typed.tool_call_format,
        tool_choice=typed.tool_choice, context_tokens=typed.context_tokens, stream=typed.stream,
        idle_timeout_s=typed.idle_timeout_s, send_seed=typed.send_seed, config_key=config_key)
    return settings


def endpoint_config(model: Any, config_key: str = "model") -> EndpointModelConfig:
    """A model section as the typed EndpointModelConfig: as it is when typed; a conf/model name is loaded; an
    inline block gets the schema's defaults for the keys it leaves out (name: inline, kind: openai). A missing
    model_id, a key written into the config, a bad number or http_client is one ConfigError naming `config_key`."""
    if isinstance(model, EndpointModelConfig):
        return model
    if isinstance(model, ModelConfig):
        raise ConfigError(f"{config_key}: the model block has no model_id (model {model.name!r}, kind {model.kind!r})")
    name, block = load_model_block(model, config_key)
    if block.get("api_key"):
        raise ConfigError(f"{config_key}={name}: keys do not belong in the config ({config_key}.api_key); "
                          f"export the key in an environment variable and name it in {config_key}.api_key_env")
    model_id = block.get("model_id") or block.get("model")
    if not model_id:
        raise ConfigError(f"{config_key}: the model block has no model_id")
    known = {f.name for f in dataclasses.fields(EndpointModelConfig)}
    values = {k: v for k, v in block.items() if k in known and (v is not None or k in NULLABLE)}
    values.update(name=str(name), model_id=str(model_id), kind=str(block.get("kind") or "openai"),
                  price_per_million=_flat_prices(block))
    try:
        return section(EndpointModelConfig, values)
    except ConfigError as exc:
        text = str(exc)
        if config_key != "model" and text.startswith("model."):
            text = config_key + text[len("model"):]
        raise ConfigError(text) from None


def load_model_block(model: Any, config_key: str = "model") -> tuple[str, dict[str, Any]]:
    """(name, block) of a conf/model name or an inline block; the name of an inline block without one is
    "inline"."""
    if isinstance(model, str):
        path = CONF_DIR / "model" / f"{model}.yaml"
        if not path.is_file():
            choices = ", ".join(sorted(p.stem for p in (CONF_DIR / "model").glob("*.yaml")))
            raise ConfigError(f"{config_key}: unknown model '{model}'; choose one of: {choices}, "
                              "or give an inline block with base_url and model_id")
        from omegaconf import OmegaConf
        block = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
        assert isinstance(block, dict)
        block.pop("defaults", None)          # the option's schema (schema_endpoint): not a model key
        return str(block.get("name") or model), dict(block)
    block = plain(model)
    if not isinstance(block, Mapping):
        raise ConfigError(f"{config_key} must be a model name or a block with base_url and model_id, got {model!r}")
    return str(block.get("name") or "inline"), dict(block)


def _flat_prices(block: Mapping[str, Any]) -> dict[str, Any]:
    """`price_per_million: {input, cached_input, output}`, or the flat keys price_input_per_mtok /
    price_output_per_mtok of an inline block."""
    prices = dict(block.get("price_per_million") or {})
    for which in ("input", "output"):
        flat = block.get(f"price_{which}_per_mtok")
        if which not in prices and flat is not None:
            prices[which] = flat
    return prices


def honest_prices(model: EndpointModelConfig) -> Mapping[str, Any]:
    """The model's price table, or none (the cost is unknown) when the config points the model at another
    endpoint or model id than its conf/model YAML and keeps the YAML's prices (issue 29: `model=gpt-5
    model.base_url=http://my-vllm:8000/v1` is not charged GPT-5's list prices). Prices given with the override
    (`model.price_per_million.input=...`) count, and only they: an entry left at the YAML's price is the
    provider's, not the endpoint's (cached input then costs what input does). A simulator model whose YAML leaves base_url to the run
    (model=sim) is never "another endpoint": ecab.run sets its URL after the name and the config are fixed."""
    yaml = yaml_endpoint(model.name)
    if yaml is None or (yaml.get("sim") is not None and not yaml.get("base_url")):
        return model.price_per_million
    moved = model.base_url != yaml.get("base_url") or str(model.model_id) != str(yaml.get("model_id"))
    if not moved:
        return model.price_per_million
    listed = _flat_prices(yaml)
    return {k: v for k, v in model.price_per_million.items() if not _same_price(v, listed.get(k))}


@functools.lru_cache(maxsize=64)
def yaml_endpoint(name: str) -> dict[str, Any] | None:
    """conf/model/<name>.yaml as a block, or None when there is none (an inline block, a user's own folder)."""
    if not (CONF_DIR / "model" / f"{name}.yaml").is_file():
        return None
    return load_model_block(name)[1]


def _same_price(a: Any, b: Any) -> bool:
    try:
        return b is not None and float(a) == float(b)
    except (TypeError, ValueError):
        return False       # not a number: kept, and refused with its key by _prices


def _prices(prices: Mapping[str, Any], config_key: str) -> dict[str, float]:
    """USD per million tokens; every price a number."""
    out = {}
    for which, value in prices.items():
        try:
            out[which] = float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{config_key}.price_per_million.{which} must be a number, got {value!r}") from None
    return out
