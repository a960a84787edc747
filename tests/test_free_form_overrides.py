"""Keys inside free-form sections (model.extra_body, model.options, ...) are set the way Hydra users write any
key (`model.extra_body.tool_choice=required`, `model.extra_body={tool_choice: required}`), without the `+`
that Hydra's struct mode would otherwise demand; keys of typed sections stay checked (issue 31, item 2)."""
import subprocess
import sys
from pathlib import Path

import pytest

from ecab.config import ConfigError, load_config, parse, preflight

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("override", ["model.extra_body.tool_choice=required",
                                      "model.extra_body={tool_choice: required}",
                                      "+model.extra_body.tool_choice=required",
                                      "++model.extra_body.tool_choice=required"])
def test_a_key_inside_extra_body_is_set_however_it_is_written(override):
    cfg = parse(load_config(["model=sim", override]))
    assert cfg.model.extra_body == {"tool_choice": "required"}


def test_options_of_a_plug_in_need_no_plus():
    cfg = load_config(["model=sim", "model.options.temperature_schedule=cosine", "model.options.depth=3"])
    assert dict(cfg.model.options) == {"temperature_schedule": "cosine", "depth": 3}


def test_preflight_hands_hydra_the_forced_form_and_leaves_the_rest():
    argv = ["model=sim", "model.extra_body.tool_choice=required", "budget=5", "--cfg", "job"]
    assert preflight(argv) == ["model=sim", "++model.extra_body.tool_choice=required", "budget=5", "--cfg", "job"]


@pytest.mark.parametrize("override, key", [("model.extra_bdy.x=1", "model.extra_bdy.x"),
                                           ("model.tool_choise=auto", "model.tool_choise")])
def test_a_typo_in_a_typed_section_is_still_refused_with_its_name(override, key):
    with pytest.raises(ConfigError, match=f"unknown config key '{key}'"):
        preflight(["model=sim", override])


def test_the_command_line_sets_the_nested_key():
    proc = subprocess.run([sys.executable, "-m", "ecab.run", "model=sim", "model.extra_body={tool_choice: required}",
                           "model.tool_choice=required", "--cfg", "job"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "extra_body:\n    tool_choice: required" in proc.stdout and "tool_choice: required" in proc.stdout
