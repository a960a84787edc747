"""ecab's data model and the original harness's file formats (docs/original-harness.md §5.12, §9).

The public face every stage imports (`from ecab.schema import Task`); each concept lives in its own module:

  record.py      Record (typed known keys, kept extras, remembered key order: lossless round trips) and
                 FormatError (names file, line and field)
  product.py     Product, Review: catalog records
  rubric.py      Rubric, the rubric types and info sources, NumericRange (the numeric_range shapes)
  voucher.py     Voucher (+ VoucherTier, StackedCoupon) and the price after it
  task.py        Task, Persona, ClarificationScript, ClarificationSlot: one line of benchmark.jsonl
  trajectory.py  Step, Trajectory: one episode (the original's predictions line + ecab's fields)
  judgement.py   Verdict, Judgement: one line of verdicts.<judge>.jsonl.gz
  jsonl.py       reading and writing JSONL files (iter_jsonl, read_tasks, write_jsonl, ...)
"""
from ecab.schema.jsonl import (DEFAULT_MAX_LINE_BYTES, dumps, iter_jsonl, iter_tasks, read_tasks, write_jsonl,
                               write_tasks)
from ecab.schema.judgement import VERDICT_METHODS, Judgement, Verdict
from ecab.schema.product import Product, Review
from ecab.schema.record import FormatError, Record
from ecab.schema.rubric import INFO_SOURCES, LEGACY_RUBRIC_TYPES, NUMERIC_OPS, RUBRIC_TYPES, NumericRange, Rubric
from ecab.schema.task import (DEFAULT_USER_RESPONSE, SAMPLE_STATUSES, ClarificationScript, ClarificationSlot, Persona,
                              Task)
from ecab.schema.trajectory import TERMINATIONS, Step, Trajectory
from ecab.schema.voucher import StackedCoupon, Voucher, VoucherTier

__all__ = [
    "Record", "FormatError",
    "Product", "Review",
    "Rubric", "NumericRange", "RUBRIC_TYPES", "LEGACY_RUBRIC_TYPES", "INFO_SOURCES", "NUMERIC_OPS",
    "Voucher", "VoucherTier", "StackedCoupon",
    "Task", "Persona", "ClarificationScript", "ClarificationSlot", "DEFAULT_USER_RESPONSE", "SAMPLE_STATUSES",
    "Step", "Trajectory", "TERMINATIONS",
    "Verdict", "Judgement", "VERDICT_METHODS",
    "iter_jsonl", "iter_tasks", "read_tasks", "dumps", "write_jsonl", "write_tasks", "DEFAULT_MAX_LINE_BYTES",
]
