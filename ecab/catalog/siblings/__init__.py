"""Families of released targets, for `catalog=targets` (issue 15 deliverable 3; issue 27 deliverable 2).

Released tasks ship their target product but not the catalog around it, and the generic synthetic
distractors never come near a real target: on their own, the query's rubrics single the target out in every
task and no persona or clarification rubric matters (docs/decisions.md#validity-audit). For every task this
package makes a FAMILY: listings that look like other listings of the target's product line, built so that
nothing but hidden information tells the target apart (issue 27: a query-only adversary reading form cues
found the target in 30-50% of families when the siblings were perturbations of a fixed target):

- the listings matching the query are the full factorial over the task's k hidden (persona + clarification)
  rubrics: 2^k listings, one per configuration of right / wrong, each hidden rubric failed with the family's
  one wrong value, so every hidden field splits the query's matches in half, and the target is the all-right
  vertex of a vertex-transitive design (cube.py: why no structure can single it out; the cap above 6 rubrics);
- the TARGET ITSELF is re-listed by the same process as every sibling (same product id, every rubric still
  satisfied): its rating, rating count, price (cents from the file's own prices), rank, date, weight, model
  number are draws around the family's centre and it carries a drifted fact exactly when the balanced draw
  says so, so it is one draw of the family, not the point the others are perturbed from;
- `per_vertex` listings per vertex fail one query rubric each (round-robin), spread uniformly over the
  vertices: the hidden configuration most of the family shares is nobody's. The cost: only the target
  vertex's violators are witnesses, so about per_vertex / (number of query rubrics) of the query rubrics are
  load-bearing in the audit (every hidden rubric is: its vertex e_i fails it alone);
- violations are real: a failed detail rubric's new value is written under every near-duplicate key
  ("Special features" with "Special Feature") and said wherever the listing's text stated the old one; a
  listing whose twin key, title, bullets or description still states the required value is refused
  (checks.nominal_violation), as is a translation of it ("防水" for "Waterproof").

Every listing is checked with the rubric checks the rules judge decides with (`ecab.core.rubric_checks`;
review_opinion with the review checker the caller injects: catalog=targets passes the process-wide one of
ecab/catalog/review_match.py) before it is kept: its target fails exactly the rubrics it should; a listing
that would satisfy every rubric of another task of its category is redrawn (and the final pass
drop_non_unique guarantees it), so each target stays the only product matching all of its task's rubrics.
Rubrics no listing can fail alone (a price cap implied by a budget; a brand the entity rubric names in the
title) are reported in the build's line.

Form: a sibling is a copy of the target with its own id shaped like the target's (its first four characters,
as variants listed together share them, then random ones of the same kind), the target's title with only
what changed swapped, the same detail keys in the same order, and its own reviews from the generator the
targets' reviews come from (`targets.opinion_reviews`: same count rule, same templates). Targets and siblings
are emitted in one seeded shuffle. Deterministic from the seed: every listing draws from `random.Random`
seeded with its task, its slot in the design and its attempt.

The package, by concept:
  cube.py          a family's design: the query matches (the factorial), the query violators, drift halves
  make.py          the plan of wrong values, one listing (make_listing), every family (make_siblings), the
                   uniqueness pass; the version that is part of the catalog fingerprint (SIBLINGS_VERSION)
  violate.py       failing one rubric: a choice (another value, an excluded value, another product line,
                   another store) and its application to a listing
  numbers.py       rating, rating count and price drawn inside (or outside) each range; the cents
  family.py        a task's family: the centre its listings are drawn around, drifted and varied facts
  pools.py         the plausible values of every field, from the task file's rows and the distractors; the
                   cents of the file's prices
  listing_text.py  editing a listing's text: a phrase replaced however it is punctuated, a value said anew
  checks.py        the tests every step keeps to: does the product satisfy the rubric; is a violation real
"""
