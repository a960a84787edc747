"""runner=ray's cluster: its settings (`RayOptions`: the typed runner section) and the limiter actors, one per
LLM endpoint (`start_limiters`); connecting to Ray is ecab/core/ray_connect.py."""
from __future__ import annotations

from typing import Any

import ray

from ecab.config import RayRunnerConfig


# runner=ray's settings: the typed runner section itself (workers, concurrency, worker_cpus, catalog_cpus,
# catalog_max_concurrency, worker_restarts; conf/runner/ray.yaml holds the values, ecab/config/schema.py the checks).
RayOptions = RayRunnerConfig


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
