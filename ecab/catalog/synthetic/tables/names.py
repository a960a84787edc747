"""Names and foreign words the generator draws from (data only): made-up brand syllables, resellers,
countries of origin, non-English detail values."""
from __future__ import annotations

BRAND_SYLLABLES = ("ka", "lo", "mi", "ve", "zu", "ra", "no", "ti", "xe", "do", "pa", "sy", "qu", "lu", "an",
                   "or", "el", "ix", "on", "ar", "be", "fo", "gi", "ha", "je", "mo", "ne", "ri", "so", "va")
BRAND_SUFFIXES = ("", "", "", "tek", "ly", "io", "ora", "ex", "go", "pro")
BRAND_CONSONANTS = "BCDFGHJKLMNPRSTVWXYZ"
RESELLERS = ("GadgetHub Direct", "Prime Deals Co", "TopChoice Mart", "BestBuy Outlet Store", "EverydayGoods US")
FOREIGN_VALUES = {"Style": "经典的", "Recommended Uses For Product": "游戏", "Special Feature": "防水"}
COUNTRIES = ("China", "USA", "Taiwan", "Vietnam", "Korea")
