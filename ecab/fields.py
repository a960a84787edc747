"""The catalog's detail-field vocabulary (docs/original-harness.md §5.2), used by catalog, construction, tools, judge.

One table of canonical detail keys and their alias spellings, so that every stage reads a product's
`details` the same way. `lookup_detail` is the single alias-aware, case-insensitive accessor.
"""
from __future__ import annotations

from typing import Any, Mapping

GENERAL_FIELDS = ["Brand", "Color", "Material", "Style", "Size", "Special Feature", "Number of Items",
                  "Age Range (Description)"]
BEAUTY_FIELDS = ["Item Form", "Hair Type", "Skin Type", "Scent", "Finish Type", "Product Benefits",
                 "Material Feature"]
ELECTRONICS_FIELDS = ["Form Factor", "Connectivity Technology", "Connector Type", "Compatible Phone Models",
                      "Compatible Devices", "Screen Size", "Pattern", "Mounting Type", "Shell Type"]
COMPUTER_FIELDS = ["Operating System", "RAM", "Hard Drive", "Processor", "Graphics Coprocessor",
                   "Wireless Type", "Computer Memory Type", "Memory Storage Capacity", "Hardware Platform"]
CAMERA_FIELDS = ["Lens Type", "Video Capture Resolution", "Water Resistance Level"]
CROSS_FIELDS = ["Power Source", "Recommended Uses For Product"]
OFFICE_FIELDS = ["Ink Color", "Shape", "Sheet Size", "Closure", "Point Type"]

# The 43 candidate detail keys, in the original's order.
DETAIL_FIELDS: list[str] = (GENERAL_FIELDS + BEAUTY_FIELDS + ELECTRONICS_FIELDS + COMPUTER_FIELDS
                            + CAMERA_FIELDS + CROSS_FIELDS + OFFICE_FIELDS)

# Raw spelling found in Amazon metadata -> canonical key (read when the canonical key is missing).
FIELD_NAME_ALIASES: dict[str, str] = {
    "Special features": "Special Feature",
    "Material Type": "Material",
    "Standing screen display size": "Screen Size",
    "Connectivity technologies": "Connectivity Technology",
    "Number Of Items": "Number of Items",
    "OS": "Operating System",
    "Ram Memory Installed Size": "RAM",
    "Wireless Communication Technology": "Wireless Type",
    "Processor Brand": "Processor",
}

ALIASES_BY_CANONICAL: dict[str, list[str]] = {}
for _raw, _canon in FIELD_NAME_ALIASES.items():
    ALIASES_BY_CANONICAL.setdefault(_canon, []).append(_raw)

NEGATIVE_ATTRIBUTE_FIELDS = frozenset([
    "Brand", "Color", "Material", "Style", "Item Form", "Hair Type", "Skin Type", "Scent", "Finish Type",
    "Product Benefits", "Material Feature", "Form Factor", "Connectivity Technology", "Connector Type",
    "Pattern", "Mounting Type", "Shell Type", "Operating System", "Wireless Type", "Power Source",
    "Ink Color", "Shape", "Closure", "Point Type"])

MULTI_OPTION_FIELDS = frozenset([
    "Material", "Color", "Style", "Item Form", "Hair Type", "Skin Type", "Scent", "Finish Type",
    "Product Benefits", "Material Feature", "Form Factor", "Connectivity Technology", "Connector Type",
    "Compatible Devices", "Compatible Phone Models", "Pattern", "Ink Color", "Recommended Uses For Product",
    "Power Source", "Wireless Type", "Computer Memory Type"])

WEAK_METADATA_FIELDS = frozenset([
    "Material Feature", "Style", "Finish Type", "Special Feature", "Product Benefits", "Pattern",
    "Mounting Type", "Recommended Uses For Product", "Hardware Platform"])

IMPLICIT_ELIGIBLE_FIELDS = frozenset([
    "Material", "Special Feature", "Style", "Skin Type", "Hair Type", "Item Form", "Product Benefits",
    "Finish Type", "Material Feature", "Scent", "Form Factor", "Connectivity Technology", "Connector Type",
    "Pattern", "Mounting Type", "Operating System", "RAM", "Hard Drive", "Processor", "Wireless Type",
    "Lens Type", "Power Source", "Recommended Uses For Product", "Ink Color"])

# The fields an intent may hide in the persona or in the clarification script (docs/original-harness.md §5.3);
# each intent drops or moves a few (ecab/construct/intents.py).
BASE_PERSONA_FIELDS = (
    "Brand", "Color", "Material", "Style", "Size", "Skin Type", "Hair Type", "Item Form", "Scent", "Form Factor",
    "Shell Type", "Compatible Devices", "Compatible Phone Models", "Operating System", "RAM", "Hard Drive",
    "Processor", "Wireless Type", "Memory Storage Capacity", "Lens Type", "Water Resistance Level",
    "Power Source")

BASE_CLARIFICATION_FIELDS = (
    "Special Feature", "Material Feature", "Product Benefits", "Finish Type", "Recommended Uses For Product",
    "Connectivity Technology", "Connector Type", "Pattern", "Mounting Type", "Screen Size",
    "Graphics Coprocessor", "Computer Memory Type", "Hardware Platform", "Video Capture Resolution", "Ink Color",
    "Shape", "Closure", "Point Type", "average_rating", "rating_number", "price")

# The detail fields EVERY intent may hide in the persona (resp. the clarification script): the synthetic
# generator's product lines vary in them (docs/decisions.md#adversaries), so that whichever intent a task
# gets, its hidden requirements are the line's axes. Brand is left out: a line is one brand's.
HIDEABLE_PERSONA_FIELDS = frozenset(BASE_PERSONA_FIELDS) - {
    "Brand", "Item Form", "Scent", "Compatible Phone Models", "Hard Drive", "Memory Storage Capacity"}
HIDEABLE_CLARIFICATION_FIELDS = frozenset(BASE_CLARIFICATION_FIELDS) - {
    "Hardware Platform", "average_rating", "rating_number", "price"}

RATING_NUMBER_BUCKETS = [10, 20, 50, 100, 200, 500, 1000, 2000, 5000]
PRICE_BUCKETS = [5, 10, 15, 20, 25, 30, 40, 50, 75, 100, 150, 200, 300, 500, 1000]

MIN_IMPLICIT_COUNT_BY_INTENT = {
    "knowledge_reasoning": 3, "use_case_scenario": 3, "feature_combination": 3,
    "product_search": 2, "rating_quality": 2, "coupon_budget": 2, "negative_constraint": 2,
    "review_driven": 2, "comparison_selection": 2,
}

INTENTS = ["product_search", "knowledge_reasoning", "rating_quality", "feature_combination",
           "negative_constraint", "use_case_scenario", "coupon_budget", "review_driven"]

SAFE_NOISE_FIELDS = {
    "demographics": ("gender", "age_range", "location", "occupation", "education_level"),
    "lifestyle": ("hobbies", "daily_routine", "fitness_level", "dietary_preference", "commute_method", "pets"),
    "shopping_habits": ("payment_method", "shopping_frequency", "preferred_device", "preferred_platform",
                        "return_frequency"),
}

PERSONA_FIELD_MAPPING = {
    "Brand": "brand_preference", "Color": "color_preference", "Material": "material_need",
    "Style": "style_preference", "Size": "size_preference", "Skin Type": "skin_type", "Hair Type": "hair_type",
    "Item Form": "form_preference", "Scent": "scent_preference", "Finish Type": "finish_preference",
    "Form Factor": "form_factor_preference", "Shell Type": "case_type_preference",
    "Compatible Devices": "device_compatibility", "Compatible Phone Models": "phone_model_compatibility",
    "Operating System": "os_preference", "RAM": "ram_requirement", "Hard Drive": "storage_preference",
    "Processor": "processor_preference", "Wireless Type": "wireless_preference",
    "Memory Storage Capacity": "storage_capacity_preference", "Lens Type": "lens_preference",
    "Water Resistance Level": "water_resistance_need", "Power Source": "power_source_preference",
    "price": "budget",
}


def persona_key(field: str) -> str:
    """The `product_requirements` key for a rubric field (bare name, `details.` stripped)."""
    bare = field.split(".", 1)[1] if field.startswith("details.") else field
    return PERSONA_FIELD_MAPPING.get(bare, bare.lower().replace(" ", "_"))


def present_fields(details: Mapping[str, Any] | None) -> frozenset[str]:
    """The canonical DETAIL_FIELDS with a non-empty value under any spelling, any case: the same answer as
    `lookup_detail(details, f) is not None` for every f, in one pass over the product's own keys."""
    if not details:
        return frozenset()
    return frozenset(canon for key, value in details.items()
                     if (canon := _DETAIL_FIELD_BY_LOWER.get(str(key).lower())) is not None and not _empty(value))


def canonical_field(key: str) -> str:
    """Canonical spelling of a detail key ("OS" -> "Operating System"); unknown keys pass through."""
    return FIELD_NAME_ALIASES.get(key, key)


def _empty(value: Any) -> bool:
    return value is None or value == "" or value == [] or value == {}


def _detail_field_by_lower() -> dict[str, str]:
    """Every lower-cased spelling (canonical or alias) of a DETAIL_FIELD -> that field."""
    table: dict[str, str] = {}
    for field in DETAIL_FIELDS:
        for spelling in (field, *ALIASES_BY_CANONICAL.get(field, [])):
            other = table.setdefault(spelling.lower(), field)
            assert other == field, f"detail spelling {spelling!r} names both {other!r} and {field!r}"
    return table


_DETAIL_FIELD_BY_LOWER = _detail_field_by_lower()


# Lower-cased spellings to look for, per requested field: built once per field name, not per call.
_WANTED_CACHE: dict[str, tuple[tuple[str, ...], frozenset[str]]] = {}


def _wanted(field: str) -> tuple[tuple[str, ...], frozenset[str]]:
    cached = _WANTED_CACHE.get(field)
    if cached is None:
        name = field.split(".", 1)[1] if field.startswith("details.") else field
        name = canonical_field(name)
        spellings = (name, *ALIASES_BY_CANONICAL.get(name, []))
        cached = _WANTED_CACHE[field] = (spellings, frozenset(k.lower() for k in spellings))
    return cached


def lookup_detail(details: Mapping[str, Any] | None, field: str) -> Any:
    """The value of detail `field` (canonical name, `details.` prefix allowed), alias-aware and
    case-insensitive; None when absent or empty. The canonical spelling wins over an alias.

    This sits on the hot path of construction, uniqueness counting and judging, so the exact-spelling
    probe comes first and the case-insensitive scan only runs when it misses.
    """
    if not details:
        return None
    spellings, lowered = _wanted(field)
    for key in spellings:
        value = details.get(key)
        if not _empty(value):
            return value
    found: dict[str, Any] = {}
    for key, value in details.items():
        low = str(key).lower()
        if low in lowered and not _empty(value) and low not in found:
            found[low] = value
    for key in spellings:
        if key.lower() in found:
            return found[key.lower()]
    return None
