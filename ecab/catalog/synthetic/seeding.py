"""Random streams, product ids and dates. Every family and every product draws from its own
`random.Random`, seeded from sha256 of the seed and its index (never Python's salted `hash`), so the output is
the same in every process and on every machine."""
from __future__ import annotations

import datetime
import hashlib
import random


def rng_for(*parts: object) -> random.Random:
    """A Random seeded from sha256 of the parts joined by ':' (stable across processes and machines)."""
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


ALNUM = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
ID_SPACE = 36 ** 8


class IdMaker:
    """index -> "B0" + 8 base-36 chars, through an affine bijection of [0, 36^8): unique, random-looking."""

    def __init__(self, seed: int):
        rng = rng_for(seed, "ids")
        mult = rng.randrange(10 ** 11, ID_SPACE // 2)
        while mult % 2 == 0 or mult % 3 == 0:  # coprime with 36^8, so the map is a bijection
            mult += 1
        self.mult, self.offset = mult, rng.randrange(ID_SPACE)

    def __call__(self, index: int) -> str:
        n = (self.mult * index + self.offset) % ID_SPACE
        chars = []
        for _ in range(8):
            n, digit = divmod(n, 36)
            chars.append(ALNUM[digit])
        return "B0" + "".join(reversed(chars))


_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")
DAY_FIRST = 734503          # date(2012, 1, 1).toordinal()
DAY_LAST_LISTING = 738672   # date(2023, 6, 1).toordinal()
DAY_LAST_REVIEW = 738778    # date(2023, 9, 15).toordinal()
UNIX_DAY0 = 719163          # date(1970, 1, 1).toordinal()


def format_day(ordinal: int) -> str:
    """Amazon's "Date First Available" spelling, e.g. "September 20, 2022"."""
    d = datetime.date.fromordinal(ordinal)
    return f"{_MONTHS[d.month - 1]} {d.day}, {d.year}"
