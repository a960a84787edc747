"""inspect_ai's side of the peer benchmark (ecab/bench/peer.py): the same episodes as an inspect_ai task.

Imported only inside the peer's own virtual environment (peer_env.py), by peer_case.py; never by ecab
itself, which does not depend on inspect_ai.

Each unit is one `Sample` (the shopper's query as the user message); one solver runs ecab's episode loop
(env/episode.py) with inspect_ai's own machinery: the model is inspect's `openai` provider pointed at the
simulator (chat completions), each turn is `generate(state, tool_calls="none")`, and the call is executed
with inspect's `execute_tools` on `ToolDef`s whose bodies call ecab's real ToolBox (env/tools.py), one per
episode, in this process. The loop keeps ecab's rules where they decide which calls are made: the paper's
system prompt, one executed call per turn (extra calls dropped with ecab's error reminder), a reminder after
a text-only turn and the end at the second one in a row, recommend_product ends the episode, and the budget
caps executed calls. So, with the simulator's agent policy answering both sides, the same task gets the same
calls with the same results, which peer.py checks.

What inspect_ai does its own way is left as it is, since that is what is measured: its eval loop, sample
concurrency (`max_samples` = C), static model concurrency (`max_connections` = C), transcript and log (the
native `.eval` format, in a temporary folder), tool-argument validation against the schemas and tool
events. Tool output truncation is switched off (`max_output=0`) because ecab does not truncate results:
truncated results would differ from ecab's and the plans would diverge.
"""
from __future__ import annotations

import os
import tempfile
from typing import Any

from inspect_ai import Task, eval as inspect_eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (ChatMessageAssistant, ChatMessageSystem, ChatMessageTool, ChatMessageUser,
                              execute_tools)
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import ToolDef, ToolParams

from ecab.bench.peer_records import call_entry, episode_record
from ecab.env.agent_protocol import system_prompt
from ecab.env.episode import MULTI_CALL_ERROR, NO_TOOL_REMINDER
from ecab.env.tools import TERMINAL_TOOL, ToolBox, tool_schemas

NO_KEY = "sim-needs-no-key"      # inspect's openai provider requires a key to be set; the simulator wants none


def tool_defs(toolbox: ToolBox) -> list[ToolDef]:
    """ecab's 10 tools as inspect ToolDefs (ecab's names, descriptions and parameter schemas), each calling
    the episode's ToolBox and returning the result text ecab's loop would send."""
    defs = []
    for schema in tool_schemas():
        function = schema["function"]

        def bind(name: str):
            async def execute(**kwargs: Any) -> str:
                return (await toolbox.call(name, kwargs)).content_json
            return execute

        defs.append(ToolDef(bind(function["name"]), name=function["name"], description=function["description"],
                            parameters=ToolParams.model_validate(function["parameters"]), max_output=0))
    return defs


def tool_result_text(message: ChatMessageTool) -> str:
    """A tool message's text as inspect's openai provider sends it to the model."""
    return f"Error: {message.error.message}" if message.error else message.text


def make_solver(setup, budget: int, concurrency: int, records: list[dict]):
    from ecab.runner.episode import widen_thread_pool

    tasks = {t.id: t for t in setup.tasks}
    search_mode = setup.cfg.tools.search
    widened = []

    @solver(name="ecab_episode")
    def ecab_episode() -> Solver:
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            if not widened:   # the tool box's catalog threads, as ecab's runner gives them (once per loop)
                widen_thread_pool(concurrency, setup.catalog)
                widened.append(True)
            task_id, trial = state.metadata["task_id"], state.metadata["trial"]
            toolbox = ToolBox(setup.catalog, tasks[task_id], search_mode=search_mode)
            state.tools = tool_defs(toolbox)
            state.messages.insert(0, ChatMessageSystem(content=system_prompt(budget)))
            turns, calls, failed = 0, [], True
            try:
                turns, calls = await episode_loop(state, generate, budget)
                failed = False
            finally:   # a failed episode is recorded too, so that it is counted as failed
                records.append(episode_record(task_id, trial, turns, failed, calls))
            return state

        return solve

    return ecab_episode()


async def episode_loop(state: TaskState, generate: Generate, budget: int) -> tuple[int, list[list[str]]]:
    """ecab's episode rules (module docstring) on inspect's state: (LLM turns, the calls as compared)."""
    turns, calls, reminded = 0, [], False
    while len(calls) < budget:
        state = await generate(state, tool_calls="none")
        turns += 1
        message = state.messages[-1]
        if not isinstance(message, ChatMessageAssistant) or not message.tool_calls:
            if reminded:
                break
            reminded = True
            state.messages.append(ChatMessageUser(content=NO_TOOL_REMINDER))
            continue
        reminded = False
        extra = len(message.tool_calls) > 1
        if extra:   # the history keeps only the executed call, as ecab's loop does
            message = state.messages[-1] = message.model_copy(update={"tool_calls": message.tool_calls[:1]})
        executed = await execute_tools(state.messages, state.tools)
        state.messages.extend(executed.messages)
        call = message.tool_calls[0]
        result = next(m for m in executed.messages if isinstance(m, ChatMessageTool))
        calls.append(call_entry(call.function, call.arguments, tool_result_text(result)))
        if extra:
            state.messages.append(ChatMessageUser(content=MULTI_CALL_ERROR))
        if call.function == TERMINAL_TOOL:
            break
    return turns, calls


def run_inspect(setup, spec: dict, units: list) -> tuple[list[dict], list[str]]:
    """The units as one inspect_ai eval against the simulator: (the episode records in finishing order, the
    distinct errors of failed samples)."""
    records: list[dict] = []
    tasks = {t.id: t for t in setup.tasks}
    samples = [Sample(input=tasks[u.task_id].user_query, id=f"{u.task_id}/{u.trial}",
                      metadata={"task_id": u.task_id, "trial": u.trial}) for u in units]
    concurrency = int(spec["concurrency"])
    task = Task(dataset=MemoryDataset(samples), solver=make_solver(setup, spec["budget"], concurrency, records),
                name="ecab_peer")
    os.environ.setdefault("OPENAI_API_KEY", NO_KEY)
    with tempfile.TemporaryDirectory() as log_dir:
        # responses_api=False: the simulator serves chat completions, and inspect takes a model name it does
        # not know for its newest GPT, which it would send to the Responses API
        logs = inspect_eval(task, model=f"openai/{spec['model_id']}", model_base_url=spec["base_url"],
                            model_args={"responses_api": False},
                            max_samples=concurrency, max_connections=concurrency, display="none",
                            log_dir=log_dir, fail_on_error=False, score=False, parallel_tool_calls=False)
        return records, sample_errors(logs)    # read while the log is there


def sample_errors(logs) -> list[str]:
    """The distinct errors of failed samples (and of the eval itself), for the report of failed episodes."""
    errors = []
    for log in logs:
        if log.error:
            errors.append(log.error.message)
        errors.extend(sample.error.message for sample in log.samples or [] if sample.error)
    return sorted(set(errors))
