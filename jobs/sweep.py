"""`ray job submit` entrypoint for a Hydra sweep on a Ray cluster: one run folder per (model, budget, ...).

    ray job submit --address http://<head>:8265 --working-dir . -- \
        python jobs/sweep.py model=heuristic,oracle budget=25,50,100 benchmark.limit=200

It is `python -m ecab.run -m runner=ray <your overrides>`: each job of the sweep connects to the cluster of
the submission (RAY_ADDRESS, set by `ray job submit`), starts its catalog actors and episode workers, and
writes runs/<model>-b<budget>-<source>/. The catalog and benchmark are built once by the first job into
cache_dir and reused by the others (cache_dir must be on storage every node can read).
"""
from __future__ import annotations

import os
import sys

# What the sweep says when the cluster refuses it: one line, naming what to set (jobs/README.md, token auth)
REFUSED = ("ecab: error: the Ray cluster at RAY_ADDRESS={address} refused the connection: it wants a token; set "
           "RAY_AUTH_MODE=token and the cluster's token (RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token) "
           "where the job runs (jobs/README.md)")
# Ray 2.60 says ConnectionError, not AuthenticationError, when the cluster's GCS refuses a missing token
UNREACHABLE = ("ecab: error: could not join the Ray cluster at RAY_ADDRESS={address} ({why}): if it uses token "
               "authentication, set RAY_AUTH_MODE=token and its token (RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or "
               "~/.ray/auth_token) where the job runs (jobs/README.md)")


def sweep_argv(args: list[str]) -> list[str]:
    """The ecab.run command line: multirun, runner=ray unless the caller chose a runner."""
    runner = [] if any(a.startswith("runner=") for a in args) else ["runner=ray"]
    multirun = [] if any(a in ("-m", "--multirun") for a in args) else ["-m"]
    return ["ecab.run", *multirun, *runner, *args]


def join_cluster(args: list[str]) -> None:
    """Under `ray job submit` (RAY_ADDRESS set) and runner=ray, join the cluster before the sweep's first job:
    a refused connection is then one line saying what to set, not a traceback in every job of the sweep. The
    runners reuse the connection (ecab.core.ray_connect.ensure_ray)."""
    on_ray = all(a == "runner=ray" for a in args if a.startswith("runner="))   # sweep_argv's default
    address = os.environ.get("RAY_ADDRESS")
    if not address or not on_ray or any(a in ("-h", "--help") for a in args):
        return
    from ecab.core.process_env import configure_process_env

    configure_process_env()   # before Ray is imported
    from ray.exceptions import AuthenticationError

    from ecab.core.ray_connect import ensure_ray

    try:
        ensure_ray(None)      # RAY_ADDRESS, as ray.init reads it
    except AuthenticationError:
        print(REFUSED.format(address=address), file=sys.stderr)
        sys.exit(2)
    except ConnectionError as exc:
        print(UNREACHABLE.format(address=address, why=(str(exc).strip() or type(exc).__name__).splitlines()[0]),
              file=sys.stderr)
        sys.exit(2)


def main() -> None:
    """Runs ecab.run as `python -m ecab.run` would, in this process (the driver `ray job submit` watches).

    Not `from ecab.run import main`: Hydra finds conf/ relative to the file of a task function run as
    __main__, but as the package module `conf` when it is imported as `ecab.run` (no such package: "Primary
    config module 'conf' not found"). runpy also runs ecab.run's own start-up (process environment first,
    the one-line check of the overrides) and its exit status (non-zero when a job left units in infra_error).
    """
    import runpy

    join_cluster(sys.argv[1:])
    sys.argv = [sys.argv[0], *sweep_argv(sys.argv[1:])[1:]]
    runpy.run_module("ecab.run", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
