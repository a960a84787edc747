"""Hard-negative siblings of released targets, for `catalog=targets` (issue 15, deliverable 3).

Released tasks ship their target product but not the catalog around it, and the generic synthetic
distractors never come near a real target: on their own, the query's rubrics single the target out in every
task and no persona or clarification rubric matters (docs/decisions.md#validity-audit). For every task this
package makes products that look like other listings of the target's product line:

- per rubric, `per_rubric` (k, default 3) siblings that satisfy every other rubric of the task and violate
  exactly that one: another plausible value of the same field (values other products of the file and of the
  distractors carry), a number just outside the range, a price over the budget after the voucher, an
  excluded value present, reviews that lack the opinion, another product line (or brand) in the title for the
  entity rubric, another store;
- `query_only` siblings that satisfy every query rubric and violate every persona and clarification rubric
  they can.

Every sibling is checked with the rubric checks the rules judge decides with (`ecab.core.rubric_checks`;
review_opinion with the review checker the caller injects: catalog=targets passes the process-wide one of
ecab/catalog/review_match.py) before it is kept, and a sibling that would satisfy every rubric of any task
(its own or another task of the same category) is dropped, so each target stays the only product matching
all of its task's rubrics.

Form: a sibling is a copy of its target with its own ASIN-like id (the target's first four characters, as
variants listed together share them, then six random ones), the target's title with only what changed
swapped, the same detail keys in the same order, its own rating statistics and price drawn near the
target's, a few listing facts varied (rank, date first available, weight, model number), and its own
reviews from the generator the targets' reviews come from (`targets.opinion_reviews`: same count rule,
same templates). Targets and siblings are emitted in one seeded shuffle. Deterministic from the seed: every
sibling draws from `random.Random` seeded with its task, rubric and index.

The package, by concept:
  make.py          one task's siblings (make_one), every task's (make_siblings), the uniqueness pass; the
                   version that is part of the catalog fingerprint (SIBLINGS_VERSION)
  violate.py       making a copy fail one rubric: another value, an excluded value, another product line,
                   another store
  numbers.py       rating, rating count and price drawn inside (or outside) each range
  family.py        a task's family: the centre its siblings are drawn around, drifted and varied listing facts
  pools.py         the plausible values of every field, from the task file's rows and the distractors
  listing_text.py  editing a listing's text: a phrase replaced however it is punctuated, words swapped
  checks.py        the one test every step keeps to: does the product satisfy the rubric
"""
