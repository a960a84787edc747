"""One owner each: the unit key (ecab/core/unit.py) and the run folder's files (ecab/runs/folder.py)."""
from ecab.core.seeds import episode_seed
from ecab.core.unit import Unit, describe_unit, make_units, unit_key
from ecab.runs import RunFolder
from ecab.schema import Judgement, Product, Task, Trajectory


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
