"""One owner each: the unit key (ecab/core/unit.py) and the run folder's files (ecab/runs/folder.py)."""
import gzip
import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ecab.core.seeds import episode_seed
from ecab.core.unit import Unit, describe_unit, make_units, unit_key
from ecab.runs import RunFolder
from ecab.runs.records import part_record
from ecab.schema import FormatError, Judgement, Product, Task, Trajectory, write_jsonl

ROOT = Path(__file__).resolve().parents[1]


def test_a_stored_unit_reads_back_as_the_key_of_the_unit_it_was_made_from():
    units = make_units(["t1", "t2"], "m", 30, 7, trials=2)
    assert [(u.task_id, u.trial) for u in units] == [("t1", 0), ("t2", 0), ("t1", 1), ("t2", 1)]
    assert units[2].seed == episode_seed(7, "t1", 1)
    for unit in units:
        assert unit_key(unit.as_dict(), "ignored") == unit.key
        assert Unit(**unit.as_dict()) == unit
    # A record whose unit lacks the task id (hand-made, imported) is keyed by its own id.
    assert unit_key({"model": "m", "budget": 30, "seed": 1}, "t9") == ("t9", "m", 30, 1, 0)
    assert describe_unit(units[0].key) == f"task_id=t1 model=m budget=30 seed={units[0].seed} trial=0"


def test_verdict_files_keep_every_judge_and_the_folder_loads_back(tmp_path):
    folder = RunFolder(tmp_path / "run").create()
    task = Task(id="t1", intent_category="product_search", user_query="q", target_product=Product(product_id="p1"))
    folder.write_tasks([task])
    folder.write_manifest({"tasks_path": folder.tasks_file.name})
    unit = make_units(["t1"], "m", 30, 0, trials=1)[0]
    folder.append_trajectory("local", Trajectory(id="t1", unit=unit.as_dict(), termination="recommended"))
    rules = Judgement(id="t1", unit=unit.as_dict(), judge="rules", correct=True)
    llm = Judgement(id="t1", unit=unit.as_dict(), judge="llm:x", correct=False)
    folder.write_verdicts("rules", [rules])
    folder.write_verdicts("llm", [llm])            # the rules verdicts stay beside it
    assert sorted(folder.judge_files()) == ["llm", "rules"]
    assert [j.judge for j in folder.read_verdicts()] == ["llm:x"]
    manifest, tasks, trajectories, judgements = folder.load()
    assert list(tasks) == ["t1"] and len(trajectories) == 1 and manifest["tasks_path"] == "tasks.jsonl"
    assert list(folder.latest_trajectories()) == [unit.key] and judgements[0].correct is False
    assert folder.read_summary() is None
    folder.write_summary({"overall_accuracy": 1.0}, "# summary\n")
    assert folder.read_summary() == {"overall_accuracy": 1.0}


# -- compact run folders: one verdict file per judge, compressed part files, the previous layout still read ----

def _unit(task_id: str = "t1") -> dict:
    return {"task_id": task_id, "model": "m", "budget": 30, "seed": 0, "trial": 0}


def _traj(task_id: str, predicted: str = "P", termination: str = "recommended", pad: str = "") -> Trajectory:
    return Trajectory(id=task_id, unit=_unit(task_id), termination=termination, predicted_product_id=predicted,
                      reasoning=pad)


def test_one_verdict_file_per_judge_and_the_manifest_names_the_active_one(tmp_path):
    folder = RunFolder(tmp_path / "run").create()
    folder.write_manifest({"tasks_path": "tasks.jsonl"})
    rules = Judgement(id="t1", unit=_unit(), judge="rules", correct=True)
    llm = Judgement(id="t1", unit=_unit(), judge="llm", correct=False)
    assert folder.write_verdicts("rules", [rules]) == folder.path / "verdicts.rules.jsonl.gz"
    assert folder.write_verdicts("llm", [llm]) == folder.path / "verdicts.llm.jsonl.gz"
    names = sorted(p.name for p in folder.path.iterdir() if p.name.startswith("verdicts"))
    assert names == ["verdicts.llm.jsonl.gz", "verdicts.rules.jsonl.gz"], "no copy of the active judge's file"
    assert folder.active_judge() == "llm" and folder.verdicts_path.name == "verdicts.llm.jsonl.gz"
    # The file is plain gzip JSONL; a caller rewriting the manifest keeps the folder's active_judge.
    assert json.loads(gzip.decompress(folder.judge_file("llm").read_bytes()))["correct"] is False
    folder.write_manifest({"tasks_path": "tasks.jsonl", "finished_at": "now"})
    assert folder.read_manifest()["active_judge"] == "llm"
    folder.write_verdicts("rules", [rules])
    assert [j.judge for j in folder.read_verdicts()] == ["rules"]
    assert {name: [j.correct for j in js] for name, js in folder.read_judge_verdicts().items()} == \
        {"llm": [False], "rules": [True]}
    # The same records always give the same bytes (no time or file name in the gzip header).
    before = folder.judge_file("rules").read_bytes()
    folder.write_verdicts("rules", [rules])
    assert folder.judge_file("rules").read_bytes() == before
    # Two judges and a manifest that names neither: which to read is not guessed.
    folder.manifest_path.write_text(json.dumps({"tasks_path": "tasks.jsonl"}), encoding="utf-8")
    with pytest.raises(FormatError, match="verdicts of the judges llm, rules and no active_judge"):
        folder.read_verdicts()


def write_previous_layout(path: Path, verdicts: dict[str, list[Judgement]], active: str) -> RunFolder:
    """A run folder as the version before compact run folders left it: part-local.jsonl, verdicts.jsonl (the
    active judge's) beside an identical verdicts.<judge>.jsonl per judge, no active_judge in the manifest."""
    write_jsonl(path / "trajectories" / "part-local.jsonl", [_traj("t1", "P1"), _traj("t2", "P2")])
    for name, judgements in verdicts.items():
        write_jsonl(path / f"verdicts.{name}.jsonl", judgements)
    shutil.copyfile(path / f"verdicts.{active}.jsonl", path / "verdicts.jsonl")
    (path / "manifest.json").write_text(json.dumps({"tasks_path": "tasks.jsonl"}), encoding="utf-8")
    return RunFolder(path)


def test_a_folder_of_the_previous_layout_is_read_and_compacted_by_the_next_run(tmp_path):
    rules = [Judgement(id=t, unit=_unit(t), judge="rules", correct=True) for t in ("t1", "t2")]
    llm = [Judgement(id=t, unit=_unit(t), judge="llm", correct=False) for t in ("t1", "t2")]
    folder = write_previous_layout(tmp_path / "old", {"rules": rules, "llm": llm}, active="llm")
    assert folder.active_judge() is None and folder.verdicts_path.name == "verdicts.jsonl"
    assert [j.judge for j in folder.read_verdicts()] == ["llm", "llm"]
    assert sorted(folder.judge_files()) == ["llm", "rules"]
    assert [t.predicted_product_id for t in folder.latest_trajectories().values()] == ["P1", "P2"]
    # Resumed by this version: a re-run unit goes to a compressed file read after the old one, and wins.
    folder.append_trajectory("local", _traj("t2", "P2-rerun"))
    assert [p.name for p in folder.part_files()] == ["part-local.jsonl", "part-local.jsonl.gz"]
    assert [t.predicted_product_id for t in folder.latest_trajectories().values()] == ["P1", "P2-rerun"]
    # Judged again: one compressed file per judge, the copies gone, the other judge's verdicts kept.
    folder.write_verdicts("rules", rules)
    assert sorted(p.name for p in folder.path.glob("verdicts*")) == ["verdicts.llm.jsonl.gz", "verdicts.rules.jsonl.gz"]
    assert folder.active_judge() == "rules" and [j.judge for j in folder.read_verdicts()] == ["rules", "rules"]
    assert [j.correct for j in folder.read_judge_verdicts()["llm"]] == [False, False]


def test_a_folder_older_still_keeps_the_verdicts_it_had_only_in_verdicts_jsonl(tmp_path):
    path = tmp_path / "older"
    llm = [Judgement(id="t1", unit=_unit(), judge="llm", correct=False)]
    write_jsonl(path / "verdicts.jsonl", llm)          # from before verdicts.<judge>.jsonl existed
    write_jsonl(path / "trajectories" / "part-local.jsonl", [_traj("t1")])
    folder = RunFolder(path)
    assert folder.judge_files() == {} and [j.judge for j in folder.read_verdicts()] == ["llm"]
    folder.write_verdicts("rules", [Judgement(id="t1", unit=_unit(), judge="rules", correct=True)])
    assert sorted(p.name for p in path.glob("verdicts*")) == ["verdicts.llm.jsonl.gz", "verdicts.rules.jsonl.gz"]
    assert [j.correct for j in folder.read_judge_verdicts()["llm"]] == [False]


def test_part_files_are_gzip_members_a_torn_last_one_is_skipped_and_the_next_session_starts_a_file(tmp_path):
    folder = RunFolder(tmp_path / "run").create()
    for task_id in ("a", "b"):
        folder.append_trajectory("w1", _traj(task_id))
    part = folder.part_path("w1")
    assert part.name == "part-w1.jsonl.gz"
    # Any gzip reader reads the file as the JSONL it holds.
    assert [json.loads(line)["id"] for line in gzip.decompress(part.read_bytes()).splitlines()] == ["a", "b"]
    # A kill in the middle of the next write: the start of a member, cut short.
    whole = gzip.compress(b'{"id": "c", "termination": "recommended"}\n' * 50)
    for cut in (1, 9, 12, len(whole) // 2, len(whole) - 1):
        torn = tmp_path / f"torn-{cut}"
        (torn / "trajectories").mkdir(parents=True)
        (torn / "trajectories" / part.name).write_bytes(part.read_bytes() + whole[:cut])
        assert [t.id for t in RunFolder(torn).iter_trajectories()] == ["a", "b"], cut
    with part.open("ab") as handle:
        handle.write(whole[:len(whole) // 2])
    # The next session (a resumed run, a restarted worker) never appends after the torn bytes.
    resumed = RunFolder(folder.path)
    resumed.append_trajectory("w1", _traj("c"))
    resumed.append_trajectory("w1", _traj("a", "P-again"))
    assert resumed.part_path("w1").name == "part-w1.2.jsonl.gz"
    assert [t.id for t in resumed.iter_trajectories()] == ["a", "b", "c", "a"]
    assert resumed.latest_trajectories()[("a", "m", 30, 0, 0)].predicted_product_id == "P-again"
    # Sessions are read in their order, not by name (10 after 9).
    for session in range(3, 11):
        RunFolder(folder.path).append_trajectory("w1", _traj("a", f"P{session}"))
    assert folder.latest_trajectories()[("a", "m", 30, 0, 0)].predicted_product_id == "P10"
    # Damage in the middle (zeros a crash of the machine can leave) loses that record only.
    damaged = bytearray(part.read_bytes())
    damaged[len(damaged) // 4: len(damaged) // 4 + 8] = bytes(8)
    part.write_bytes(bytes(damaged))
    assert [t.id for t in RunFolder(folder.path).iter_trajectories()][:3] == ["b", "c", "a"]


CHILD_WRITER = """
import sys
from ecab.runs import RunFolder
from ecab.schema import Trajectory
folder = RunFolder(sys.argv[1]).create()
pad = "".join(chr(0x4e00 + (i * 7919) % 20000) for i in range(400_000))   # ~1.2 MB, poorly compressible
for i in range(10_000):
    unit = {"task_id": f"t{i}", "model": "m", "budget": 30, "seed": 0, "trial": 0}
    folder.append_trajectory("local", Trajectory(id=f"t{i}", unit=unit, termination="recommended", reasoning=pad))
    print(i, flush=True)
"""


@pytest.mark.parametrize("after", [1, 2, 4])
def test_kill_9_during_writes_loses_at_most_the_record_being_written(tmp_path, after):
    """A real writer process killed with SIGKILL while it appends large records back to back (the kill lands
    while it serialises, compresses, writes or fsyncs): every record it reported written reads back whole, at
    most one more (written, not yet reported), and the next session's records are read after them. One write
    call is not cut by SIGKILL, so the torn member a crash inside a write leaves is added by hand, as
    tests/test_resume.py does (every cut point: the test above)."""
    path = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-c", CHILD_WRITER, str(path)], cwd=ROOT, stdout=subprocess.PIPE,
                            text=True)
    try:
        reported = [proc.stdout.readline() for _ in range(after)]
        time.sleep(0.01 * after)                       # land somewhere inside a later write
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert all(line.strip() for line in reported)
    folder = RunFolder(path)
    ids = [t.id for t in folder.iter_trajectories()]
    assert ids == [f"t{i}" for i in range(len(ids))] and after <= len(ids), ids
    assert all(len(t.reasoning) == 400_000 for t in folder.iter_trajectories())
    with (path / "trajectories" / "part-local.jsonl.gz").open("ab") as handle:   # the killed session's file
        handle.write(part_record(_traj("torn", pad="x" * 1000))[:-20])
    assert [t.id for t in RunFolder(path).iter_trajectories()] == ids
    resumed = RunFolder(path)
    resumed.append_trajectory("local", _traj("next"))
    assert [t.id for t in resumed.iter_trajectories()] == [*ids, "next"]
