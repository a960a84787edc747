"""A `+key=value` override adds a key Hydra does not know. One the schema does not have either is a typo
(`+modle=x`): refused before any work with a hint naming the key meant (ecab/config/checks.py::did_you_mean),
never run as a key nothing reads. `+model.options.<key>=...`, the documented way to give a plug-in its own
keys, keeps working."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml

from ecab.config import ConfigError, load_config, parse, preflight
from conftest import SMALL_RUN


def ecab_run(cwd, cache, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ecab.run", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "ECAB_CACHE_DIR": str(cache)}, timeout=600)


@pytest.mark.parametrize("override, meant", [("+modle=x", "model"), ("+budgte=3", "budget"),
                                             ("catalog.productz=3", "catalog.products"),
                                             ("model.optoins.k=1", "model.options")])
def test_a_typo_is_refused_at_preflight_with_the_key_meant(override, meant):
    with pytest.raises(ConfigError) as info:
        preflight([override])
    assert f"did you mean '{meant}'?" in str(info.value) and "\n" not in str(info.value)


def test_a_typo_on_the_command_line_is_one_line_and_runs_nothing(tmp_path):
    done = ecab_run(tmp_path, tmp_path / "cache", "+modle=oracle", f"run.dir={tmp_path / 'runs'}")
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert lines[0].startswith("ecab: error: the config: unknown key(s) modle; did you mean 'model'?")
    assert not (tmp_path / "runs").exists() and not (tmp_path / "cache").exists()


@pytest.mark.slow
def test_a_plugin_option_is_still_added_with_plus(small_run_cache, tmp_path):
    preflight(["+model.options.k=v"])
    assert parse(load_config(["+model.options.k=v"])).model.options == {"k": "v"}
    done = ecab_run(tmp_path, small_run_cache, *SMALL_RUN, "model=oracle", "benchmark.limit=1", "+model.options.k=v",
                    f"cache_dir={small_run_cache}", f"run.dir={tmp_path / 'runs'}", "run.name=opt")
    assert done.returncode == 0, done.stderr[-3000:]
    config = yaml.safe_load((tmp_path / "runs" / "opt" / "config.yaml").read_text(encoding="utf-8"))
    assert config["model"]["options"] == {"k": "v"}
