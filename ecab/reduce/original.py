"""The original harness's run files, in and out (docs/original-harness.md §3.3 predictions, §4.1 evaluation results).

Import turns `predictions_<model>.jsonl` (and optionally `<stem>_evaluation_results.jsonl`) plus the
benchmark they ran on into an ecab run folder, so a published run can be re-judged or reduced by ecab:

  runs/<name>/trajectories/part-imported.jsonl.gz   one Trajectory per prediction line
  runs/<name>/verdicts.llm.jsonl.gz                 one Judgement per evaluation line (its LLM verdicts)
  runs/<name>/tasks.jsonl, manifest.json            (`active_judge`: llm)

What the original did not record is rebuilt from the message list: the steps (tool, arguments, errors,
result ids), the slot an ask_user answer revealed (the answer equals that slot's scripted response), and
the termination. A line with "error" (the agent raised after its LLM retries) becomes `agent_error`:
the original judged those rows wrong, not as runtime errors, and the import keeps its numbers.

Export writes an ecab run back in exactly those two formats, one file pair per trial.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from ecab.env.episode import result_ids
from ecab.reduce import reduce_run
from ecab.reduce.outcome import outcome_of, pair_by_unit
from ecab.runs import RunFolder
from ecab.schema import FormatError, Judgement, Step, Task, Trajectory, Verdict, iter_jsonl, read_tasks

PREDICTION_KEYS = ("id", "intent_category", "user_query", "predicted_product_id", "reasoning", "trajectory",
                   "reasoning_trace", "model", "total_tool_calls", "ask_user_calls", "get_profile_calls", "finished")
ERROR_KEY = "error"                         # present only on lines whose agent raised
EVALUATION_KEYS = ("id", "intent_category", "rubric_results", "all_satisfied", "exact_product_match",
                   "satisfaction_rate", "judge_model", "predicted_product_id", "target_product_id",
                   "prediction_finished", "total_tool_calls", "ask_user_calls", "get_profile_calls", "runtime_error",
                   "error_message", "failed_rubric_count", "failed_rubric_ids", "failed_rubric_types", "failed_reasons")
RUBRIC_RESULT_KEYS = ("rubric_id", "satisfied", "reasoning", "type", "field", "description", "info_source")
REQUIRED_PREDICTION = ("id", "predicted_product_id", "trajectory", "total_tool_calls", "finished")
REQUIRED_EVALUATION = ("id", "rubric_results", "all_satisfied", "exact_product_match")
NO_PRODUCT_REASON = "No valid product recommended"
RECOMMEND_TOOL = "recommend_product"
IMPORTED_WRITER = "imported"           # trajectories/part-imported.jsonl.gz
IMPORTED_JUDGE = "llm"


# ---------------------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------------------

def _lines_by_id(path: Path, required: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    lines: dict[str, dict[str, Any]] = {}
    for lineno, obj in iter_jsonl(path):
        for key in required:
            if key not in obj:
                raise FormatError("required field is missing", path=path, line=lineno, field=key)
        if not isinstance(obj["id"], str) or not obj["id"]:
            raise FormatError("expected a non-empty string", path=path, line=lineno, field="id")
        if obj["id"] in lines:
            raise FormatError(f"duplicate id {obj['id']!r}", path=path, line=lineno, field="id")
        lines[obj["id"]] = obj
    return lines


def _parse_json(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _revealed_slot(task: Task | None, content: Any, already: set[str]) -> str | None:
    """The scripted user answers a matched slot with that slot's user_response, verbatim."""
    if task is None or not isinstance(content, dict):
        return None
    answer = content.get("user_response")
    for slot in task.clarification_script.clarification_slots:
        if slot.user_response == answer and slot.slot_id not in already:
            return slot.slot_id
    return None


def steps_from_messages(messages: list[dict[str, Any]], task: Task | None) -> list[Step]:
    """The executed calls of an original trajectory: the first tool call of each assistant turn (§3.2)."""
    tool_results = {m.get("tool_call_id"): m.get("content") for m in messages
                    if isinstance(m, dict) and m.get("role") == "tool"}
    steps, revealed, turn, calls = [], set(), 0, 0
    for message in messages:
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        turn += 1
        tool_calls = message.get("tool_calls") or []
        if not tool_calls:
            steps.append(Step(index=turn, call_index=0))
            continue
        calls += 1
        first = tool_calls[0] if isinstance(tool_calls[0], dict) else {}
        function = first.get("function") or {}
        content = _parse_json(tool_results.get(first.get("id")))
        error = content.get("error") if isinstance(content, dict) else None
        step = Step(index=turn, call_index=calls, tool=function.get("name"),
                    arguments=_parse_json(function.get("arguments")), is_error=bool(error),
                    error=str(error) if error else None, extra_calls=len(tool_calls) - 1,
                    result_ids=result_ids(content) if isinstance(content, dict) else [])
        if step.tool == "ask_user":
            step.revealed_slot = _revealed_slot(task, content, revealed)
            if step.revealed_slot:
                revealed.add(step.revealed_slot)
        steps.append(step)
    return steps


def termination_of(line: dict[str, Any], steps: list[Step]) -> str:
    if line.get(ERROR_KEY):
        return "agent_error"
    if not line.get("finished"):
        return "budget_exhausted"
    if line.get("predicted_product_id"):
        return "recommended"
    last_call = next((s for s in reversed(steps) if s.tool is not None), None)
    return "invalid_recommendation" if last_call is not None and last_call.tool == RECOMMEND_TOOL else "no_tool_call"


def trajectory_from_prediction(line: dict[str, Any], task: Task | None, *, budget: int | None) -> Trajectory:
    traj = Trajectory.from_dict({k: line[k] for k in (*PREDICTION_KEYS, ERROR_KEY) if k in line})
    traj.steps = steps_from_messages(traj.trajectory, task)
    traj.termination = termination_of(line, traj.steps)
    traj.unit = {"task_id": traj.id, "model": traj.model, "budget": budget, "seed": 0, "trial": 0}
    recommend = next((s for s in reversed(traj.steps) if s.tool == RECOMMEND_TOOL), None)
    if traj.termination in ("recommended", "invalid_recommendation"):
        traj.recommend_call_index = traj.total_tool_calls
        args = recommend.arguments if recommend is not None and isinstance(recommend.arguments, dict) else {}
        traj.recommended_id = traj.predicted_product_id or args.get("product_id")
    traj.revealed_slots = [s.revealed_slot for s in traj.steps if s.revealed_slot]
    traj.tool_errors = sum(s.is_error for s in traj.steps)
    return traj


def judgement_from_evaluation(line: dict[str, Any], traj: Trajectory, task: Task) -> Judgement:
    verdicts = []
    for i, result in enumerate(line["rubric_results"] or []):
        if not isinstance(result, dict) or "rubric_id" not in result:
            raise FormatError("expected an object with rubric_id", field=f"rubric_results[{i}]")
        rubric = next((r for r in task.rubrics if r.id == result["rubric_id"]), None)
        satisfied = result.get("satisfied")
        reasoning = str(result.get("reasoning") or "")
        no_product = traj.predicted_product_id is None and reasoning == NO_PRODUCT_REASON
        verdicts.append(Verdict(
            rubric_id=result["rubric_id"], type=result.get("type") or (rubric.type if rubric else "unknown"),
            info_source=result.get("info_source") or (rubric.info_source if rubric else "query"),
            field=result.get("field") or (rubric.field if rubric else ""),
            satisfied=None if satisfied is None else bool(satisfied),
            method="no_product" if no_product else IMPORTED_JUDGE, reasoning=reasoning))
    exact, all_satisfied = bool(line["exact_product_match"]), line["all_satisfied"]
    all_satisfied = None if all_satisfied is None else bool(all_satisfied)
    return Judgement(id=traj.id, unit=dict(traj.unit), judge=str(line.get("judge_model") or IMPORTED_JUDGE),
                     predicted_product_id=traj.predicted_product_id,
                     target_product_id=str(line.get("target_product_id") or task.target_product.product_id),
                     exact_product_match=exact, all_satisfied=all_satisfied,
                     correct=True if exact else all_satisfied, verdicts=verdicts,
                     runtime_error=bool(line.get("runtime_error")), error_message=line.get("error_message"))


def import_original(out_dir: str | Path, *, benchmark: str | Path, predictions: str | Path | None = None,
                    evaluation: str | Path | None = None, budget: int | None = 100,
                    reduce: bool = True) -> dict[str, Any]:
    """Build an ecab run folder from the original's files; reduce it when verdicts were imported.

    `predictions` may be omitted when `evaluation` is given: its lines carry the prediction fields too.
    Predictions whose id is not an ok task of the benchmark are skipped, as the original evaluator does.
    Returns the manifest written.
    """
    if predictions is None and evaluation is None:
        raise ValueError("give --predictions, --evaluation or both")
    out = Path(out_dir)
    folder = RunFolder(out)
    if folder.has_trajectories():
        raise FormatError("run folder already has trajectories; import into a new folder", path=out)
    tasks = {t.id: t for t in read_tasks(benchmark) if t.is_ok}
    evaluated = _lines_by_id(Path(evaluation), REQUIRED_EVALUATION) if evaluation else {}
    predicted = _lines_by_id(Path(predictions), REQUIRED_PREDICTION) if predictions else evaluated
    if predictions is None:
        for tid, line in predicted.items():
            missing = [k for k in REQUIRED_PREDICTION if k not in line]
            if missing:
                raise FormatError(f"line of id {tid!r} lacks prediction field", path=evaluation, field=missing[0])
    skipped = sorted(tid for tid in predicted if tid not in tasks)
    kept = sorted(tid for tid in predicted if tid in tasks)
    if evaluation:
        unjudged = [tid for tid in kept if tid not in evaluated]
        if unjudged:
            raise FormatError(f"{len(unjudged)} prediction(s) have no evaluation line, e.g. id {unjudged[0]!r}",
                              path=evaluation)
    trajectories = [trajectory_from_prediction(predicted[tid], tasks[tid], budget=budget) for tid in kept]
    judgements = [judgement_from_evaluation(evaluated[t.id], t, tasks[t.id]) for t in trajectories] \
        if evaluation else []
    out.mkdir(parents=True, exist_ok=True)
    folder.write_tasks(tasks.values())
    folder.write_part(IMPORTED_WRITER, trajectories)
    if judgements:
        folder.write_verdicts(IMPORTED_JUDGE, judgements)
    model = next((t.model for t in trajectories if t.model), "")
    manifest = {"run_name": out.name, "tasks_path": folder.tasks_file.name, "model": model,
                "judge_model": next((j.judge for j in judgements), ""), "n_tasks": len(tasks),
                "imported_from": {"predictions": str(predictions) if predictions else None,
                                  "evaluation": str(evaluation) if evaluation else None,
                                  "benchmark": str(benchmark)},
                "imported_episodes": len(trajectories), "skipped_predictions": skipped}
    folder.write_manifest(manifest)
    if judgements and reduce:
        reduce_run(out)
    return manifest


# ---------------------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------------------

def prediction_line(traj: Trajectory) -> dict[str, Any]:
    values = traj.to_dict()
    line = {k: values.get(k) for k in PREDICTION_KEYS}
    if traj.error:
        line[ERROR_KEY] = traj.error
    return line


def evaluation_result(traj: Trajectory, judgement: Judgement | None, task: Task) -> dict[str, Any]:
    """The §4.1 result fields; an episode ecab leaves out of accuracy is a runtime_error row there."""
    excluded = judgement is None or outcome_of(traj, judgement).excluded
    verdicts = [] if excluded else judgement.verdicts
    descriptions = {r.id: r.description for r in task.rubrics}
    results = [{"rubric_id": v.rubric_id, "satisfied": v.satisfied, "reasoning": v.reasoning or v.evidence,
                "type": v.type, "field": v.field, "description": descriptions.get(v.rubric_id, ""),
                "info_source": v.info_source} for v in verdicts]
    failed = [r for r in results if r["satisfied"] is False]
    scored = [r for r in results if r["satisfied"] is not None]
    exact = bool(judgement and judgement.exact_product_match)
    message = (judgement.error_message if judgement else None) or (traj.error if excluded else None)
    return {
        "id": traj.id, "intent_category": task.intent_category, "rubric_results": results,
        "all_satisfied": False if excluded else judgement.all_satisfied, "exact_product_match": exact,
        "satisfaction_rate": round(sum(r["satisfied"] is True for r in scored) / len(scored), 4) if scored else 0.0,
        "judge_model": judgement.judge if judgement else "", "predicted_product_id": traj.predicted_product_id,
        "target_product_id": task.target_product.product_id, "prediction_finished": traj.finished,
        "total_tool_calls": traj.total_tool_calls, "ask_user_calls": traj.ask_user_calls,
        "get_profile_calls": traj.get_profile_calls, "runtime_error": excluded, "error_message": message,
        "failed_rubric_count": len(failed), "failed_rubric_ids": [r["rubric_id"] for r in failed],
        "failed_rubric_types": sorted({r["type"] for r in failed}), "failed_reasons": [r["reasoning"] for r in failed],
    }


def _write_lines(path: Path, lines: Iterable[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")


def export_run(run_dir: str | Path, out_dir: str | Path) -> list[Path]:
    """Write `predictions_<model>.jsonl` and `predictions_<model>_evaluation_results.jsonl` (one pair per
    trial, suffixed `_trial<k>` when there are several) sorted by id; returns the paths written. Without
    verdicts only the predictions file is written."""
    manifest, tasks, trajectories, judgements = RunFolder(run_dir).load()
    pairs = pair_by_unit(trajectories, judgements)
    model = str(manifest.get("model") or next((t.model for t, _ in pairs if t.model), "model"))
    trials = sorted({int(t.unit.get("trial", 0)) for t, _ in pairs})
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for trial in trials:
        chosen = sorted(((t, j) for t, j in pairs if int(t.unit.get("trial", 0)) == trial), key=lambda p: p[0].id)
        stem = f"predictions_{model.replace('/', '_')}" + (f"_trial{trial}" if len(trials) > 1 else "")
        predictions = [prediction_line(t) for t, _ in chosen]
        _write_lines(out / f"{stem}.jsonl", predictions)
        written.append(out / f"{stem}.jsonl")
        if judgements:
            _write_lines(out / f"{stem}_evaluation_results.jsonl",
                         ({**p, **evaluation_result(t, j, tasks[t.unit.get('task_id', t.id)])}
                          for p, (t, j) in zip(predictions, chosen)))
            written.append(out / f"{stem}_evaluation_results.jsonl")
    return written


__all__ = ["import_original", "export_run", "steps_from_messages", "trajectory_from_prediction",
           "judgement_from_evaluation", "prediction_line", "evaluation_result", "PREDICTION_KEYS",
           "EVALUATION_KEYS", "RUBRIC_RESULT_KEYS"]
