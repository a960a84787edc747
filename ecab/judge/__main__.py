"""`python -m ecab.judge runs/<name> judge=llm [overrides]`: re-judge a finished run, then re-reduce it and
rebuild its report.html.

The command is ecab/reduce/rejudge.py (it needs the run folder and the reduce stage, which sit above the judge);
this entry point runs it by name so that the judge package imports nothing above it (docs/architecture.md §1).
"""
import runpy

if __name__ == "__main__":
    runpy.run_module("ecab.reduce.rejudge", run_name="__main__", alter_sys=True)
