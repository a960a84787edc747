"""Where the cache is does not make another run: `make run` then `ECAB_CACHE_DIR=<other> make run` in the same
clone resumed nothing and was refused as "a different config hash". The identity now leaves out `cache_dir`
(paths under it are written relative to it); runs made before still resume through their old hash."""
import dataclasses

import pytest

from ecab.config import ConfigError, load_config, parse
from ecab.run import _check_resumable, identity_of, redact, stable_hash
from ecab.runs import RunFolder


def resolved(*overrides):
    return redact(dataclasses.asdict(parse(load_config(["model=heuristic", *overrides]))))


def test_the_cache_folder_is_not_part_of_a_run_s_identity(tmp_path):
    a, b = resolved(f"cache_dir={tmp_path}/one"), resolved(f"cache_dir={tmp_path}/two")
    assert stable_hash(identity_of(a)) == stable_hash(identity_of(b))
    assert stable_hash(identity_of(a, with_cache_paths=True)) != stable_hash(identity_of(b, with_cache_paths=True))


def test_what_the_run_does_is_still_part_of_it(tmp_path):
    a, b = resolved(f"cache_dir={tmp_path}", "budget=5"), resolved(f"cache_dir={tmp_path}", "budget=6")
    assert stable_hash(identity_of(a)) != stable_hash(identity_of(b))


def test_a_run_made_before_resumes_through_its_old_hash_and_another_config_does_not(tmp_path):
    config = resolved(f"cache_dir={tmp_path}")
    new, legacy = stable_hash(identity_of(config)), stable_hash(identity_of(config, with_cache_paths=True))
    manifest = {"config_hash": new, "task_set_hash": "t", "catalog_fingerprint": "c"}
    folder = RunFolder(tmp_path / "run")
    _check_resumable(folder, {**manifest, "config_hash": legacy}, manifest, legacy_hash=legacy)
    _check_resumable(folder, dict(manifest), manifest, legacy_hash=legacy)
    with pytest.raises(ConfigError, match="different config hash"):
        _check_resumable(folder, {**manifest, "config_hash": "something-else"}, manifest, legacy_hash=legacy)
