"""runner=ray's cluster: its settings (`RayOptions`, from runner.*) and the limiter actors, one per LLM endpoint
(`start_limiters`); connecting to Ray is ecab/core/ray_connect.py."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import ray


@dataclass
class RayOptions:
    workers: int = 2
    concurrency: int = 256            # episodes in flight over all workers
    worker_cpus: float = 0.0          # I/O bound: reserving CPUs could leave actors pending on small nodes
    catalog_cpus: float = 0.0
    catalog_max_concurrency: int = 16
    worker_restarts: int = 3          # dead workers replaced at most this many times per run

    @classmethod
    def from_config(cls, runner_cfg: Any) -> "RayOptions":
        get = runner_cfg.get if hasattr(runner_cfg, "get") else (lambda k, d=None: getattr(runner_cfg, k, d))
        opts = cls(**{f: get(f, default) for f, default in asdict(cls()).items()})
        if opts.workers < 1 or opts.concurrency < 1:
            raise ValueError(f"runner.workers and runner.concurrency must be >= 1 "
                             f"(got {opts.workers}, {opts.concurrency})")
        return opts


def start_limiters(model_cfgs: list[dict], settings: dict) -> dict[str, Any]:
    """One limiter actor (running LimiterService) per distinct LLM endpoint, the OpenAI API's (base_url null)
    included; offline agents have no endpoint and need none."""
    from ecab.agents import llm_settings
    from ecab.llm.limits import LimiterService, endpoint_key

    actor_cls = ray.remote(LimiterService)
    limiters: dict[str, Any] = {}
    for model_cfg in model_cfgs:
        model = llm_settings(model_cfg)
        if model is None:
            continue
        key = endpoint_key(model)
        if key not in limiters:
            # acquire() waits inside the actor, so allow as many concurrent calls as episodes in flight.
            limiters[key] = actor_cls.options(num_cpus=0, max_concurrency=100_000).remote(settings)
    return limiters
