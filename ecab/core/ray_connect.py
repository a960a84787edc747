"""Connecting this process to Ray, the one way every stage does it (runner=ray's episodes, catalog builds on
Ray Data, the jobs): a local Ray, or a cluster by address."""
from __future__ import annotations

from typing import Any

from ecab.core.process_env import configure_process_env


def ensure_ray(address: str | None = None, **init_kwargs: Any) -> bool:
    """Connect to Ray (a cluster when `address` is set, e.g. "auto"; else a local one, or the cluster of
    a `ray job submit` through RAY_ADDRESS). Returns True when this call started the connection.
    `init_kwargs` go to `ray.init` (e.g. num_cpus for a local Ray); ignored when already connected."""
    import ray

    if ray.is_initialized():
        return False
    # The processes a local Ray starts inherit this process's environment: set it up first, whoever calls.
    configure_process_env()
    # Ray's driver-side logger at "error": its warnings at start (e.g. "Token authentication is enabled for this
    # Ray cluster") are advice to Ray's users, printed before and in the way of ecab's own one-line error. Its
    # errors still print; RAY_AUTH_MODE is left alone (setting it would change whom a cluster admits).
    kwargs: dict[str, Any] = {"include_dashboard": False, "logging_level": "error", "log_to_driver": True,
                              **init_kwargs}
    ray.init(address=address or None, **kwargs)
    return True
