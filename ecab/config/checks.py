"""The config layer's error type, its one numeric check (one line naming the key) and the typo hint of an
unknown key."""
from __future__ import annotations

import difflib
import math
from typing import Iterable


class ConfigError(ValueError):
    """A bad override, an unknown config group option, or a missing required key."""


def check_number(key: str, value: object, kind: str, low: float | None = None, inclusive: bool = True,
                 nullable: bool = False) -> None:
    """Raise a ConfigError naming `key` unless `value` is a number of the kind and range asked for. kind: "int",
    "number" (an int or a finite float) or "rate" (a number in [0, 1], or (0, 1) when not `inclusive`)."""
    if value is None and nullable:
        return
    if kind == "int":
        ok = isinstance(value, int) and not isinstance(value, bool)
        noun = ("a positive integer" if low == 1 else "a non-negative integer" if low == 0 else "an integer") \
            if inclusive else f"an integer > {low}"
    else:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        noun = ("a number in (0, 1)" if not inclusive else "a number in [0, 1]") if kind == "rate" else \
            "a number" if low is None else f"a number {'>=' if inclusive else '>'} {low:g}"
    if ok and low is not None:
        ok = value >= low if inclusive else value > low  # type: ignore[operator]
    if ok and kind == "rate":
        ok = value <= 1 if inclusive else value < 1  # type: ignore[operator]
    if not ok:
        raise ConfigError(f"{key} must be {noun}{' (or null)' if nullable else ''}, got {value!r}")


def did_you_mean(name: str, known: Iterable[str], section: str = "") -> str:
    """"; did you mean 'model'?" when a known key is close to `name` (a typo: `+modle=x`), else "" (named in full
    under a `section`: 'catalog.products'). The hint goes in the error that refuses the key: a typo is never set
    as a key of its own that nothing reads."""
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    return f"; did you mean '{section + '.' if section else ''}{close[0]}'?" if close else ""
