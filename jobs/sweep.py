"""`ray job submit` entrypoint for a Hydra sweep on a Ray cluster: one run folder per (model, budget, ...).

    ray job submit --address http://<head>:8265 --working-dir . -- \
        python jobs/sweep.py model=heuristic,oracle budget=25,50,100 benchmark.limit=200

It is `python -m ecab.run -m runner=ray <your overrides>`: each job of the sweep connects to the cluster of
the submission (RAY_ADDRESS, set by `ray job submit`), starts its catalog actors and episode workers, and
writes runs/<model>-b<budget>-<source>/. The catalog and benchmark are built once by the first job into
cache_dir and reused by the others (cache_dir must be on storage every node can read).
"""
from __future__ import annotations

import sys


def sweep_argv(args: list[str]) -> list[str]:
    """The ecab.run command line: multirun, runner=ray unless the caller chose a runner."""
    runner = [] if any(a.startswith("runner=") for a in args) else ["runner=ray"]
    multirun = [] if any(a in ("-m", "--multirun") for a in args) else ["-m"]
    return ["ecab.run", *multirun, *runner, *args]


def main() -> None:
    """Runs ecab.run as `python -m ecab.run` would, in this process (the driver `ray job submit` watches).

    Not `from ecab.run import main`: Hydra finds conf/ relative to the file of a task function run as
    __main__, but as the package module `conf` when it is imported as `ecab.run` (no such package: "Primary
    config module 'conf' not found"). runpy also runs ecab.run's own start-up (process environment first,
    the one-line check of the overrides) and its exit status (non-zero when a job left units in infra_error).
    """
    import runpy

    sys.argv = [sys.argv[0], *sweep_argv(sys.argv[1:])[1:]]
    runpy.run_module("ecab.run", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
