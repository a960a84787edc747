"""Review phrase tables (data only): the generic opinions every type's reviews can carry, sentence
openers, closing fillers by mood and review titles by star rating."""
from __future__ import annotations

GENERIC_OPINIONS: dict[str, tuple[str, ...]] = {
    "positive": ("arrived well packaged with no damage", "the instructions were short and clear",
                 "customer service replaced a faulty unit quickly", "looks exactly like the product photos",
                 "still works perfectly after six months", "feels more expensive than the price"),
    "negative": ("arrived with scratches on it", "stopped working right after the return window",
                 "the packaging was damaged on arrival", "looks cheaper than in the photos",
                 "customer service never answered my emails", "instructions were missing from the box"),
}
REVIEW_PREFIXES = ("", "", "", "", "Honestly, ", "So far ", "After a month, ", "Update: ", "Pros: ")
REVIEW_FILLERS = {
    "positive": ("Would buy again.", "Highly recommend.", "Great value for the money.", "Exactly what I needed.",
                 "Five stars from me."),
    "mixed": ("It's fine for the price.", "Might return it.", "Not bad, not great.", "Keeping it for now."),
    "negative": ("Returning it.", "Not worth the money.", "Very disappointed.", "Would not buy again."),
}
REVIEW_TITLES = {
    5: ("Five Stars", "Love it", "Exactly as described", "Works great", "Great {noun}", "Highly recommend"),
    4: ("Pretty good", "Solid {noun}", "Good value", "Does the job", "Almost perfect"),
    3: ("It's okay", "Mixed feelings", "Average", "Some issues"),
    2: ("Disappointed", "Not as advertised", "Meh", "Expected better"),
    1: ("Don't buy", "Returned it", "Broke fast", "Waste of money", "One Star"),
}
