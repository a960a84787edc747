"""The judge: one verdict per rubric of every finished episode, by one of two judges behind one protocol
(protocol.py): the rules judge (rules.py, over the rubric checks of ecab/core/rubric_checks.py) or the LLM
judge (llm.py); dispatch.py picks the configured one and judges a run; episode.py turns verdicts into the
episode's outcome, the one correctness rule."""
