"""The rules judge (ecab/core/rubric_checks.py under ecab/judge/rules.py): every rubric type both ways, the real
samples' targets, review matching with the real embedder (ecab/catalog/review_match.py), and the threshold
calibration behind REVIEW_MATCH_THRESHOLD."""
from __future__ import annotations

import pytest

from ecab.catalog.review_match import (
    REVIEW_MATCH_THRESHOLD,
    ReviewChecker,
    calibrate_threshold,
    choose_threshold,
    split_sentences,
)
from ecab.core.rubric_checks import NO_PRODUCT_REASON
from ecab.core.text import contains_phrase, keyword_tokens, normalize
from ecab.judge.episode import outcome
from ecab.judge.rules import check_rubric, judge_product, satisfying_products
from ecab.schema import Product, Review, Rubric, Task, Verdict, Voucher, read_tasks

def product(**kw) -> Product:
    base = {"product_id": "P1", "title": "Widget", "store": "Acme", "price": 20.0, "average_rating": 4.2,
            "rating_number": 120, "features": [], "details": {}}
    base.update(kw)
    return Product.from_dict(base)


def rubric(rtype: str, field: str, expected, **extras) -> Rubric:
    return Rubric.from_dict({"id": "r1", "type": rtype, "field": field, "expected_value": expected, **extras})


def judge(rtype, field, expected, prod, **kw) -> Verdict:
    return check_rubric(rubric(rtype, field, expected), prod, **kw)


@pytest.fixture(scope="module")
def real_tasks(released_samples) -> list[Task]:
    tasks = read_tasks(released_samples)
    assert tasks
    return tasks


# ---------------------------------------------------------------------------------------------------------
# normalize.py
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("raw, expected", [
    ("Nylon, Silicone", "nylon,silicone"),
    ("Wi-Fi", "wi fi"),
    ("snake_case", "snake case"),
    ("Black & White", "black and white"),
    ("Kid's Toy\u2122", "kids toy"),
    ("PC;Android / Apple iOS | Mac", "pc,android,apple ios,mac"),
    ("1.69 Inches", "1.69 inches"),
    ("  LOTS   of   SPACE ", "lots of space"),
])
def test_normalize(raw, expected):
    assert normalize(raw) == expected


def test_phrase_matching_respects_token_boundaries():
    assert contains_phrase(normalize("USB-C"), normalize("USB"))
    assert not contains_phrase(normalize("USB"), normalize("USB-C"))
    assert not contains_phrase(normalize("Wireless"), normalize("Wired"))
    assert not contains_phrase(normalize("1.69 Inches"), normalize("69 Inches"))
    assert contains_phrase(normalize("\u7ecf\u5178\u7684\u6b3e\u5f0f"), normalize("\u7ecf\u5178"))  # CJK: no word spaces
    assert keyword_tokens("The Batteries for a Phone Case") == ["battery", "phone", "case"]


# ---------------------------------------------------------------------------------------------------------
# attribute_match
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value, expected, ok", [
    ("Nylon", "nylon", True),
    ("Nylon, Silicone", "Nylon", True),              # one option of a multi-valued value
    ("All", "All", True),
    ("Bluetooth, USB, USB-C", "USB-C", True),
    ("USB-C", "USB", True),                          # product more specific than the requirement
    ("USB", "USB-C", False),                         # never broaden
    ("USBC", "USB", False),                          # no token boundary
    ("Wireless", "Wired", False),
    ("WiFi", "Wi-Fi", True),                         # spaces ignored when a whole option is equal
    ("Ac/dc", "dc", True),
    ("Black & White", "black and white", True),
    ("Polybutylene Terephthalate, ABS", "Terephthalate Polybutylene", False),
    ("Red", "Black", False),
    (["Android", "iOS"], "iOS", True),               # list value
    ({"a": "Leather", "b": "Metal"}, "metal", True),  # dict value
])
def test_attribute_match_value_rule(value, expected, ok):
    verdict = judge("attribute_match", "details.Material", expected, product(details={"Material": value}))
    assert verdict.satisfied is ok
    assert verdict.method == "rule"
    if ok:
        assert "details['Material']" in verdict.evidence


def test_attribute_match_alias_and_case_insensitive_key():
    prod = product(details={"OS": "Android 12", "color": "Midnight Blue"})
    os_verdict = judge("attribute_match", "details.Operating System", "android", prod)
    assert os_verdict.satisfied is True
    assert "details['OS']" in os_verdict.evidence
    assert judge("attribute_match", "details.Color", "blue", prod).satisfied is True
    assert judge("attribute_match", "details.Color", "red", prod).satisfied is False


def test_attribute_match_features_fallback_precise_phrase_only():
    prod = product(details={}, features=["Made of TPU with raised edges", "Works with any Personal Computer",
                                         "Suitable for all skin types", "Includes 1 AC adapter and 1 cord"])
    hit = judge("attribute_match", "details.Material", "TPU", prod)
    assert hit.satisfied is True and hit.evidence.startswith("features:")
    assert judge("attribute_match", "details.Compatible Devices", "Laptop", prod).satisfied is False
    assert judge("attribute_match", "details.Skin Type", "All", prod).satisfied is True   # bullet names "skin"
    assert judge("attribute_match", "details.Hair Type", "All", prod).satisfied is False  # no "hair" there
    assert judge("attribute_match", "details.Compatible Devices", "PC", product(features=["Fits any pc bag"])).satisfied is False
    assert judge("attribute_match", "details.Compatible Devices", "PC", product(features=["Works with PC and Mac"])).satisfied is True
    assert judge("attribute_match", "details.Number of Items", "1", prod).satisfied is False  # counts in prose
    missing = judge("attribute_match", "details.Material", "Leather", prod)
    assert missing.satisfied is False and "absent" in missing.evidence


def test_attribute_match_falls_back_to_features_when_details_disagree():
    prod = product(details={"Color": "Multi"}, features=["Color: Black with a red logo"])
    assert judge("attribute_match", "details.Color", "Black", prod).satisfied is True


# ---------------------------------------------------------------------------------------------------------
# negative_attribute
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value, excluded, ok", [
    ("Black", ["white", "red"], True),
    ("Blue-Green", ["blue"], False),                  # partial overlap counts as a match
    ("Bluetooth", ["Bluetooth 5.0"], False),          # the value inside an excluded value also overlaps
    ("Wired", ["wireless", "Wi-Fi"], True),
    ("Wireless, Bluetooth", ["wireless"], False),
    ("ZOSI", ["Swann", "Lorex"], True),
    ("Metal", [], True),                              # nothing excluded, field present
])
def test_negative_attribute(value, excluded, ok):
    prod = product(details={"Connectivity Technology": value})
    assert judge("negative_attribute", "details.Connectivity Technology", excluded, prod).satisfied is ok


def test_negative_attribute_missing_field_is_not_satisfied():
    prod = product(details={})
    assert judge("negative_attribute", "details.Color", ["red"], prod).satisfied is False
    assert judge("negative_attribute", "details.Color", [], prod).satisfied is False


# ---------------------------------------------------------------------------------------------------------
# numeric_range
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("field, value, expected, ok", [
    ("price", 15.0, {"value": 15, "op": "<"}, False),   # the strict "<" edge
    ("price", 14.99, {"value": 15, "op": "<"}, True),
    ("price", 15.0, {"value": 15, "op": "<="}, True),
    ("price", 15.0, {"value": 15, "op": ">"}, False),
    ("price", 15.01, {"value": 15, "op": ">"}, True),
    ("price", 15.0, {"value": 15, "op": ">="}, True),
    ("price", 15.0, {"value": 15, "op": "=="}, True),
    ("average_rating", 4.0, {"min": 4.0}, True),
    ("average_rating", 3.9, {"min": 4.0}, False),
    ("rating_number", 500, {"max": 500}, True),
    ("rating_number", 501, {"max": 500}, False),
    ("price", 10.0, {"min": 10, "max": 20}, True),
    ("price", 20.5, {"min": 10, "max": 20}, False),
    ("price", 20.0, [10, 20], True),
    ("price", 9.99, [10, 20], False),
    ("average_rating", 4.5, 4.5, True),
    ("average_rating", 4.6, 4.5, False),
])
def test_numeric_range_shapes(field, value, expected, ok):
    assert judge("numeric_range", field, expected, product(**{field: value})).satisfied is ok


def test_numeric_range_null_and_text_values():
    assert judge("numeric_range", "price", {"max": 50}, product(price=None)).satisfied is False
    assert judge("numeric_range", "rating_number", {"min": 1000}, product(rating_number="1,234")).satisfied is True


# ---------------------------------------------------------------------------------------------------------
# budget_match
# ---------------------------------------------------------------------------------------------------------

FIXED = {"voucher_type": "shop", "threshold": 50.0, "discount_type": "fixed", "face_value": 10.0, "discount": None,
         "cap": None, "budget": 95.0, "total_original_price": 100.0, "price_after_voucher": 90.0}
PERCENT = {"voucher_type": "brand", "threshold": 20.0, "discount_type": "percentage", "face_value": None,
           "discount": 0.2, "cap": 15.0, "budget": 90.0, "total_original_price": 100.0, "price_after_voucher": 85.0}
TIERED = {"voucher_type": "platform", "threshold": 50.0, "discount_type": "tiered", "face_value": None,
          "discount": None, "cap": None,
          "tiers": [{"tier": 1, "threshold": 50.0, "discount_type": "fixed", "face_value": 5.0},
                    {"tier": 2, "threshold": 120.0, "discount_type": "fixed", "face_value": 25.0}],
          "active_tier": 1, "budget": 96.0, "total_original_price": 100.0, "price_after_voucher": 95.0}
STACKED = {"voucher_type": "stacked", "threshold": 40.0, "discount_type": "stacked", "face_value": None,
           "discount": None, "cap": None,
           "coupons": [{"coupon_index": 0, "voucher_type": "platform", "discount_type": "percentage",
                        "threshold": 40.0, "discount": 0.1, "cap": 8.0},
                       {"coupon_index": 1, "voucher_type": "shop", "discount_type": "fixed", "threshold": 30.0,
                        "face_value": 5.0}],
           "budget": 88.0, "total_original_price": 100.0, "price_after_voucher": 87.0}


@pytest.mark.parametrize("voucher, price, budget, ok", [
    (FIXED, 100.0, 90.0, True),          # 100 - 10 = 90, exactly the budget
    (FIXED, 100.0, 89.99, False),
    (FIXED, 45.0, 40.0, False),          # below the threshold: no discount, 45 > 40
    (PERCENT, 100.0, 85.0, True),        # 20% = 20, capped at 15
    (PERCENT, 100.0, 84.99, False),
    (TIERED, 100.0, 95.0, True),         # tier 1 only
    (TIERED, 130.0, 105.0, True),        # a dearer product reaches tier 2: 130 - 25
    (STACKED, 100.0, 87.0, True),        # 100 - 8 (10% capped) = 92, then - 5
    (STACKED, 100.0, 86.5, False),
])
def test_budget_match_applies_the_voucher_to_this_product(voucher, price, budget, ok):
    verdict = judge("budget_match", "budget", budget, product(price=price), voucher=Voucher.from_dict(voucher))
    assert verdict.satisfied is ok
    assert "list price" in verdict.evidence and "budget" in verdict.evidence


def test_budget_match_null_price_and_no_voucher():
    assert judge("budget_match", "budget", 50.0, product(price=None), voucher=Voucher.from_dict(FIXED)).satisfied is False
    assert judge("budget_match", "budget", 20.0, product(price=20.0)).satisfied is True


def test_real_coupon_targets_fit_their_budget(real_tasks):
    coupon = [t for t in real_tasks if t.voucher is not None]
    assert coupon
    for task in coupon:
        final = task.voucher.apply(task.target_product.price)
        assert abs(final - task.voucher.price_after_voucher) <= 0.01, task.id
        assert final <= task.voucher.budget, task.id


# ---------------------------------------------------------------------------------------------------------
# entity_match, store_match
# ---------------------------------------------------------------------------------------------------------

def test_entity_match():
    prod = product(title="BAISRKE Huawei Y6 Case with Flowers, Slim TPU Back Cover for Honor 7A")
    span = rubric("entity_match", "title", "phone case", canonical_entity="phone case", title_span="Case")
    assert check_rubric(span, prod).satisfied is True                      # title_span contained
    shuffled = rubric("entity_match", "title", "cover for phone")
    assert check_rubric(shuffled, product(title="Phone Covers, slim")).satisfied is True  # order-free, plural
    wrong = rubric("entity_match", "title", "room divider", canonical_entity="room divider")
    assert check_rubric(wrong, product(title="Desk Panel for privacy")).satisfied is False
    partial = rubric("entity_match", "title", "screen protector")
    assert check_rubric(partial, product(title="Screen cleaning kit")).satisfied is False


def test_store_match():
    assert judge("store_match", "store", "acme  corp", product(store="ACME Corp")).satisfied is True
    assert judge("store_match", "store", "Acme", product(store="Acme Corp")).satisfied is False


# ---------------------------------------------------------------------------------------------------------
# The released samples
# ---------------------------------------------------------------------------------------------------------

def test_every_real_target_satisfies_its_own_mechanical_rubrics(real_tasks):
    checked = 0
    for task in real_tasks:
        for verdict in judge_product(task, task.target_product):
            if verdict.type == "review_opinion":
                continue
            assert verdict.satisfied is True, (task.id, verdict.rubric_id, verdict.reasoning)
            checked += 1
    kinds = {r.type for t in real_tasks for r in t.rubrics}
    assert {"attribute_match", "numeric_range", "entity_match", "negative_attribute", "budget_match"} <= kinds
    assert checked > 300


def test_real_attribute_match_rubrics_decided_from_details(real_tasks):
    """§9: every attribute_match rubric is met by its target's own details, not by the features fallback."""
    for task in real_tasks:
        for r in task.rubrics:
            if r.type == "attribute_match":
                verdict = check_rubric(r, task.target_product)
                assert verdict.satisfied is True and verdict.evidence.startswith("details["), (task.id, r.id)


def test_real_tasks_are_not_satisfied_by_other_targets(real_tasks):
    """Discrimination: among the 34 targets, only a task's own target meets all its mechanical rubrics."""
    targets = [t.target_product for t in real_tasks]
    for task in real_tasks:
        mechanical = Task.from_dict({**task.to_dict(),
                                     "rubrics": [r.to_dict() for r in task.rubrics if r.type != "review_opinion"],
                                     "implicit_rubric_ids": [], "clarification_script": {}})
        assert satisfying_products(mechanical, targets) == [task.target_product.product_id], task.id


# ---------------------------------------------------------------------------------------------------------
# No product, correctness
# ---------------------------------------------------------------------------------------------------------

def test_no_product_fails_every_rubric(real_tasks):
    task = real_tasks[0]
    verdicts = judge_product(task, None)
    assert len(verdicts) == len(task.rubrics)
    assert all(v.satisfied is False and v.method == "no_product" and v.reasoning == NO_PRODUCT_REASON
               for v in verdicts)
    assert [v.rubric_id for v in verdicts] == [r.id for r in task.rubrics]
    assert outcome(task, None, verdicts) == (False, False, False)


def test_correct_is_the_exact_target_or_every_rubric_satisfied(real_tasks):
    """The one outcome rule (judge.episode.outcome) that both judges use."""
    task = real_tasks[1]
    own = judge_product(task, task.target_product)
    target = task.target_product.product_id
    assert outcome(task, target, []) == (True, False, True)        # the exact target wins regardless of verdicts
    assert outcome(task, "OTHER", own) == (False, True, True)
    failing = own[:-1] + [Verdict(rubric_id="rX", satisfied=False)]
    assert outcome(task, "OTHER", failing) == (False, False, False)
    unscored = own + [Verdict(rubric_id="rY", satisfied=None)]
    assert outcome(task, "OTHER", unscored) == (False, None, None)  # never counted wrong: reported apart
    assert outcome(task, "OTHER", unscored + failing[-1:]) == (False, False, False)
    assert outcome(task, "OTHER", []) == (False, False, False)     # nothing judged is not satisfied


def test_unknown_rubric_type_is_a_clear_error():
    bogus = Rubric(id="r9", type="color_vibes", field="title", expected_value="x")
    with pytest.raises(ValueError, match="r9.*color_vibes"):
        check_rubric(bogus, product())


# ---------------------------------------------------------------------------------------------------------
# review_opinion with the real embedder
# ---------------------------------------------------------------------------------------------------------

# (opinion, review sentences): positives hold one paraphrase among distractors, negatives only distractors.
POSITIVE_PAIRS = [
    ("charges my phone standing up or lying down", ["Arrived quickly.", "It works whether the phone is upright or flat on the pad."]),
    ("feels solid and sturdy", ["The build quality is excellent, it feels very robust and well made.", "Shipping took a week."]),
    ("very affordable compared to Apple keyboard", ["Costs a fraction of what Apple charges for their Magic Keyboard.", "Keys are quiet."]),
    ("stickers are of good quality", ["These decals are really well made and durable.", "My kids loved them."]),
    ("great for handing out to kids", ["I gave them away to the children at the school event and they were a hit.", "Colors are bright."]),
    ("extends comfortable TV viewing time at night", ["I can watch television late in the evening much longer without my eyes getting tired.", "Installation was easy."]),
    ("provides a strong WiFi signal", ["The wireless coverage is excellent throughout the house.", "Setup took an hour."]),
    ("works reliably like a charm", ["It has worked flawlessly every single day since I installed it.", "The box was dented."]),
    ("battery lasts a full week", ["I only need to charge it once every seven days.", "The strap is comfortable."]),
    ("easy to install in minutes", ["Setting it up took me less than five minutes.", "Looks nice on the wall."]),
    ("screen protector leaves no bubbles", ["Went on perfectly with zero air bubbles.", "Came with a cleaning cloth."]),
    ("case fits the phone perfectly", ["The cover fits my phone like a glove.", "Delivery was fast."]),
    ("charges the laptop very fast", ["My notebook battery fills up really quickly with this charger.", "The cable is nice."]),
    ("keys are quiet when typing", ["Typing on it makes almost no noise.", "Pairs with my tablet."]),
    ("the cable is too short", ["I wish the cord were longer, it barely reaches the outlet.", "Charges fine."]),
    ("adhesive stays stuck on water bottles", ["They have stayed on my Hydro Flask through many washes.", "Cute designs."]),
    ("camera has clear night vision", ["The picture at night is crisp and easy to see in the dark.", "The app is clunky."]),
    ("holds the phone securely while driving", ["My phone doesn't move at all on bumpy roads.", "Installs on the vent."]),
    ("brush cleans easily after use", ["It is simple to wash after applying the mask.", "Bristles are soft."]),
    ("the lock box is hard to open without the code", ["Nobody can get into it without knowing the combination.", "Mounted it by the door."]),
    ("colors are vibrant and bright", ["The colours really pop and are very vivid.", "Good size."]),
    ("doesn't get hot while charging", ["The charger stays cool even after hours of use.", "Compact design."]),
    ("trackpad is responsive and accurate", ["The touchpad reacts instantly and tracks precisely.", "The case is heavy."]),
    ("customer service was helpful", ["The seller's support team resolved my problem quickly.", "Works as described."]),
]
NEGATIVE_PAIRS = [
    ("charges my phone standing up or lying down", ["The cable is too short.", "Arrived quickly.", "The light is too bright at night."]),
    ("feels solid and sturdy", ["Shipping took a week.", "The color is darker than pictured."]),
    ("very affordable compared to Apple keyboard", ["The keys are quiet.", "Bluetooth pairing was quick."]),
    ("stickers are of good quality", ["My kids loved the designs.", "Arrived a day late."]),
    ("great for handing out to kids", ["Colors are bright.", "They peel off after washing."]),
    ("extends comfortable TV viewing time at night", ["Installation was easy.", "It is a bit pricey."]),
    ("provides a strong WiFi signal", ["Setup took an hour.", "The mounting bracket is flimsy."]),
    ("works reliably like a charm", ["The box was dented.", "It looks sleek."]),
    ("battery lasts a full week", ["The strap is comfortable.", "The screen is hard to read in sunlight."]),
    ("easy to install in minutes", ["Looks nice on the wall.", "The color faded after a month."]),
    ("screen protector leaves no bubbles", ["Came with a cleaning cloth.", "The packaging was nice."]),
    ("case fits the phone perfectly", ["Delivery was fast.", "The pattern is pretty."]),
    ("charges the laptop very fast", ["The cable is nice and braided.", "It comes in white."]),
    ("keys are quiet when typing", ["Pairs with my tablet.", "Battery lasts long."]),
    ("the cable is too short", ["Charges fine.", "The plug folds away."]),
    ("adhesive stays stuck on water bottles", ["Cute designs.", "Shipping was slow."]),
    ("camera has clear night vision", ["The app is clunky.", "The camera was easy to mount."]),
    ("holds the phone securely while driving", ["Installs on the vent.", "It charges slowly."]),
    ("brush cleans easily after use", ["Bristles are soft.", "Comes in a pack of three."]),
    ("the lock box is hard to open without the code", ["Mounted it by the door.", "It rusted after the winter."]),
    ("colors are vibrant and bright", ["Good size.", "The paper is thin."]),
    ("doesn't get hot while charging", ["Compact design.", "It only has one port."]),
    ("trackpad is responsive and accurate", ["The case is heavy.", "The keyboard is backlit."]),
    ("customer service was helpful", ["Works as described.", "Arrived on time."]),
]
# Chatter every product's reviews contain: a real product has ~20 reviews and the threshold must beat the
# max over many sentences, so every pair is scored with these too.
CHATTER = [
    "Great product, highly recommend!", "Works as expected.", "Five stars.", "Love it!",
    "Good value for the money.", "Arrived on time and well packaged.", "Exactly as described.",
    "Would buy again.", "My husband uses it every day.", "Not bad for the price.",
    "It stopped working after two months.", "Returned it.", "Perfect gift for my sister.",
    "The instructions were confusing.", "Nice color.", "Does the job.",
]


@pytest.fixture(scope="module")
def checker() -> ReviewChecker:
    from ecab.catalog.embed import get_embedder

    return ReviewChecker(embedder=get_embedder())


def reviews_of(*texts: str, pid: str = "P1") -> list[Review]:
    return [Review.from_dict({"product_id": pid, "review_id": i, "rating": 5.0, "title": "", "text": t})
            for i, t in enumerate(texts)]


def test_split_sentences():
    text = "Great case.<br />Fits well! Would it last? Yes; it does. " + " ".join(["word"] * 90)
    sentences = split_sentences(text)
    assert sentences[:5] == ["Great case.", "Fits well!", "Would it last?", "Yes", "it does."]
    assert all(len(s.split()) <= 40 for s in sentences)


@pytest.mark.slow
def test_threshold_calibration_reproduces_the_constant(checker):
    positives = [(o, s + CHATTER) for o, s in POSITIVE_PAIRS]
    negatives = [(o, s + CHATTER) for o, s in NEGATIVE_PAIRS]
    calibration = calibrate_threshold(positives, negatives, checker=checker)
    assert calibration.balanced_accuracy >= 0.85
    assert calibration.positive_mean - calibration.negative_mean > 0.2
    # The shipped constant is as good as the freshly calibrated threshold on the same pairs.
    pos = [checker.best_sentence(o, s)[0] for o, s in positives]
    neg = [checker.best_sentence(o, s)[0] for o, s in negatives]
    tpr = sum(p >= REVIEW_MATCH_THRESHOLD for p in pos) / len(pos)
    tnr = sum(n < REVIEW_MATCH_THRESHOLD for n in neg) / len(neg)
    assert (tpr + tnr) / 2 == pytest.approx(calibration.balanced_accuracy)
    assert abs(calibration.threshold - REVIEW_MATCH_THRESHOLD) < 0.05


def test_choose_threshold_maximizes_balanced_accuracy():
    calibration = choose_threshold([0.8, 0.7, 0.6], [0.2, 0.3, 0.65])
    assert calibration.balanced_accuracy == pytest.approx(5 / 6)
    assert 0.3 < calibration.threshold <= 0.6
    separable = choose_threshold([0.8, 0.9], [0.1, 0.2])
    assert separable.threshold == pytest.approx(0.5) and separable.balanced_accuracy == 1.0
    with pytest.raises(ValueError):
        choose_threshold([], [0.1])


def test_review_opinion_paraphrase_both_ways(checker):
    opinion = rubric("review_opinion", "review", "charges my phone standing up or lying down")
    good = reviews_of("Five stars. It works whether the phone is upright or flat on the pad.", "Love it!")
    bad = reviews_of("The cable is too short. Arrived quickly.", "The light is too bright at night.")
    hit = check_rubric(opinion, product(), reviews=good, review_checker=checker)
    assert hit.satisfied is True and hit.method == "embedding"
    assert "upright or flat" in hit.evidence and hit.score >= REVIEW_MATCH_THRESHOLD
    miss = check_rubric(opinion, product(), reviews=bad, review_checker=checker)
    assert miss.satisfied is False and miss.score < REVIEW_MATCH_THRESHOLD


def test_review_opinion_lexical_precheck_and_missing_reviews(checker):
    opinion = rubric("review_opinion", "review", {"opinion": "Feels solid and sturdy"})
    lexical = check_rubric(opinion, product(), reviews=reviews_of("Honestly it feels solid & sturdy, nice."),
                           review_checker=checker)
    assert lexical.satisfied is True and lexical.score == 1.0 and "lexical match" in lexical.reasoning
    assert check_rubric(opinion, product(), reviews=[], review_checker=checker).satisfied is False
    assert check_rubric(opinion, product(), reviews=None, review_checker=checker).satisfied is False


def test_review_sentences_are_cached_per_product(checker):
    reviews = reviews_of("The touchpad reacts instantly and tracks precisely.", "Heavy case.", pid="CACHE1")
    before = dict(checker.stats)
    first = checker.check("trackpad is responsive and accurate", reviews, product_id="CACHE1")
    second = checker.check("keys are quiet when typing", reviews, product_id="CACHE1")
    assert checker.stats["sentence_cache_misses"] == before["sentence_cache_misses"] + 1
    assert checker.stats["sentence_cache_hits"] == before["sentence_cache_hits"] + 1
    assert first.satisfied and not second.satisfied
    described = checker.describe()
    assert described["threshold"] == REVIEW_MATCH_THRESHOLD and described["method"] == "embedding"
    assert described["model"] and described["stats"]["checks"] >= 2


def test_checker_calibrate_records_stats_in_describe(checker):
    local = ReviewChecker(embedder=checker.embedder)
    calibration = local.calibrate(POSITIVE_PAIRS[:6], NEGATIVE_PAIRS[:6])
    assert local.threshold == calibration.threshold
    assert local.describe()["calibration"]["n_positive"] == 6


def test_the_rubric_checks_are_pure_and_need_an_injected_review_checker():
    """core/rubric_checks.py decides review_opinion only with the checker it is given (it loads no model);
    the rules judge's check_rubric supplies the process-wide one."""
    from ecab.core.rubric_types import rubric_verdict
    opinion = rubric("review_opinion", "reviews", "feels sturdy")
    reviews = [Review(review_id=1, product_id="P1", rating=5, title="", text="It feels sturdy.")]
    assert rubric_verdict(opinion, product(), reviews=[]).satisfied is False       # no reviews: no checker needed
    with pytest.raises(ValueError, match="review checker"):
        rubric_verdict(opinion, product(), reviews=reviews)
    assert check_rubric(rubric("store_match", "store", "acme"), product()) == \
        rubric_verdict(rubric("store_match", "store", "acme"), product())
