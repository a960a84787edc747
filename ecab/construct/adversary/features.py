"""Form features of each candidate of a task, relative to its candidate set and its family (issue 27).

`features(view)` -> {feature name: one float per candidate (view.candidates order)}; NaN where the tools give
nothing (no price, no date, reviews not fetched, search not run). A name ending in "@set" is computed within
the candidate set (the query's matches), "@family" within the family (view.py). Nothing here reads a rubric
beyond what the candidate set already is, nor the profile, nor the clarification script.

Detail values are compared in `ecab.core.text.normalize` form, a missing key counting as the value "" (so
every listing is scored on the same keys). A key whose value is the same everywhere tells nothing and is left
out; so is a key whose value differs in every listing of a context of three or more (an id, a rank).

The value features an attacker reads (each per context):
- minority_2v / majority_2v: two-valued keys on which the listing holds the strict minority / majority value
  (catalog=targets drifted up to two unread facts in ~75% of siblings, leaving the target the minority);
  minority_2v_low/mid/high: the same, split by the minority's share (< 0.15, < 0.35, < 0.5): a violated
  rubric's wrong value held by 3 listings looks unlike a drift held by three quarters;
- modal_keys / rare_keys / unique_keys: keys where it holds the most / least common / a unique value;
- value_share_mean/min/max: the share of the context holding its value, over the keys;
- consensus: minority on two-valued keys + modal on the others; consensus_drift: minority on drift-like
  two-valued keys (minority share >= 0.15), majority on rare-value ones, modal on the others;
- central: listings at most one value away (structural_picks' notion), exact twins included.
Then price (cents, an ending outside the usual .99/.95/.49/.69/.29/.89, the share of the context with the
same cents), title (exact copies, token overlap with the others, with the query), store share, id prefix
shared with the others (mean common-prefix length), ratings, reviews, Date First Available, near-duplicate
detail keys carrying different values (twin_conflicts: "Special Feature" vs "Special features"), search rank,
text statistics.
"""
from __future__ import annotations

import math
from collections import Counter
from datetime import datetime
from typing import Sequence

from ecab.construct.adversary.view import SEARCH_LIMIT, TaskView
from ecab.core.text import keyword_tokens, normalize, value_text
from ecab.schema import Product

NAN = float("nan")
USUAL_CENTS = frozenset({99, 95, 49, 69, 29, 89})
DRIFT_SHARE = 0.15            # a two-valued key whose minority holds at least this share looks like drift
CONTEXTS = ("set", "family")
_DATE_KEY = "date first available"
_DATE_FORMATS = ("%B %d, %Y", "%b %d, %Y", "%Y-%m-%d", "%d %B %Y")


def detail_values(product: Product) -> dict[str, str]:
    return {normalize(str(k)): normalize(value_text(v)) for k, v in (product.details or {}).items()}


def twin_form(key: str) -> str:
    """A detail key with case, spacing, punctuation and plural endings ignored ("Special features" ->
    "specialfeature"): two keys of one listing with the same form are near-duplicates."""
    return "".join(keyword_tokens(key))


def twin_conflicts(product: Product) -> tuple[int, int]:
    """(near-duplicate key groups, those whose values differ) of one listing."""
    groups: dict[str, set[str]] = {}
    raw: dict[str, set[str]] = {}
    for k, v in (product.details or {}).items():
        form = twin_form(str(k))
        raw.setdefault(form, set()).add(str(k))
        groups.setdefault(form, set()).add(normalize(value_text(v)))
    twins = [f for f, keys in raw.items() if len(keys) > 1]
    return len(twins), sum(1 for f in twins if len(groups[f]) > 1)


def price_cents(price) -> int | None:
    if price is None:
        return None
    try:
        return int(round(float(price) * 100)) % 100
    except (TypeError, ValueError):
        return None


def date_ordinal(product: Product) -> float:
    raw = None
    for k, v in (product.details or {}).items():
        if normalize(str(k)) == _DATE_KEY:
            raw = value_text(v).strip()
            break
    if not raw:
        return NAN
    for fmt in _DATE_FORMATS:
        try:
            return float(datetime.strptime(raw, fmt).toordinal())
        except ValueError:
            continue
    return NAN


def _num(x) -> float:
    try:
        return NAN if x is None else float(x)
    except (TypeError, ValueError):
        return NAN


# ---------------------------------------------------------------------------------------------------------
# Per-context statistics
# ---------------------------------------------------------------------------------------------------------

def value_features(rows: Sequence[dict[str, str]], k: int) -> dict[str, list[float]]:
    """The value features (module docstring) of the first `k` of `rows`, within all of `rows`."""
    n = len(rows)
    fields = sorted({f for row in rows for f in row})
    columns = {f: [row.get(f, "") for row in rows] for f in fields}
    kept = []
    for f in fields:
        distinct = len(set(columns[f]))
        if distinct < 2 or (n >= 3 and distinct == n):
            continue
        kept.append(f)
    counts = {f: Counter(columns[f]) for f in kept}
    out = {name: [0.0] * k for name in (
        "minority_2v", "majority_2v", "minority_2v_low", "minority_2v_mid", "minority_2v_high", "modal_keys",
        "rare_keys", "unique_keys", "value_share_mean", "value_share_min", "value_share_max", "consensus",
        "consensus_drift", "central", "varying_keys")}
    for i in range(k):
        shares = []
        for f in kept:
            c = counts[f]
            mine = c[columns[f][i]]
            top, low = max(c.values()), min(c.values())
            shares.append(mine / n)
            modal = mine == top
            out["modal_keys"][i] += modal
            out["rare_keys"][i] += (mine == low and low < top)
            out["unique_keys"][i] += mine == 1
            if len(c) == 2:
                minority_share = low / n
                is_min = mine * 2 < n
                is_maj = mine * 2 > n
                out["minority_2v"][i] += is_min
                out["majority_2v"][i] += is_maj
                bucket = ("minority_2v_low" if minority_share < DRIFT_SHARE else
                          "minority_2v_mid" if minority_share < 0.35 else "minority_2v_high")
                out[bucket][i] += is_min
                out["consensus"][i] += is_min
                out["consensus_drift"][i] += is_min if minority_share >= DRIFT_SHARE else is_maj
            else:
                out["consensus"][i] += modal
                out["consensus_drift"][i] += modal
        out["varying_keys"][i] = float(len(kept))
        out["value_share_mean"][i] = sum(shares) / len(shares) if shares else NAN
        out["value_share_min"][i] = min(shares) if shares else NAN
        out["value_share_max"][i] = max(shares) if shares else NAN
    # central: listings at most one kept value away (one bucket per masked key: linear, not quadratic)
    table = [tuple(columns[f][i] for f in kept) for i in range(n)]
    exact = Counter(table)
    masked = [Counter(values[:j] + values[j + 1:] for values in table) for j in range(len(kept))]
    for i in range(k):
        values = table[i]
        out["central"][i] = float(exact[values] - 1 + sum(masked[j][values[:j] + values[j + 1:]] - exact[values]
                                                          for j in range(len(kept))))
    return out


def prefix_sharing(ids: Sequence[str], k: int, depth: int = 12) -> list[float]:
    """Mean common-prefix length of each of the first `k` ids with the other ids (linear: sum over prefix
    lengths of how many others share that prefix)."""
    n = len(ids)
    if n < 2:
        return [0.0] * k
    counts = [Counter(i[:d] for i in ids if len(i) >= d) for d in range(1, depth + 1)]
    return [sum(counts[d - 1][ids[i][:d]] - 1 for d in range(1, min(depth, len(ids[i])) + 1)) / (n - 1)
            for i in range(k)]


def title_overlap(token_sets: Sequence[frozenset[str]], k: int) -> list[float]:
    """Per listing: the mean share of its title tokens found in another listing's title (linear via token
    document frequencies)."""
    n = len(token_sets)
    if n < 2:
        return [0.0] * k
    df = Counter(t for s in token_sets for t in s)
    return [sum(df[t] - 1 for t in token_sets[i]) / ((n - 1) * len(token_sets[i])) if token_sets[i] else 0.0
            for i in range(k)]


def context_features(products: Sequence[Product], k: int, token_sets: Sequence[frozenset[str]]
                     ) -> dict[str, list[float]]:
    """Every context-relative feature of the first `k` of `products`."""
    n = len(products)
    out = value_features([detail_values(p) for p in products], k)
    titles = [normalize(p.title or "") for p in products]
    tcount = Counter(titles)
    out["title_copies"] = [float(tcount[titles[i]] - 1) for i in range(k)]
    out["title_overlap"] = title_overlap(token_sets, k)
    stores = [normalize(p.store or "") for p in products]
    scount = Counter(stores)
    out["store_share"] = [scount[stores[i]] / n for i in range(k)]
    cents = [price_cents(p.price) for p in products]
    ccount = Counter(cents)
    out["price_cents_share"] = [ccount[cents[i]] / n if cents[i] is not None else NAN for i in range(k)]
    out["id_prefix"] = prefix_sharing([p.product_id for p in products], k)
    prices = [_num(p.price) for p in products]
    known = sorted(x for x in prices if not math.isnan(x))
    out["price_vs_median"] = [(prices[i] / known[len(known) // 2] if known and known[len(known) // 2] and
                               not math.isnan(prices[i]) else NAN) for i in range(k)]
    return out


# ---------------------------------------------------------------------------------------------------------
# A task's candidates
# ---------------------------------------------------------------------------------------------------------

def features(view: TaskView) -> dict[str, list[float]]:
    """{feature name: one float per candidate} (module docstring)."""
    cands = [c.product for c in view.candidates]
    k = len(cands)
    if not k:
        return {}
    tokens = {p.product_id: frozenset(keyword_tokens(p.title or "")) for p in view.family or cands}
    for p in cands:
        tokens.setdefault(p.product_id, frozenset(keyword_tokens(p.title or "")))
    out: dict[str, list[float]] = {}
    family = view.family if view.family else cands
    for name, context in (("set", cands), ("family", family)):
        for f, values in context_features(context, k, [tokens[p.product_id] for p in context]).items():
            out[f"{f}@{name}"] = values
    query = frozenset(keyword_tokens(view.query or ""))
    out["family_size"] = [float(len(family))] * k
    out["set_size"] = [float(k)] * k
    out["query_overlap"] = [len(tokens[p.product_id] & query) / len(query) if query else NAN for p in cands]
    cents = [price_cents(p.price) for p in cands]
    out["price"] = [_num(p.price) for p in cands]
    out["price_cents"] = [float(c) if c is not None else NAN for c in cents]
    out["price_odd_ending"] = [float(c is not None and c not in USUAL_CENTS) for c in cents]
    out["price_round"] = [float(c == 0) if c is not None else NAN for c in cents]
    out["price_digits"] = [float(len(str(int(p.price)))) if p.price is not None else NAN for p in cands]
    out["average_rating"] = [_num(p.average_rating) for p in cands]
    out["rating_number"] = [_num(p.rating_number) for p in cands]
    out["date_first_available"] = [date_ordinal(p) for p in cands]
    twins = [twin_conflicts(p) for p in cands]
    out["twin_keys"] = [float(t) for t, _ in twins]
    out["twin_conflicts"] = [float(c) for _, c in twins]
    out["detail_keys"] = [float(len(p.details or {})) for p in cands]
    out["feature_count"] = [float(len(p.features or [])) for p in cands]
    out["feature_chars"] = [float(sum(len(str(f)) for f in p.features or [])) for p in cands]
    out["description_count"] = [float(len(p.description or [])) for p in cands]
    out["description_chars"] = [float(sum(len(str(d)) for d in p.description or [])) for p in cands]
    out["title_chars"] = [float(len(p.title or "")) for p in cands]
    out["title_tokens"] = [float(len(tokens[p.product_id])) for p in cands]
    out["id_length"] = [float(len(p.product_id)) for p in cands]
    ids = sorted(p.product_id for p in cands)
    out["id_order"] = [ids.index(p.product_id) / max(1, k - 1) for p in cands]
    # Catalog (build) order: get_store_products lists a store's products in it, so an agent sees it.
    out["scan_order"] = [i / max(1, k - 1) for i in range(k)]
    if view.searched:
        out["search_rank"] = [float(c.search_rank if c.search_rank is not None else SEARCH_LIMIT + 1)
                              for c in view.candidates]
    if all(c.reviews is not None for c in view.candidates):
        revs = [c.reviews or [] for c in view.candidates]
        out["review_count"] = [float(len(r)) for r in revs]
        out["review_mean_rating"] = [sum(_num(x.rating) for x in r) / len(r) if r else NAN for r in revs]
        out["review_chars"] = [sum(len(x.text or "") for x in r) / len(r) if r else NAN for r in revs]
        out["review_verified"] = [sum(bool(x.verified_purchase) for x in r) / len(r) if r else NAN for r in revs]
    return out
