"""`python -m ecab.sim [--port 0] [--latency-ms 20 --latency lognormal] [--rate-429 0.1] ...`

Serves the simulated endpoint until interrupted and prints its base URL (first line of stdout), e.g. to
point a run at it: `python -m ecab.run model=sim model.base_url=http://127.0.0.1:8123/v1`. By default it
answers every stage's requests: the LLM judge's, the LLM verbalizer's and the agent's (DEFAULT_POLICIES);
`--policy MODULE:FACTORY` (repeatable, asked in order) serves others, e.g. only the judge's.

The policies are named, not imported: they belong to the stages (ecab.judge, ecab.construct, ecab.agents),
which sit in layers above the simulator (pyproject.toml [tool.importlinter]), so this module imports none of
them; it loads the named factories when it starts, as a server loads the application it is told to serve.
"""
from __future__ import annotations

import argparse
import importlib
import json
import signal
import sys
import threading

from ecab.sim.server import FAULT_KINDS, SimConfig, SimServer


# Every stage's reply policy, in the order they are asked: the judge's and the verbalizer's claim their own
# prompts, the agent's answers the rest.
DEFAULT_POLICIES = ("ecab.judge.sim_policy:JudgePolicy", "ecab.construct.sim_policy:VerbalizerPolicy",
                    "ecab.agents.sim_policy:HeuristicPolicy")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m ecab.sim", description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 picks a free port")
    p.add_argument("--latency", choices=("fixed", "lognormal"), default="fixed")
    p.add_argument("--latency-ms", type=float, default=0.0, help="fixed delay, or the lognormal median")
    p.add_argument("--latency-sigma", type=float, default=0.5)
    p.add_argument("--rate-429", type=float, default=0.0)
    p.add_argument("--retry-after-s", type=float, default=0.05)
    p.add_argument("--rpm", type=float, default=None)
    p.add_argument("--tpm", type=float, default=None)
    p.add_argument("--rate-5xx", type=float, default=0.0)
    for kind in FAULT_KINDS:
        p.add_argument(f"--{kind.replace('_', '-')}", type=float, default=0.0, metavar="RATE",
                       help=f"rate of {kind.replace('_', ' ')} outputs")
    p.add_argument("--require-key-env", default=None,
                   help="name of an environment variable holding a key the server will require")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--config-json", default=None,
                   help="a whole SimConfig as JSON (what SimProcess passes); replaces the options above")
    p.add_argument("--policy", action="append", dest="policies", default=None, metavar="MODULE:FACTORY",
                   help="a reply policy factory to serve (repeatable; asked in the order given); "
                        "default: " + " ".join(DEFAULT_POLICIES))
    return p.parse_args(argv)


def load_policies(specs: list[str] | tuple[str, ...] = DEFAULT_POLICIES) -> list:
    """The policy factories named `MODULE:FACTORY`, in order; ValueError naming a spec that does not load."""
    factories = []
    for spec in specs:
        module, _, name = spec.partition(":")
        try:
            factory = getattr(importlib.import_module(module), name) if module and name else None
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"--policy {spec}: {exc}") from None
        if not callable(factory):
            raise ValueError(f"--policy {spec}: expected MODULE:FACTORY naming a policy class or factory")
        factories.append(factory)
    return factories


def main(argv: list[str] | None = None) -> int:
    import os
    args = parse_args(argv)
    for name in ("rate_429", "rate_5xx", *FAULT_KINDS):
        value = getattr(args, name)
        if not 0.0 <= value <= 1.0:
            print(f"ecab.sim: error: --{name.replace('_', '-')} must be a rate in [0, 1], got {value}", file=sys.stderr)
            return 2
    key = os.environ.get(args.require_key_env) if args.require_key_env else None
    if args.require_key_env and not key:
        print(f"ecab.sim: error: environment variable {args.require_key_env} is not set", file=sys.stderr)
        return 2
    try:
        policies = load_policies(args.policies or DEFAULT_POLICIES)
    except ValueError as exc:
        print(f"ecab.sim: error: {exc}", file=sys.stderr)
        return 2
    config = SimConfig.from_any(json.loads(args.config_json)) if args.config_json else SimConfig(latency=args.latency, latency_ms=args.latency_ms, latency_sigma=args.latency_sigma,
                       rate_429=args.rate_429, retry_after_s=args.retry_after_s, rpm=args.rpm, tpm=args.tpm,
                       rate_5xx=args.rate_5xx, malformed={k: getattr(args, k) for k in FAULT_KINDS},
                       api_key=key, seed=args.seed)
    # The handler goes in before the URL is printed: a caller that stops the server as soon as it has the URL
    # must still get the stats line and exit 0.
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    server = SimServer(config, policies, host=args.host, port=args.port)
    url = server.start()
    print(url, flush=True)
    try:
        while not done.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        print(json.dumps(server.stats), file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
