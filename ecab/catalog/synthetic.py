"""The embedded default catalog: a deterministic generator of Amazon-Reviews-2023-shaped products and reviews.

What it makes, and why:
- Products look like the metadata of the paper's four categories (All_Beauty, Electronics,
  Cell_Phones_and_Accessories, Office_Products) with the `main_category` values seen in the released tasks
  (docs/original-harness.md §9): ASIN-like ids, Amazon-style titles, a store, a price that is null about 30% of the
  time, a rating, a heavy-tailed rating count, feature bullets, description paragraphs and a free-form
  `details` dict that mixes the canonical detail keys (ecab.fields.DETAIL_FIELDS), their raw alias
  spellings, and the noise keys real listings carry (Manufacturer, Best Sellers Rank, ...).
- Real values are messy, so some are: multi-valued ("Nylon, Silicone", "Black/Blue"), all caps,
  numeric-only, empty, non-English, or truncated long text ending in "See more"
  (docs/original-harness.md §5.4 cleaning).
- The catalog is hard on purpose: products come in FAMILIES of near-duplicates (same type, usually
  the same brand and store, similar titles) that differ in one or two detail values, so a target can
  not be found by its title alone.
- Reviews carry concrete, checkable opinions drawn from a per-type table (`OPINIONS_BY_TYPE`); each
  family member gets a partly different slice of that table, so review evidence can tell members apart.

Determinism: every family and every product draws from its own `random.Random`, seeded from sha256 of
the seed and its index (never Python's salted `hash`, never set iteration). Families are laid out from
index 0 on, so the output does not depend on `batch_size`, and the first k products of a catalog of
any size >= k are the same (prefix stability).
"""
from __future__ import annotations

import datetime
import hashlib
import math
import random
import re
from dataclasses import dataclass, field
from typing import Iterator

from ecab.catalog.base import CatalogBatch
from ecab.fields import (ALIASES_BY_CANONICAL, IMPLICIT_ELIGIBLE_FIELDS, MULTI_OPTION_FIELDS, PRICE_BUCKETS,
                         RATING_NUMBER_BUCKETS)
from ecab.schema import Product, Review

# Bump whenever the output for a given (n, seed) changes: it is part of the catalog fingerprint.
SYNTHETIC_VERSION = "3"   # 2: product lines (anchor, variants, spec leaves, white-label clone, re-listings)
                          # 3: most of a line's other listings drift on weight and dimensions and list
                          #    one more option on the multi-valued specs they share with the anchor;
                          #    a re-listing states its own package dimensions and weight

MAIN_CATEGORIES = ("Computers", "Cell Phones & Accessories", "All Electronics", "Amazon Home",
                   "Tools & Home Improvement", "Camera & Photo", "All Beauty", "Office Products")
SOURCE_CATEGORIES = ("All_Beauty", "Electronics", "Cell_Phones_and_Accessories", "Office_Products")

MAX_REVIEWS_PER_PRODUCT = 20  # the original review build caps at 20 (docs/original-harness.md §1.3)


@dataclass(frozen=True, eq=False)
class ProductType:
    """One kind of product: how it is named, categorised, priced, described and reviewed.

    `core` detail keys are on every product of the type, `optional` ones on some families. The value
    pools double as the alternatives that construction can exclude in negative constraints.
    """

    key: str                                   # "wireless_charger"
    entity: str                                # "wireless charger": the phrase every title contains
    title_noun: str                            # "Wireless Charger": how titles spell the entity
    source_category: str                       # one of SOURCE_CATEGORIES
    main_categories: tuple[tuple[str, float], ...]
    subcategory: str                           # Best Sellers Rank leaf and last `categories` entry
    price_range: tuple[float, float]
    brands: tuple[str, ...]
    core: dict[str, tuple[str, ...]]
    optional: dict[str, tuple[str, ...]]
    variants: tuple[str, ...]                  # primary variant key first, then secondary candidates
    title_attrs: tuple[str, ...]               # title fragments with {Key} placeholders
    keywords: tuple[str, ...]                  # marketing phrases for titles and bullet headers
    selling_points: tuple[str, ...]            # feature sentences with {Key}/{Brand}/{noun} placeholders
    positive: tuple[str, ...]                  # concrete review opinions, 3-10 words each
    negative: tuple[str, ...]
    extras: dict[str, tuple[str, ...]] = field(default_factory=dict)  # non-DETAIL_FIELDS spec keys
    heavy: bool = False                        # weight in pounds rather than ounces

    @property
    def value_pools(self) -> dict[str, tuple[str, ...]]:
        """Every canonical detail key of the type with its possible values."""
        return {**self.core, **self.optional}

    @property
    def detail_keys(self) -> tuple[str, ...]:
        return ("Brand", *self.core, *self.optional)


# ---------------------------------------------------------------------------------------------------------
# Shared value pools and brands
# ---------------------------------------------------------------------------------------------------------

_COLORS = ("Black", "White", "Silver", "Gray", "Blue", "Navy Blue", "Red", "Pink", "Rose Gold", "Green",
           "Purple", "Gold", "Beige", "Space Gray", "Black/Blue", "White/Gray")
_CASE_COLORS = ("Black", "Clear", "Navy Blue", "Pink", "Purple", "Red", "Midnight Green", "Lavender",
                "Rose Gold", "Sierra Blue", "White", "Black/Blue", "Clear/Glitter", "Mint Green")
_PHONE_MODELS = ("iPhone 15 Pro Max", "iPhone 15", "iPhone 14 Pro", "iPhone 13", "Samsung Galaxy S23 Ultra",
                 "Samsung Galaxy S22", "Samsung Galaxy A54", "Google Pixel 8 Pro", "Google Pixel 7a",
                 "OnePlus 11", "Motorola Moto G Power")
_PHONE_LISTS = ("iPhone 15, iPhone 14, iPhone 13", "Samsung Galaxy S23, Galaxy S22, Galaxy S21",
                "iPhone, Samsung Galaxy, Google Pixel", "Universal", "Google Pixel 8, Pixel 7",
                "iPhone 12, iPhone 12 Pro, iPhone 12 Pro Max")
_DEVICE_LISTS = ("Smartphones", "Smartphones, Tablets", "Smartphones, Earbuds, Smartwatches",
                 "Laptops, Smartphones, Tablets", "Smartphone, Tablet, Laptop")
_PC_DEVICES = ("PC, Mac", "Laptop, Desktop", "PC, Mac, Laptop", "Windows, Mac, Chromebook", "Personal Computer")
_BEAUTY_COLORS = ("Pink", "White", "Black", "Rose Gold", "Lavender", "Mint Green", "Beige", "Clear")
_OFFICE_COLORS = ("Black", "White", "Blue", "Pink", "Gray", "Green", "Mint", "Rose Gold", "Silver", "Red")

_CASE_BRANDS = ("Tekshield", "CaseNova", "ARMORIX", "Lumora", "BAIZRKE", "Shieldon", "Vexo", "Kuzzo",
                "Mr.Guard", "Zenicase", "OtterNest", "Qingduo")
_CHARGE_BRANDS = ("Voltrix", "Ampero", "Chargeon", "NOVAPOW", "Kissmart", "Zapcell", "Powerly", "TRPYD",
                  "Ecoamp", "Ankora", "Wattsy", "CableLovers")
_AUDIO_BRANDS = ("Soundora", "Echowave", "QUIETON", "Auralis", "Beatnix", "Sonique", "Vibe Lab", "Kordo",
                 "Zentune", "Ankora")
_COMPUTER_BRANDS = ("Nexbook", "Aerion", "Corsera", "Logibyte", "KEYMATE", "Trionic", "Vertexa", "Zyntek",
                    "Orbix", "Pixelio", "YMDK", "Kanexo")
_CAMERA_BRANDS = ("Optiva", "Lensora", "Campro", "ZOSIQ", "Snapix", "Aperix", "Trekcam", "Viewlux",
                  "Hawkeye Optics", "Orbix")
_BEAUTY_BRANDS = ("Glowessa", "Purelle", "Velvetine", "Aurabeau", "Rosewell", "Silkara", "Dermalux",
                  "Bloom & Bare", "Kiyomi", "Oliva Botanics", "Lumiere & Co")
_HAIR_BRANDS = ("Salonique", "Curlista", "Tressa", "Ionix Pro", "Maneology", "Purelle", "Rosewell", "Silkara")
_OFFICE_BRANDS = ("Inkora", "Scriptly", "Deskio", "Officio", "Penzo", "Notara", "Staplex", "Clipwell",
                  "Markwise", "Lumidesk", "Orgaroo", "Meliven")

_CELL = (("Cell Phones & Accessories", 1.0),)
_CELL_OR_ELEC = (("Cell Phones & Accessories", 0.6), ("All Electronics", 0.4))
_ELEC = (("All Electronics", 1.0),)
_COMPUTERS = (("Computers", 1.0),)
_CAMERA = (("Camera & Photo", 1.0),)
_BEAUTY = (("All Beauty", 1.0),)
_OFFICE = (("Office Products", 1.0),)


def _type(key: str, entity: str, title_noun: str, source: str, cats, subcategory: str, price, brands, *,
          core, optional, variants, title_attrs, keywords, points, positive, negative, extras=None,
          heavy=False) -> ProductType:
    return ProductType(key=key, entity=entity, title_noun=title_noun, source_category=source,
                       main_categories=cats, subcategory=subcategory, price_range=price, brands=brands,
                       core=core, optional=optional, variants=variants, title_attrs=title_attrs,
                       keywords=keywords, selling_points=points, positive=positive, negative=negative,
                       extras=extras or {}, heavy=heavy)


_CELL_SRC, _ELEC_SRC, _BEAUTY_SRC, _OFFICE_SRC = SOURCE_CATEGORIES[2], SOURCE_CATEGORIES[1], \
    SOURCE_CATEGORIES[0], SOURCE_CATEGORIES[3]

# ---------------------------------------------------------------------------------------------------------
# The product types (35). Core keys: 8 canonical DETAIL_FIELDS on every product, plus Brand.
# ---------------------------------------------------------------------------------------------------------

_TYPE_LIST: list[ProductType] = [
    # ---- Cell phones & accessories ------------------------------------------------------------------
    _type("phone_case", "phone case", "Phone Case", _CELL_SRC, _CELL, "Basic Cases", (6, 30), _CASE_BRANDS,
          core={"Color": _CASE_COLORS,
                "Material": ("Thermoplastic Polyurethane", "Silicone", "Polycarbonate", "Leather", "TPU",
                             "Vegan Leather", "Rubber"),
                "Compatible Phone Models": _PHONE_MODELS,
                "Form Factor": ("Basic Case", "Bumper", "Wallet", "Folio", "Rugged Case"),
                "Special Feature": ("Shockproof", "Slim Fit", "Kickstand", "Card Holder", "Drop Protection",
                                    "Wireless Charging Compatible", "MagSafe Compatible", "Anti-Yellowing",
                                    "Raised Edges"),
                "Shell Type": ("Hard Shell", "Soft Shell", "Hybrid"),
                "Pattern": ("Solid", "Marble", "Floral", "Glitter", "Cartoon", "Camouflage", "Geometric"),
                "Compatible Devices": ("Smartphone", "Cellphone")},
          optional={"Finish Type": ("Glossy", "Matte", "Frosted"),
                    "Water Resistance Level": ("Not Water Resistant", "Water Resistant"),
                    "Number of Items": ("1", "2"),
                    "Style": ("Modern", "Rugged", "Minimalist", "Cute")},
          variants=("Color", "Compatible Phone Models", "Pattern"),
          title_attrs=("for {Compatible Phone Models}", "{Color}", "{Material}", "{Pattern} Design"),
          keywords=("Shockproof", "Military Grade Drop Protection", "Slim Fit", "Anti-Scratch",
                    "Raised Bezel", "Wireless Charging Compatible", "Protective Cover", "Kickstand"),
          points=("Made of {Material} that absorbs shock from everyday drops.",
                  "Precise cutouts for the camera, speakers and charging port of the {Compatible Phone Models}.",
                  "Raised edges keep the screen and camera off flat surfaces.",
                  "The {Color} finish resists fingerprints and scratches.",
                  "Works with wireless chargers without removing the {noun}."),
          positive=("fits my phone snugly without any wobble", "buttons are easy to press through the case",
                    "survived several drops onto concrete", "the raised lip protects the camera lenses",
                    "still charges wirelessly with the case on", "the grip keeps it from sliding off tables",
                    "clear back has not yellowed after months", "slim enough to fit in jeans pockets",
                    "the kickstand holds the phone in landscape", "magnets hold firmly on my car mount"),
          negative=("the clear back turned yellow within weeks", "cutout for the charging port is too narrow",
                    "corners started cracking after a month", "collects lint and dust along the edges",
                    "buttons are stiff and hard to press", "too slippery to hold with one hand",
                    "the color faded quickly from daily use", "wireless charging stopped working with it on")),

    _type("screen_protector", "screen protector", "Screen Protector", _CELL_SRC, _CELL,
          "Cell Phone Screen Protectors", (5, 20), _CASE_BRANDS,
          core={"Material": ("Tempered Glass", "Thermoplastic Polyurethane", "Polyethylene Terephthalate",
                             "Hydrogel"),
                "Compatible Phone Models": _PHONE_MODELS,
                "Special Feature": ("9H Surface Hardness", "Scratch Resistant", "Anti-Fingerprint",
                                    "Bubble Free", "Case Friendly", "Privacy", "Anti Glare", "Blue Light Filter"),
                "Finish Type": ("Glossy", "Matte", "Clear"),
                "Compatible Devices": ("Cellphone", "Smartphone"),
                "Number of Items": ("1", "2", "3"),
                "Screen Size": ("6.1 Inches", "6.7 Inches", "6.4 Inches", "6.8 Inches", "5.8 Inches"),
                "Water Resistance Level": ("Water Repellent", "Not Water Resistant", "Waterproof")},
          optional={"Color": ("Clear", "Black", "Transparent"),
                    "Style": ("Full Coverage", "Case Friendly", "Privacy")},
          variants=("Compatible Phone Models", "Number of Items", "Finish Type"),
          title_attrs=("for {Compatible Phone Models}", "{Number of Items}-Pack", "{Material}",
                       "{Finish Type}"),
          keywords=("9H Hardness", "Case Friendly", "Bubble Free", "HD Clear", "Anti-Scratch",
                    "Easy Installation Frame", "Full Coverage", "Face ID Compatible"),
          points=("{Material} rated 9H protects against keys and scratches.",
                  "Cut for the {Compatible Phone Models} with room for most cases.",
                  "The installation frame lines it up in seconds with no bubbles.",
                  "{Finish Type} surface keeps touch response like the bare screen."),
          positive=("installed with zero bubbles using the alignment frame",
                    "face recognition still works perfectly through it",
                    "fingerprint sensor reads through it without issues",
                    "touch sensitivity feels like the bare screen",
                    "survived a drop that would have cracked my screen", "works fine with my case on",
                    "the matte finish really cuts down glare", "no rainbow effect in bright light",
                    "easy to clean fingerprints off with a cloth", "the edges do not lift over time"),
          negative=("edges started lifting after a few days", "bubbles along the edges never went away",
                    "the fingerprint sensor stopped recognizing me", "cracked from a short fall",
                    "too thick and makes the screen less responsive", "the alignment tool did not fit my phone",
                    "leaves a rainbow haze in sunlight", "privacy filter makes the screen too dark"),
          extras={"Item Hardness": ("9H",), "Screen Surface Description": ("Glossy", "Matte", "Smooth")}),

    _type("wireless_charger", "wireless charger", "Wireless Charger", _CELL_SRC, _CELL_OR_ELEC,
          "Cell Phone Wireless Chargers", (10, 60), _CHARGE_BRANDS,
          core={"Connectivity Technology": ("USB", "USB-C", "Qi Wireless"),
                "Connector Type": ("USB Type C", "Micro USB", "Wireless", "MagSafe"),
                "Compatible Phone Models": _PHONE_LISTS,
                "Compatible Devices": _DEVICE_LISTS,
                "Special Feature": ("Fast Charging", "Foldable", "LED Indicator", "Overheat Protection",
                                    "Case Friendly", "Magnetic", "Travel"),
                "Color": ("Black", "White", "Gray", "Blue", "Pink", "Walnut", "Marble White", "Green"),
                "Mounting Type": ("Tabletop Mount", "Desktop Stand", "Wall Mount"),
                "Power Source": ("AC Adapter", "USB", "Corded Electric")},
          optional={"Material": ("Aluminum", "ABS Plastic", "Silicone", "Tempered Glass"),
                    "Form Factor": ("Pad", "Stand", "3-in-1 Station"),
                    "Style": ("Modern", "Minimalist"),
                    "Shape": ("Round", "Square")},
          variants=("Color", "Form Factor", "Connector Type"),
          title_attrs=("for {Compatible Phone Models}", "{Color}", "{Form Factor}", "with {Connector Type} Cable"),
          keywords=("15W Fast Charging", "Qi-Certified", "Charging Station", "Charging Pad", "3 in 1",
                    "Magnetic", "Case Friendly", "Foldable"),
          points=("Charges through cases up to 5 mm thick at up to 15W.",
                  "Works with {Compatible Devices}.",
                  "Built-in overheat and foreign object protection keeps your phone safe.",
                  "Input: {Connector Type}; output up to 15W.",
                  "The {Color} finish blends into any nightstand or desk."),
          positive=("charges my phone standing up or lying down", "charges right through my thick case",
                    "the LED is dim enough for my nightstand", "stays cool even after charging overnight",
                    "charges my earbuds and watch at the same time", "the non-slip pad keeps my phone in place",
                    "fast charging works with my Samsung", "easy to find the sweet spot to start charging",
                    "the weighted base does not tip over", "silent, no coil whine at night"),
          negative=("the LED is too bright at night", "stops charging if the phone shifts slightly",
                    "gets hot enough to slow charging", "does not work through my wallet case",
                    "makes a faint buzzing noise while charging", "the cable is too short to reach my outlet",
                    "the phone keeps disconnecting and reconnecting", "charges much slower than a wired charger"),
          extras={"Wattage": ("5 watts", "7.5 watts", "10 watts", "15 watts"), "Total USB Ports": ("1",)}),

    _type("car_phone_mount", "car phone mount", "Car Phone Mount", _CELL_SRC, _CELL,
          "Cell Phone Automobile Cradles", (9, 40), _CHARGE_BRANDS[:6] + _CASE_BRANDS[:4],
          core={"Mounting Type": ("Air Vent Mount", "Dashboard Mount", "Windshield Mount", "Cup Holder Mount",
                                  "CD Slot Mount"),
                "Compatible Devices": ("Smartphones", "Smartphones, GPS"),
                "Compatible Phone Models": ("iPhone, Samsung Galaxy, Google Pixel", "Universal 4.7-6.9 inch Phones",
                                            "iPhone 15, iPhone 14, iPhone 13"),
                "Material": ("ABS", "Silicone", "Aluminum Alloy", "Metal"),
                "Color": ("Black", "Silver", "Gray", "Red", "Blue"),
                "Special Feature": ("360 Degree Rotation", "One-Hand Operation", "Magnetic", "Wireless Charging",
                                    "Auto Clamping", "Extendable Arm"),
                "Form Factor": ("Clamp", "Magnetic", "Cradle"),
                "Recommended Uses For Product": ("Car", "Truck", "Car, Truck, SUV")},
          optional={"Power Source": ("Not Required", "USB"), "Style": ("Modern", "Heavy Duty")},
          variants=("Mounting Type", "Color"),
          title_attrs=("{Mounting Type}", "for {Compatible Phone Models}", "{Color}"),
          keywords=("Hands-Free", "Strong Suction", "360 Rotation", "One-Touch Release", "Universal",
                    "Never Fall", "Military-Grade Grip"),
          points=("{Mounting Type} design keeps the phone at eye level.",
                  "Fits {Compatible Phone Models} with or without a case.",
                  "{Special Feature} for quick one-handed use while driving.",
                  "Sturdy {Material} build holds steady on rough roads."),
          positive=("holds my phone steady on bumpy roads", "easy to mount and release with one hand",
                    "the vent clip does not sag over time", "does not block the air vent airflow",
                    "the suction cup held for months in summer heat", "rotates easily between portrait and landscape",
                    "grips my phone even with a thick case", "fits my big phone with room to spare",
                    "leaves no marks on the dashboard", "the arm extends close enough to reach"),
          negative=("the phone rattles and shakes while driving", "suction cup falls off in hot weather",
                    "vent clip broke within a month", "blocks part of my dashboard screen",
                    "the clamp scratches the sides of my phone", "too wobbly to use the map while driving",
                    "the magnet is too weak for a heavy phone", "does not fit my round air vents")),

    _type("wall_charger", "wall charger", "Wall Charger", _CELL_SRC, _CELL_OR_ELEC, "Cell Phone Wall Chargers",
          (8, 50), _CHARGE_BRANDS,
          core={"Connectivity Technology": ("USB", "USB-C", "USB, USB-C"),
                "Connector Type": ("USB Type C", "USB Type A", "USB Type A, USB Type C", "Dual USB Type C",
                                   "USB Type C, Lightning"),
                "Compatible Devices": _DEVICE_LISTS,
                "Compatible Phone Models": _PHONE_LISTS,
                "Special Feature": ("Fast Charging", "Foldable Plug", "GaN", "Power Delivery", "Compact", "Travel"),
                "Color": ("White", "Black", "Gray", "Blue"),
                "Mounting Type": ("Wall Mount",),
                "Power Source": ("Corded Electric", "AC")},
          optional={"Number of Items": ("1", "2", "3"), "Material": ("ABS", "Polycarbonate"),
                    "Form Factor": ("Cube", "Compact")},
          variants=("Connector Type", "Color"),
          title_attrs=("{Connector Type}", "{Color}", "{Number of Items} Pack"),
          keywords=("Fast Charger", "PD 3.0", "GaN", "Charging Block", "Power Adapter", "Foldable Plug",
                    "Dual Port", "Travel Charger"),
          points=("GaN technology keeps the {noun} small and cool.",
                  "Charges {Compatible Devices} at full speed.",
                  "{Connector Type} ports with smart power allocation.",
                  "Foldable prongs make it easy to pack."),
          positive=("charges my phone from empty in an hour", "compact enough to take traveling",
                    "the foldable prongs save space in my bag", "charges my laptop and phone at once",
                    "stays cool while fast charging", "fits behind furniture without blocking outlets",
                    "both ports charge at full speed", "the plug stays firmly in loose outlets",
                    "no interference noise with my speakers", "still works perfectly after a year"),
          negative=("gets very hot while charging", "stopped working after three months",
                    "blocks the second outlet on the wall", "falls out of the wall socket easily",
                    "charges slower when both ports are used", "buzzes faintly when plugged in",
                    "the USB-C port became loose", "my laptop says it is a slow charger"),
          extras={"Wattage": ("20 watts", "30 watts", "35 watts", "45 watts", "65 watts", "100 watts"),
                  "Total USB Ports": ("1", "2", "3", "4"), "Input Voltage": ("120 Volts", "240 Volts")}),

    _type("power_bank", "power bank", "Power Bank", _CELL_SRC, _CELL_OR_ELEC, "Cell Phone Portable Power Banks",
          (15, 70), _CHARGE_BRANDS,
          core={"Connector Type": ("USB Type C", "Micro USB", "Lightning", "USB Type A, USB Type C"),
                "Connectivity Technology": ("USB", "USB-C", "Wireless"),
                "Compatible Devices": _DEVICE_LISTS,
                "Color": ("Black", "White", "Blue", "Pink", "Green", "Gray", "Purple"),
                "Special Feature": ("Fast Charging", "LED Display", "Built-in Cables", "Wireless Charging",
                                    "Slim", "Pass-Through Charging"),
                "Power Source": ("Battery Powered", "USB"),
                "Material": ("ABS", "Aluminum", "Polycarbonate"),
                "Form Factor": ("Slim", "Compact", "Portable")},
          optional={"Compatible Phone Models": _PHONE_LISTS,
                    "Recommended Uses For Product": ("Travel", "Camping", "Everyday Carry"),
                    "Number of Items": ("1", "2")},
          variants=("Color", "Connector Type"),
          title_attrs=("{Color}", "with {Connector Type}", "for {Compatible Phone Models}"),
          keywords=("10000mAh", "20000mAh", "Portable Charger", "Fast Charging", "LED Display",
                    "Battery Pack", "PD 20W"),
          points=("High-capacity cells charge a phone several times over.",
                  "{Connector Type} input and output for quick recharging.",
                  "The LED display shows the exact remaining battery.",
                  "Slim {Material} shell slides into a pocket or bag."),
          positive=("charges my phone almost three full times", "slim enough to slide into a pocket",
                    "the digital display shows exact percent left", "recharges itself overnight quickly",
                    "charges two devices at once without slowing", "holds its charge for weeks unused",
                    "allowed on my flight without issues", "the built-in cables mean no extra cords",
                    "light enough to carry hiking all day", "pass-through charging works while plugged in"),
          negative=("takes forever to recharge the power bank itself", "much heavier than it looks in pictures",
                    "capacity is far less than advertised", "gets warm when charging my phone",
                    "the indicator lights are inaccurate", "stopped holding a charge after a few months",
                    "the built-in cable broke at the joint", "turns off automatically while charging earbuds"),
          extras={"Battery Capacity": ("5000 Milliamp Hours", "10000 Milliamp Hours", "20000 Milliamp Hours",
                                       "26800 Milliamp Hours"), "Total USB Ports": ("2", "3")}),

    _type("smart_watch", "smart watch", "Smart Watch", _CELL_SRC, _CELL_OR_ELEC, "Smartwatches", (20, 250),
          _AUDIO_BRANDS[:5] + _COMPUTER_BRANDS[:4],
          core={"Operating System": ("Android", "iOS", "Android, iOS", "Wear OS", "Proprietary"),
                "Connectivity Technology": ("Bluetooth", "Bluetooth, Wi-Fi", "GPS, Bluetooth"),
                "Screen Size": ("1.3 Inches", "1.69 Inches", "1.78 Inches", "1.85 Inches", "1.96 Inches"),
                "Color": ("Black", "Silver", "Rose Gold", "Pink", "Navy Blue", "Green", "Gray", "White"),
                "Special Feature": ("Heart Rate Monitor", "Sleep Tracker", "Activity Tracker", "Pedometer",
                                    "Blood Oxygen", "GPS", "Waterproof"),
                "Compatible Devices": ("Smartphone", "Smartphones"),
                "Water Resistance Level": ("Water Resistant", "Waterproof", "IP68"),
                "Shape": ("Rectangular", "Round")},
          optional={"RAM": ("1 GB", "512 MB"), "Style": ("Modern", "Sport", "Classic"),
                    "Material": ("Aluminum", "Silicone", "Stainless Steel"), "Wireless Type": ("Bluetooth",),
                    "Power Source": ("Battery Powered",), "Age Range (Description)": ("Adult",)},
          variants=("Color", "Shape", "Screen Size"),
          title_attrs=("{Screen Size}", "{Color}", "for {Operating System}", "{Shape} Dial"),
          keywords=("Fitness Tracker", "Heart Rate Monitor", "Sleep Monitor", "IP68 Waterproof",
                    "Step Counter", "Blood Oxygen", "for Men Women", "Activity Tracker"),
          points=("{Screen Size} touch screen with adjustable brightness.",
                  "Tracks heart rate, sleep and steps all day.",
                  "Works with {Operating System} phones over {Connectivity Technology}.",
                  "{Water Resistance Level} design for workouts and rain."),
          positive=("battery lasts a full week between charges", "the screen is easy to read in sunlight",
                    "sleep tracking matches how I actually slept", "step count is accurate compared to my phone",
                    "notifications come through quickly from my phone", "comfortable enough to wear while sleeping",
                    "survived swimming laps in the pool", "heart rate readings match my chest strap",
                    "the magnetic charger snaps on easily", "setting up the app took five minutes"),
          negative=("battery drains in less than two days", "the band gave me a skin rash",
                    "heart rate readings jump around wildly", "loses bluetooth connection with my phone often",
                    "the screen is hard to read outdoors", "the app asks for too many permissions",
                    "counts steps while I am driving", "the charger falls off too easily"),
          extras={"Battery Power Rating": ("200 Milliamp Hours", "300 Milliamp Hours"),
                  "Human Interface Input": ("Touchscreen",)}),

    _type("usb_c_cable", "USB-C cable", "USB C Cable", _ELEC_SRC,
          (("All Electronics", 0.5), ("Cell Phones & Accessories", 0.3), ("Computers", 0.2)), "USB Cables",
          (5, 25), _CHARGE_BRANDS,
          core={"Connector Type": ("USB Type C", "USB Type A, USB Type C", "USB Type C, Lightning"),
                "Connectivity Technology": ("USB",),
                "Compatible Devices": _DEVICE_LISTS,
                "Color": ("Black", "White", "Gray", "Red", "Blue", "Black/Red"),
                "Material": ("Nylon Braided", "Thermoplastic Elastomer", "Nylon, Aluminum", "PVC"),
                "Special Feature": ("Fast Charging", "Data Sync", "100W Power Delivery", "Tangle Free", "Braided"),
                "Size": ("1 ft", "3.3 ft", "6 ft", "10 ft"),
                "Recommended Uses For Product": ("Charging", "Data Transfer", "Car", "Charging, Data Transfer")},
          optional={"Number of Items": ("1", "2", "3", "5"), "Compatible Phone Models": _PHONE_LISTS,
                    "Hardware Platform": ("PC, Mac, Android", "Laptop")},
          variants=("Size", "Color", "Number of Items"),
          title_attrs=("{Size}", "{Color}", "{Number of Items}-Pack", "{Material}"),
          keywords=("Fast Charging", "60W", "100W PD", "Braided", "Type C Charger Cord", "Data Sync",
                    "USB A to USB C"),
          points=("{Material} jacket survives thousands of bends.",
                  "Supports fast charging and data sync for {Compatible Devices}.",
                  "{Size} length reaches from the outlet to the couch.",
                  "Slim {Connector Type} heads fit through most cases."),
          positive=("the braided jacket has not frayed at all", "fast charges my phone and laptop",
                    "connectors fit snugly without wiggling", "long enough to reach my bed from the outlet",
                    "transfers files from my camera quickly", "still works after a year of daily bending",
                    "works with my car's charging port", "the cable does not tangle in my bag",
                    "charges my Nintendo Switch with no issues", "the connector fits through my phone case"),
          negative=("stopped charging after a few weeks", "the connector is loose and disconnects",
                    "the braid started fraying near the plug", "only charges slowly and will not transfer data",
                    "the plug housing is too wide for my case", "gets warm at the connector while charging",
                    "shorter than the advertised length", "my phone shows accessory not supported"),
          extras={"Data Transfer Rate": ("480 Megabits Per Second", "10 Gigabits Per Second"),
                  "Cable Type": ("USB", "Braided")}),

    # ---- Electronics ---------------------------------------------------------------------------------
    _type("bluetooth_earbuds", "bluetooth earbuds", "Bluetooth Earbuds", _ELEC_SRC,
          (("All Electronics", 0.7), ("Cell Phones & Accessories", 0.3)), "Earbud & In-Ear Headphones",
          (15, 150), _AUDIO_BRANDS,
          core={"Connectivity Technology": ("Bluetooth", "Bluetooth 5.3", "Wireless"),
                "Form Factor": ("In Ear", "Open Ear", "Ear Hook"),
                "Color": ("Black", "White", "Navy Blue", "Pink", "Gray", "Green", "Purple"),
                "Special Feature": ("Active Noise Cancellation", "Built-in Microphone", "Touch Control",
                                    "Sweatproof", "Wireless Charging Case"),
                "Compatible Devices": ("Smartphones, Tablets, Laptops", "Smartphones", "iPhone, Android"),
                "Water Resistance Level": ("IPX4", "IPX5", "IPX7", "Water Resistant"),
                "Wireless Type": ("Bluetooth",),
                "Recommended Uses For Product": ("Sports", "Running", "Gaming", "Travel", "Work")},
          optional={"Material": ("Plastic", "Silicone"), "Power Source": ("Battery Powered",),
                    "Style": ("Modern", "Sport"), "Age Range (Description)": ("Adult",)},
          variants=("Color", "Form Factor"),
          title_attrs=("{Color}", "{Form Factor}", "{Water Resistance Level} Waterproof"),
          keywords=("Wireless Earbuds", "Noise Cancelling", "Deep Bass", "40H Playtime", "Touch Control",
                    "with Charging Case", "Sports Headphones", "Built-in Mic"),
          points=("Bluetooth 5.3 pairs instantly when you open the case.",
                  "{Water Resistance Level} rating shrugs off sweat and rain.",
                  "{Form Factor} fit stays put during {Recommended Uses For Product}.",
                  "Up to 40 hours of playtime with the charging case."),
          positive=("stay in my ears during runs", "pair instantly when I open the case",
                    "the noise cancelling blocks out train noise", "callers say my voice sounds clear",
                    "battery lasts through a full workday", "bass is punchy without distorting",
                    "the case fits easily in my coin pocket", "touch controls respond reliably",
                    "comfortable to wear for hours", "no audio lag when watching videos"),
          negative=("the left earbud keeps disconnecting", "fall out of my ears when I jog",
                    "the case lid feels loose and flimsy", "touch controls trigger when I adjust them",
                    "callers complain about echo on calls", "battery life dropped after a few months",
                    "the charging case stopped charging one bud", "noticeable audio delay in games"),
          extras={"Noise Control": ("Active Noise Cancellation", "None", "Sound Isolation"),
                  "Battery Life": ("24 Hours", "30 Hours", "40 Hours")}),

    _type("headphones", "over-ear headphones", "Over-Ear Headphones", _ELEC_SRC, _ELEC, "Over-Ear Headphones",
          (20, 300), _AUDIO_BRANDS,
          core={"Connectivity Technology": ("Bluetooth", "Wired", "Bluetooth, Wired"),
                "Form Factor": ("Over Ear", "On Ear"),
                "Color": ("Black", "White", "Silver", "Navy Blue", "Beige", "Midnight Blue", "Rose Gold"),
                "Special Feature": ("Active Noise Cancellation", "Foldable", "Built-in Microphone", "Lightweight"),
                "Connector Type": ("3.5mm Jack", "USB Type C", "3.5mm Jack, USB Type C"),
                "Compatible Devices": ("Smartphones, Laptops, Tablets", "PC, Gaming Console", "Smartphones"),
                "Material": ("Protein Leather", "Plastic", "Memory Foam"),
                "Recommended Uses For Product": ("Travel", "Gaming", "Studio", "Office")},
          optional={"Wireless Type": ("Bluetooth",), "Power Source": ("Battery Powered",),
                    "Style": ("Modern", "Retro"), "Water Resistance Level": ("Not Water Resistant",)},
          variants=("Color", "Connectivity Technology"),
          title_attrs=("{Color}", "{Connectivity Technology}", "with {Special Feature}"),
          keywords=("Noise Cancelling", "Hi-Res Audio", "60H Playtime", "Foldable", "Deep Bass",
                    "Memory Foam Ear Cups", "Built-in Mic"),
          points=("{Material} ear cushions stay comfortable for hours.",
                  "Connect over {Connectivity Technology} to {Compatible Devices}.",
                  "Folds flat into the included travel case.",
                  "Balanced sound tuned for {Recommended Uses For Product}."),
          positive=("comfortable for long flights without ear fatigue",
                    "the noise cancelling silences airplane engines",
                    "battery lasts over a week of commuting", "fold flat into the included case",
                    "the microphone sounds clear on Zoom calls", "ear cushions stay cool for hours",
                    "bass is rich without muddying vocals", "switches between my laptop and phone easily",
                    "the wired mode works when battery dies", "clamping force is gentle on glasses"),
          negative=("the headband cracked after a few months", "ears get hot after an hour",
                    "sound leaks out at moderate volume", "the ear pads started peeling",
                    "too tight for people with glasses", "microphone picks up a lot of background noise",
                    "hissing noise when noise cancelling is on", "bluetooth drops when my phone is in my pocket")),

    _type("bluetooth_speaker", "bluetooth speaker", "Bluetooth Speaker", _ELEC_SRC, _ELEC,
          "Portable Bluetooth Speakers",
          (15, 200), _AUDIO_BRANDS,
          core={"Connectivity Technology": ("Bluetooth", "Bluetooth, AUX", "Bluetooth, Wi-Fi"),
                "Color": ("Black", "Blue", "Red", "Gray", "Teal", "Camo", "Orange", "White"),
                "Special Feature": ("Waterproof", "Stereo Pairing", "Built-in Microphone", "LED Lights", "Deep Bass"),
                "Water Resistance Level": ("IPX5", "IPX7", "IP67"),
                "Power Source": ("Battery Powered", "AC Adapter"),
                "Recommended Uses For Product": ("Outdoor", "Shower", "Party", "Home"),
                "Compatible Devices": ("Smartphones, Tablets, Laptops", "Smartphones"),
                "Mounting Type": ("Tabletop", "Strap", "Floor Standing")},
          optional={"Material": ("Fabric", "Silicone", "Aluminum"), "Form Factor": ("Portable", "Bookshelf"),
                    "Connector Type": ("USB Type C", "Micro USB"), "Shape": ("Cylindrical", "Round", "Rectangular")},
          variants=("Color", "Power Source"),
          title_attrs=("{Color}", "{Water Resistance Level} Waterproof", "for {Recommended Uses For Product}"),
          keywords=("Portable Wireless Speaker", "Loud Stereo Sound", "24H Playtime", "Deep Bass",
                    "TWS Pairing", "Outdoor Speaker", "RGB Lights"),
          points=("{Water Resistance Level} protection for the pool, beach and shower.",
                  "Pair two speakers for true stereo sound.",
                  "Up to 24 hours of playtime on one charge.",
                  "The strap clips onto bikes and backpacks."),
          positive=("loud enough to fill my backyard", "survived being dropped in the pool",
                    "the battery lasts all weekend camping", "pairs two speakers for real stereo",
                    "bass is surprisingly deep for its size", "the strap hooks easily onto my backpack",
                    "connects instantly to my phone every time", "sounds clear even at full volume",
                    "the shower mount suction cup holds well", "charges quickly over USB-C"),
          negative=("distorts badly at high volume", "the battery dies after a few hours",
                    "bluetooth cuts out beyond a few feet", "the power button is hard to press",
                    "makes a loud beep when turned on", "the rubber coating gets sticky",
                    "bass is weak and tinny", "the charging port cover broke off")),

    _type("laptop", "laptop", "Laptop", _ELEC_SRC, _COMPUTERS, "Traditional Laptop Computers", (250, 2200),
          _COMPUTER_BRANDS[:8],
          core={"Operating System": ("Windows 11 Home", "Windows 11 Pro", "Chrome OS", "Windows 10 Home", "macOS"),
                "RAM": ("4 GB", "8 GB", "16 GB", "32 GB"),
                "Hard Drive": ("128 GB eMMC", "256 GB SSD", "512 GB SSD", "1 TB SSD"),
                "Processor": ("Intel Core i5", "Intel Core i7", "AMD Ryzen 5", "AMD Ryzen 7", "Intel Celeron",
                              "Intel Core i3"),
                "Screen Size": ("13.3 Inches", "14 Inches", "15.6 Inches", "16 Inches", "17.3 Inches"),
                "Graphics Coprocessor": ("Intel UHD Graphics", "Intel Iris Xe Graphics", "NVIDIA GeForce RTX 3050",
                                         "AMD Radeon Graphics", "NVIDIA GeForce RTX 4060"),
                "Color": ("Silver", "Black", "Gray", "Blue", "Space Gray"),
                "Wireless Type": ("802.11ax", "802.11ac", "802.11ax, Bluetooth")},
          optional={"Computer Memory Type": ("DDR4 SDRAM", "DDR5 RAM", "LPDDR4X"),
                    "Special Feature": ("Backlit Keyboard", "Fingerprint Reader", "Touchscreen", "Anti Glare Screen"),
                    "Hardware Platform": ("PC", "Windows"),
                    "Connectivity Technology": ("Wi-Fi", "Bluetooth, Wi-Fi, USB")},
          variants=("RAM", "Hard Drive", "Color"),
          title_attrs=("{Screen Size}", "{Processor}", "{RAM} RAM", "{Hard Drive}", "{Operating System}", "{Color}"),
          keywords=("FHD Display", "Thin and Light", "Backlit Keyboard", "Fingerprint Reader", "Wi-Fi 6",
                    "Long Battery Life", "Business Laptop", "Student Laptop"),
          points=("{Processor} with {RAM} of memory handles everyday multitasking.",
                  "{Hard Drive} storage boots in seconds.",
                  "{Screen Size} anti-glare display for work and streaming.",
                  "Ships with {Operating System}."),
          positive=("boots up in a few seconds", "battery lasts a full school day",
                    "the keyboard is comfortable for long typing sessions", "runs my photo editing software smoothly",
                    "light enough to carry around campus", "the screen is bright and sharp",
                    "fans stay quiet during normal use", "handles dozens of browser tabs without slowing",
                    "the trackpad is smooth and responsive", "webcam is good enough for video calls"),
          negative=("the fan gets loud under light load", "battery barely lasts three hours",
                    "came with lots of preinstalled bloatware", "the screen wobbles when typing",
                    "the trackpad clicks are mushy", "runs hot on my lap",
                    "the speakers sound tinny and quiet", "the hinge loosened after a few months"),
          extras={"Number of USB 3.0 Ports": ("2", "3"), "Average Battery Life (in hours)": ("8 Hours", "10 Hours")},
          heavy=True),

    _type("keyboard", "keyboard", "Keyboard", _ELEC_SRC, _COMPUTERS, "Computer Keyboards", (15, 180),
          _COMPUTER_BRANDS,
          core={"Connectivity Technology": ("Bluetooth", "USB", "Bluetooth, USB", "2.4 GHz Wireless", "Wired"),
                "Compatible Devices": ("PC, Mac", "PC, Tablet", "Windows, Mac, iPad"),
                "Operating System": ("Windows", "Mac", "Windows, macOS", "Windows 10"),
                "Color": ("Black", "White", "Gray", "Pink", "Blue", "Beige", "Black/Gray"),
                "Special Feature": ("Backlit", "Quiet Keys", "Ergonomic", "Multi-Device", "Waterproof",
                                    "Hot Swappable"),
                "Style": ("Mechanical", "Membrane", "Low Profile"),
                "Material": ("Aluminum", "ABS", "Polybutylene Terephthalate"),
                "Power Source": ("Battery Powered", "USB", "Rechargeable Battery")},
          optional={"Form Factor": ("Full Size", "Tenkeyless", "Compact"),
                    "Recommended Uses For Product": ("Gaming", "Office", "Home"),
                    "Hardware Platform": ("PC", "Mac", "Laptop"),
                    "Connector Type": ("USB Type C", "USB Type A")},
          variants=("Color", "Connectivity Technology", "Form Factor"),
          title_attrs=("{Connectivity Technology}", "{Color}", "{Style}", "for {Compatible Devices}"),
          keywords=("Wireless Keyboard", "Mechanical Keyboard", "Quiet Typing", "Backlit", "Multi-Device",
                    "Full Size", "Rechargeable", "Ergonomic"),
          points=("{Style} keys with a quiet, consistent feel.",
                  "Connects over {Connectivity Technology} to {Compatible Devices}.",
                  "Works with {Operating System} layouts out of the box.",
                  "{Material} frame that does not flex while typing."),
          positive=("the keys are quiet enough for late-night typing", "switches between my three devices instantly",
                    "the backlight is even and adjustable", "battery lasts months between charges",
                    "typing feels crisp and responsive", "stays put on my desk without sliding",
                    "the keycap legends have not worn off", "pairs easily with my iPad",
                    "the wrist rest makes long typing comfortable", "no key chatter or double typing"),
          negative=("the space bar rattles loudly", "some keys register double letters",
                    "the backlight cannot be turned off", "bluetooth lags when waking from sleep",
                    "the keycaps feel cheap and shiny", "keys are too loud for an office",
                    "the feet are flimsy and broke off", "the battery drains in a week"),
          extras={"Number of Keys": ("61", "84", "87", "104", "108"),
                  "Keyboard Description": ("Mechanical", "Ergonomic", "Compact", "Silent")}),

    _type("mouse", "mouse", "Mouse", _ELEC_SRC, _COMPUTERS, "Computer Mice", (8, 90), _COMPUTER_BRANDS,
          core={"Connectivity Technology": ("Bluetooth", "2.4 GHz Wireless", "USB", "Bluetooth, 2.4 GHz"),
                "Color": ("Black", "White", "Gray", "Pink", "Blue", "Green", "Purple", "Red"),
                "Special Feature": ("Silent Click", "Ergonomic", "Rechargeable", "Adjustable DPI",
                                    "Programmable Buttons"),
                "Power Source": ("Battery Powered", "Rechargeable Battery", "USB"),
                "Compatible Devices": ("PC", "Mac", "Laptop", "PC, Mac, Laptop"),
                "Hardware Platform": ("PC", "Mac", "PC, Mac, Linux"),
                "Operating System": ("Windows", "Windows, macOS", "Windows, macOS, Chrome OS"),
                "Recommended Uses For Product": ("Office", "Gaming", "Travel", "Home")},
          optional={"Material": ("ABS Plastic", "Rubber"),
                    "Form Factor": ("Vertical", "Ambidextrous", "Right Handed", "Compact"),
                    "Wireless Type": ("Bluetooth", "Radio Frequency"), "Style": ("Modern", "Gaming")},
          variants=("Color", "Connectivity Technology"),
          title_attrs=("{Connectivity Technology}", "{Color}", "for {Compatible Devices}"),
          keywords=("Wireless Mouse", "Silent Click", "Ergonomic", "Rechargeable", "2400 DPI",
                    "USB Receiver", "Portable"),
          points=("Silent buttons cut click noise by 90%.",
                  "Connects via {Connectivity Technology} to {Compatible Devices}.",
                  "Contoured shape supports your hand during long days.",
                  "Adjustable DPI for precise tracking."),
          positive=("the clicks are nearly silent", "fits my large hand comfortably",
                    "the vertical grip eased my wrist pain", "tracks well on my glass desk",
                    "battery lasts months on one AA", "the scroll wheel is smooth and precise",
                    "the side buttons are easy to reach", "the USB receiver stores inside the mouse",
                    "connects instantly after waking", "lightweight enough for fast gaming"),
          negative=("the scroll wheel squeaks", "double clicks on a single press", "the cursor stutters on my desk",
                    "too small for my hand", "goes to sleep too quickly",
                    "the side buttons are easy to press by accident", "the coating gets sticky after months",
                    "disconnects when the receiver is on the back port"),
          extras={"Movement Detection Technology": ("Optical", "Laser"), "Number of Buttons": ("3", "6", "8")}),

    _type("monitor", "monitor", "Monitor", _ELEC_SRC, _COMPUTERS, "Computer Monitors", (90, 700),
          _COMPUTER_BRANDS[:8],
          core={"Screen Size": ("21.5 Inches", "24 Inches", "27 Inches", "32 Inches", "34 Inches"),
                "Color": ("Black", "White", "Silver"),
                "Special Feature": ("Eye Care", "Flicker-Free", "HDR", "Adaptive Sync", "Built-in Speakers",
                                    "Height Adjustable"),
                "Connectivity Technology": ("HDMI", "HDMI, DisplayPort", "HDMI, USB-C", "HDMI, VGA"),
                "Mounting Type": ("VESA Mount", "Tabletop", "Wall Mount"),
                "Hardware Platform": ("PC", "PC, Mac"),
                "Recommended Uses For Product": ("Gaming", "Office", "Home", "Photo Editing"),
                "Finish Type": ("Matte", "Glossy", "Anti-Glare")},
          optional={"Form Factor": ("Flat", "Curved"), "Compatible Devices": ("Laptop", "PC", "Gaming Console"),
                    "Connector Type": ("HDMI", "DisplayPort", "USB Type C")},
          variants=("Screen Size", "Connectivity Technology"),
          title_attrs=("{Screen Size}", "{Form Factor}", "{Connectivity Technology}", "{Color}"),
          keywords=("Full HD", "IPS", "75Hz", "144Hz", "Frameless", "Eye Care", "4K UHD", "Gaming Monitor"),
          points=("{Screen Size} IPS panel with wide viewing angles.",
                  "{Connectivity Technology} inputs for laptops and consoles.",
                  "Flicker-free backlight and low blue light mode.",
                  "{Mounting Type} compatible for flexible setups."),
          positive=("colors look accurate out of the box", "the stand adjusts to a comfortable height",
                    "no dead pixels on arrival", "text is crisp at its native resolution",
                    "gaming feels smooth at high refresh rate", "the thin bezels look great in a dual setup",
                    "easy on my eyes during long workdays", "plugging my laptop in with USB-C works great",
                    "the VESA mount fit my arm perfectly", "blacks look deep in dark rooms"),
          negative=("noticeable backlight bleed in the corners", "the stand wobbles when I type",
                    "the built-in speakers are very weak", "flickers when set to its max refresh rate",
                    "the menu buttons are hard to reach", "arrived with a dead pixel",
                    "colors look washed out from the side", "the power brick is huge"),
          extras={"Display Resolution Maximum": ("1920 x 1080", "2560 x 1440", "3840 x 2160"),
                  "Refresh Rate": ("60 Hz", "75 Hz", "144 Hz", "165 Hz"), "Aspect Ratio": ("16:9", "21:9")},
          heavy=True),

    _type("webcam", "webcam", "Webcam", _ELEC_SRC, (("Computers", 0.7), ("Camera & Photo", 0.3)), "Webcams",
          (18, 150), _COMPUTER_BRANDS[4:] + _CAMERA_BRANDS[:3],
          core={"Video Capture Resolution": ("720p", "1080p", "2K", "4K"),
                "Connectivity Technology": ("USB", "USB-C"),
                "Connector Type": ("USB Type A", "USB Type C"),
                "Compatible Devices": _PC_DEVICES,
                "Operating System": ("Windows", "Windows, macOS", "Windows, macOS, Chrome OS"),
                "Special Feature": ("Auto Focus", "Privacy Cover", "Built-in Microphone", "Low Light Correction",
                                    "Ring Light"),
                "Color": ("Black", "White", "Gray"),
                "Mounting Type": ("Clip Mount", "Tripod Mount", "Monitor Mount")},
          optional={"Hardware Platform": ("PC", "Mac"), "Lens Type": ("Wide Angle", "Fixed Focus"),
                    "Power Source": ("USB",),
                    "Recommended Uses For Product": ("Video Conferencing", "Streaming", "Online Classes")},
          variants=("Video Capture Resolution", "Color"),
          title_attrs=("{Video Capture Resolution}", "with {Special Feature}", "{Color}"),
          keywords=("HD Webcam", "with Microphone", "Privacy Cover", "Auto Focus", "Plug and Play",
                    "for Video Calls", "Streaming Camera"),
          points=("{Video Capture Resolution} video with automatic light correction.",
                  "Dual microphones pick up your voice from across the desk.",
                  "Plug and play over {Connectivity Technology} on {Operating System}.",
                  "{Mounting Type} fits laptops and monitors."),
          positive=("the picture is sharp in my video calls", "autofocus keeps my face in focus",
                    "handles low light in my dim office", "the privacy cover slides easily",
                    "the microphone picks up my voice clearly", "clips firmly onto my laptop screen",
                    "plug and play with no drivers needed", "colors look natural without tweaking",
                    "the wide angle fits three people in frame", "works with Zoom and Teams without issues"),
          negative=("the image is grainy in low light", "autofocus keeps hunting back and forth",
                    "the microphone sounds muffled", "the clip does not fit thick monitors",
                    "the cable is too short for my desk", "colors look washed out",
                    "overheats after long meetings", "the frame rate drops in dim rooms")),

    _type("usb_hub", "USB hub", "USB Hub", _ELEC_SRC, _COMPUTERS, "USB Hubs", (10, 80), _COMPUTER_BRANDS,
          core={"Connectivity Technology": ("USB", "USB-C", "Thunderbolt"),
                "Connector Type": ("USB Type C", "USB Type A", "USB Type C, HDMI, SD Card"),
                "Compatible Devices": _PC_DEVICES,
                "Hardware Platform": ("PC", "Mac", "Laptop, PC, Mac"),
                "Color": ("Silver", "Space Gray", "Black", "Gray"),
                "Material": ("Aluminum", "ABS"),
                "Special Feature": ("4K HDMI", "100W Power Delivery", "SD Card Reader", "Ethernet Port",
                                    "Plug and Play"),
                "Operating System": ("Windows", "macOS", "Windows, macOS, Linux")},
          optional={"Power Source": ("USB", "AC Adapter", "Bus Powered"), "Form Factor": ("Compact", "Dock"),
                    "Mounting Type": ("Desktop", "Portable")},
          variants=("Color", "Connector Type"),
          title_attrs=("{Connector Type}", "{Color}", "for {Compatible Devices}"),
          keywords=("7-in-1", "USB C Hub", "Multiport Adapter", "4K HDMI", "100W PD", "Docking Station",
                    "Aluminum"),
          points=("Adds HDMI, USB and card reader ports to {Compatible Devices}.",
                  "{Material} shell dissipates heat during long transfers.",
                  "Pass-through charging keeps your laptop powered.",
                  "Plug and play on {Operating System}."),
          positive=("drives my 4K monitor without flicker", "passes through enough power to charge my laptop",
                    "all ports work at the same time", "the aluminum body stays cool", "the SD card reader is fast",
                    "small enough to leave in my laptop bag", "ethernet port gives me a stable connection",
                    "recognized instantly by my MacBook", "the cable is long enough for my setup",
                    "external drives transfer at full speed"),
          negative=("gets very hot during use", "the HDMI port only outputs 30Hz", "drives disconnect randomly",
                    "the built-in cable is too short", "interferes with my wireless mouse",
                    "stopped working after a few months", "charging my laptop through it is slow",
                    "the ports are too tightly spaced"),
          extras={"Total USB Ports": ("4", "7", "10"), "Data Transfer Rate": ("5 Gbps", "10 Gbps")}),

    _type("external_ssd", "external SSD", "External SSD", _ELEC_SRC, _COMPUTERS, "External Solid State Drives",
          (45, 300), _COMPUTER_BRANDS[:6] + _CAMERA_BRANDS[:2],
          core={"Memory Storage Capacity": ("500 GB", "1 TB", "2 TB", "4 TB"),
                "Connectivity Technology": ("USB 3.2", "USB-C", "Thunderbolt 3"),
                "Connector Type": ("USB Type C", "USB Type C, USB Type A"),
                "Hardware Platform": ("PC", "Mac", "PC, Mac, PS5"),
                "Color": ("Black", "Gray", "Blue", "Red", "Silver"),
                "Special Feature": ("Shock Resistant", "Hardware Encryption", "Water Resistant",
                                    "Password Protection"),
                "Compatible Devices": ("Laptop, Desktop, Gaming Console", "Laptop", "PC, Mac, Smartphone"),
                "Form Factor": ("Portable", "2.5 Inch")},
          optional={"Operating System": ("Windows, macOS", "Windows"),
                    "Material": ("Aluminum", "Plastic", "Rubber"),
                    "Water Resistance Level": ("IP55", "IP65", "Not Water Resistant")},
          variants=("Memory Storage Capacity", "Color"),
          title_attrs=("{Memory Storage Capacity}", "{Color}", "{Connectivity Technology}"),
          keywords=("Portable SSD", "Up to 1050MB/s", "USB 3.2 Gen 2", "Rugged", "for PS5", "for Mac",
                    "Solid State Drive"),
          points=("Read speeds up to 1050 MB/s over {Connectivity Technology}.",
                  "{Memory Storage Capacity} for photos, videos and games.",
                  "Works with {Hardware Platform} out of the box.",
                  "Drop resistant up to 2 meters."),
          positive=("transfers large video files in seconds", "small enough to fit in a coin pocket",
                    "survived a drop from my desk", "works with both my Mac and PC",
                    "stays cool during long transfers", "games load much faster from it",
                    "came formatted and ready to use", "the rubber shell feels rugged",
                    "backups finish much faster than my old drive", "the short cable keeps my setup tidy"),
          negative=("write speeds drop on large files", "gets hot during long transfers",
                    "the included cable is too short", "disconnects randomly from my laptop",
                    "the encryption software is confusing", "real capacity is less than advertised",
                    "stopped being recognized after a month", "the case scratches easily"),
          extras={"Hard Disk Interface": ("USB 3.2 Gen 2", "USB 3.1"),
                  "Read Speed": ("1050 Megabytes Per Second", "2000 Megabytes Per Second",
                                 "540 Megabytes Per Second")}),

    _type("action_camera", "action camera", "Action Camera", _ELEC_SRC, _CAMERA, "Action Cameras", (40, 400),
          _CAMERA_BRANDS,
          core={"Video Capture Resolution": ("4K", "5.3K", "1080p", "2.7K"),
                "Water Resistance Level": ("Waterproof", "Waterproof up to 33 ft", "Water Resistant"),
                "Connectivity Technology": ("Wi-Fi", "Wi-Fi, Bluetooth", "USB"),
                "Screen Size": ("2 Inches", "2.27 Inches", "1.4 Inches"),
                "Color": ("Black", "Silver", "Blue", "Red", "Gray", "White"),
                "Special Feature": ("Image Stabilization", "Dual Screen", "Voice Control", "Time Lapse",
                                    "Slow Motion"),
                "Lens Type": ("Wide Angle", "Fisheye", "Ultra Wide"),
                "Power Source": ("Battery Powered",)},
          optional={"Memory Storage Capacity": ("32 GB", "64 GB"),
                    "Recommended Uses For Product": ("Diving", "Cycling", "Vlogging", "Travel"),
                    "Mounting Type": ("Helmet Mount", "Handlebar Mount", "Tripod Mount"),
                    "Form Factor": ("Compact",)},
          variants=("Color", "Video Capture Resolution"),
          title_attrs=("{Video Capture Resolution}", "{Water Resistance Level}", "{Color}"),
          keywords=("Underwater Camera", "EIS Stabilization", "Dual Screen", "Helmet Camera",
                    "with Accessories Kit", "Vlog Camera", "Wi-Fi Remote"),
          points=("Records {Video Capture Resolution} video with electronic stabilization.",
                  "{Water Resistance Level} without a housing.",
                  "{Lens Type} lens captures the whole scene.",
                  "Comes with mounts for helmets, bikes and tripods."),
          positive=("stabilization keeps bike footage smooth", "survived snorkeling without a housing",
                    "the front screen makes vlogging easy", "footage looks sharp in daylight",
                    "the battery lasts a long hike", "mounts easily on my helmet",
                    "voice commands work even with wind", "the app transfers clips quickly",
                    "time lapse mode is easy to set up", "feels tough enough for skiing falls"),
          negative=("footage is noisy in low light", "the battery drains in under an hour",
                    "overheats when recording 4K", "the app keeps disconnecting", "audio is muffled with the case on",
                    "the touchscreen is unresponsive when wet", "the lens fogs up in cold water",
                    "the mounts feel flimsy")),

    _type("camera_lens", "camera lens", "Camera Lens", _ELEC_SRC, _CAMERA, "Camera Lenses", (80, 1500),
          _CAMERA_BRANDS,
          core={"Lens Type": ("Standard", "Telephoto", "Wide Angle", "Macro", "Prime", "Zoom"),
                "Mounting Type": ("Canon EF", "Nikon F", "Sony E", "Fujifilm X", "Micro Four Thirds", "Canon RF"),
                "Color": ("Black", "Silver"),
                "Special Feature": ("Image Stabilization", "Weather Sealed", "Autofocus", "Manual Focus"),
                "Material": ("Aluminum", "Metal", "Plastic", "Glass"),
                "Recommended Uses For Product": ("Portrait", "Landscape", "Wildlife", "Sports", "Macro Photography"),
                "Water Resistance Level": ("Weather Resistant", "Not Water Resistant"),
                "Form Factor": ("Full Frame", "APS-C", "Mirrorless")},
          optional={"Compatible Devices": ("Mirrorless Cameras", "DSLR Cameras"), "Style": ("Prime Lens", "Zoom Lens")},
          variants=("Mounting Type", "Color"),
          title_attrs=("for {Mounting Type} Mount", "{Lens Type}", "{Color}"),
          keywords=("50mm f/1.8", "85mm f/1.4", "18-55mm", "70-300mm", "Autofocus", "Portrait Lens",
                    "Full Frame"),
          points=("{Lens Type} optics with low-dispersion glass.",
                  "Quiet stepping motor for smooth autofocus in video.",
                  "{Material} barrel with a {Mounting Type} mount.",
                  "Ideal for {Recommended Uses For Product}."),
          positive=("autofocus is fast and nearly silent", "sharp edge to edge even wide open",
                    "the background blur is creamy and smooth", "stabilization lets me shoot handheld at night",
                    "the focus ring feels smooth and precise", "light enough to carry all day",
                    "no visible distortion on architecture shots", "handles backlit scenes without flare",
                    "the weather sealing survived a rainstorm", "fits my camera body without an adapter"),
          negative=("autofocus hunts in low light", "noticeable purple fringing on high contrast edges",
                    "the zoom ring is stiff", "corners are soft at wide apertures",
                    "the lens creeps when pointed down", "too heavy for my small camera",
                    "the lens hood pops off easily", "autofocus is noisy in video"),
          extras={"Focal Length Description": ("50 mm", "85 mm", "18-55 mm", "70-300 mm", "24-70 mm"),
                  "Maximum Aperture": ("1.8 f", "2.8 f", "4 f")}),

    _type("tripod", "tripod", "Tripod", _ELEC_SRC, _CAMERA, "Complete Tripod Units", (15, 150), _CAMERA_BRANDS,
          core={"Material": ("Aluminum", "Carbon Fiber", "Aluminum Alloy"),
                "Color": ("Black", "Gray", "Silver", "Blue", "Red"),
                "Mounting Type": ("1/4 Inch Screw", "Quick Release Plate"),
                "Compatible Devices": ("Cameras", "Smartphones", "Cameras, Smartphones, Projectors"),
                "Special Feature": ("Lightweight", "Adjustable Height", "Ball Head", "Bluetooth Remote", "Foldable"),
                "Recommended Uses For Product": ("Photography", "Vlogging", "Travel", "Live Streaming"),
                "Form Factor": ("Tabletop", "Full Size", "Monopod Convertible"),
                "Size": ("50 Inch", "60 Inch", "67 Inch", "72 Inch")},
          optional={"Connectivity Technology": ("Bluetooth",), "Style": ("Travel", "Professional")},
          variants=("Size", "Color"),
          title_attrs=("{Size}", "{Material}", "{Color}", "for {Compatible Devices}"),
          keywords=("Camera Tripod", "Phone Tripod", "with Remote", "Travel Tripod", "Lightweight",
                    "360 Panorama Ball Head", "Monopod"),
          points=("{Material} legs extend to {Size} and fold compactly.",
                  "Quick release plate swaps cameras in seconds.",
                  "Includes a phone holder and a Bluetooth remote.",
                  "Bubble level for straight horizons."),
          positive=("sets up in under a minute", "holds my heavy camera without drooping",
                    "folds small enough for my carry-on", "the legs lock firmly at every height",
                    "the ball head pans smoothly", "the bluetooth remote works from across the room",
                    "the phone clamp grips securely", "stays stable in light wind",
                    "the bubble level helps keep shots straight", "converts to a monopod in seconds"),
          negative=("the legs slip under heavy gear", "the phone holder broke quickly",
                    "wobbles when fully extended", "the quick release plate loosens", "the leg locks are hard to open",
                    "too short for standing shots", "the bluetooth remote stopped pairing",
                    "the center column twists on its own"),
          extras={"Maximum Height": ("50 Inches", "60 Inches", "67 Inches"),
                  "Load Capacity": ("8.8 Pounds", "17.6 Pounds")},
          heavy=True),

    _type("security_camera", "security camera", "Security Camera", _ELEC_SRC,
          (("Camera & Photo", 0.6), ("Tools & Home Improvement", 0.4)), "Dome Surveillance Cameras", (25, 200),
          _CAMERA_BRANDS,
          core={"Connectivity Technology": ("Wi-Fi", "Wireless", "Wired", "PoE"),
                "Video Capture Resolution": ("1080p", "2K", "4K"),
                "Power Source": ("Battery Powered", "Solar Powered", "Corded Electric", "AC/DC"),
                "Special Feature": ("Night Vision", "Motion Sensor", "Two-Way Audio", "Color Night Vision",
                                    "Spotlight"),
                "Mounting Type": ("Wall Mount", "Ceiling Mount", "Tabletop"),
                "Recommended Uses For Product": ("Home Security", "Baby Monitor", "Pet Monitor", "Surveillance",
                                                 "Outdoor"),
                "Color": ("White", "Black"),
                "Water Resistance Level": ("IP65", "IP66", "Weatherproof", "Not Water Resistant")},
          optional={"Style": ("Bullet", "Dome", "Pan-Tilt"), "Compatible Devices": ("Smartphone", "Alexa"),
                    "Lens Type": ("Wide Angle",)},
          variants=("Power Source", "Video Capture Resolution"),
          title_attrs=("{Video Capture Resolution}", "{Connectivity Technology}", "{Power Source}"),
          keywords=("Outdoor Camera", "Home Security", "Night Vision", "Motion Detection", "2-Way Audio",
                    "Works with Alexa", "No Monthly Fee"),
          points=("{Video Capture Resolution} video with {Special Feature}.",
                  "Instant motion alerts sent to your phone.",
                  "{Water Resistance Level} housing for indoor and outdoor use.",
                  "{Power Source} with easy {Mounting Type}."),
          positive=("night vision shows faces clearly in the dark", "motion alerts arrive on my phone instantly",
                    "setup took ten minutes with the app", "the battery lasts months between charges",
                    "the two-way audio is clear enough to talk", "keeps working through rain and snow",
                    "the spotlight scares off raccoons", "video is sharp enough to read license plates",
                    "records locally without a subscription", "the pan feature covers my whole yard"),
          negative=("constant false motion alerts from trees", "disconnects from wifi every few days",
                    "night vision is blurry past ten feet", "the app requires a subscription for clips",
                    "battery drains fast in cold weather", "notifications arrive minutes late",
                    "the mount is flimsy and sags", "audio sounds garbled and delayed")),

    # ---- Beauty --------------------------------------------------------------------------------------
    _type("face_mask_brush", "face mask brush", "Face Mask Brush", _BEAUTY_SRC, _BEAUTY, "Face Mask Brushes",
          (4, 15), _BEAUTY_BRANDS,
          core={"Material": ("Silicone", "Nylon", "Nylon, Silicone", "Synthetic"),
                "Skin Type": ("All", "Sensitive", "Oily", "Dry"),
                "Item Form": ("Cream", "Gel", "Clay"),
                "Recommended Uses For Product": ("Salon", "Home", "Travel", "Facial Mask"),
                "Material Feature": ("Natural", "BPA Free", "Reusable", "Cruelty Free"),
                "Age Range (Description)": ("Adult",),
                "Color": _BEAUTY_COLORS,
                "Number of Items": ("1", "2", "3", "5")},
          optional={"Special Feature": ("Dual-Sided", "Soft Bristles", "Easy to Clean"),
                    "Shape": ("Flat", "Angled"), "Style": ("Classic", "Mini")},
          variants=("Color", "Number of Items"),
          title_attrs=("{Number of Items} Pieces", "{Material}", "{Color}"),
          keywords=("Dual-sided", "Facial Mud Clay Applicator", "Beauty Tool", "for Foundation",
                    "Mask Applicator", "Soft Bristles"),
          points=("{Material} head spreads masks evenly with less waste.",
                  "Suits {Skin Type} skin and {Item Form} products.",
                  "Easy to rinse and quick to dry.",
                  "Great for {Recommended Uses For Product} use."),
          positive=("spreads clay mask evenly without waste", "the silicone side is easy to rinse clean",
                    "bristles are soft on my sensitive skin", "keeps my fingers clean while applying masks",
                    "the bristles do not shed", "dries quickly after washing",
                    "the handle is easy to grip with wet hands", "works great for applying body lotion",
                    "the spatula end scoops product neatly", "small enough for my travel bag"),
          negative=("the bristles started shedding after a few uses", "the silicone side is too floppy",
                    "the handle snapped after a month", "bristles absorb too much product",
                    "has a strong chemical smell", "too small to cover my face quickly",
                    "mask residue gets stuck in the bristles", "the bristles feel scratchy"),
          extras={"Number of Pieces": ("1", "2", "3", "5"), "Ferrule Material": ("Aluminum",)}),

    _type("face_cream", "face cream", "Face Cream", _BEAUTY_SRC, _BEAUTY, "Face Moisturizers", (8, 60),
          _BEAUTY_BRANDS,
          core={"Skin Type": ("Dry", "Oily", "Combination", "Sensitive", "All", "Normal"),
                "Item Form": ("Cream", "Gel", "Lotion", "Balm"),
                "Product Benefits": ("Hydrating", "Anti-Aging", "Brightening", "Firming", "Soothing",
                                     "Moisturizing, Anti-Aging"),
                "Scent": ("Unscented", "Fragrance Free", "Rose", "Lavender", "Citrus"),
                "Material Feature": ("Natural", "Vegan", "Cruelty Free", "Organic", "Paraben Free"),
                "Special Feature": ("Non-Comedogenic", "Hyaluronic Acid", "SPF 30", "Retinol", "Ceramides"),
                "Age Range (Description)": ("Adult",),
                "Size": ("0.5 Fl Oz", "1 Fl Oz", "1.7 Fl Oz", "2 Fl Oz", "3.4 Fl Oz")},
          optional={"Recommended Uses For Product": ("Face", "Face and Neck", "Night"),
                    "Finish Type": ("Matte", "Dewy", "Natural"), "Number of Items": ("1", "2")},
          variants=("Size", "Scent"),
          title_attrs=("{Size}", "with {Special Feature}", "for {Skin Type} Skin", "{Scent}"),
          keywords=("Moisturizer", "Daily Face Moisturizer", "Anti Aging", "Hydrating", "Day and Night Cream",
                    "Dermatologist Tested", "Lightweight"),
          points=("{Item Form} formula with {Special Feature} for lasting hydration.",
                  "Made for {Skin Type} skin; {Material Feature}.",
                  "{Product Benefits} results in weeks.",
                  "{Scent} and free of harsh fillers."),
          positive=("absorbs quickly without a greasy film", "keeps my dry skin hydrated all day",
                    "no breakouts on my acne-prone skin", "layers well under makeup",
                    "the fragrance-free formula does not irritate", "a small amount covers my whole face",
                    "my skin looks plumper in the morning", "soothed redness after a few days",
                    "the pump dispenses just the right amount", "the jar lasts over two months"),
          negative=("leaves a greasy shine on my forehead", "caused small bumps on my cheeks",
                    "the scent is too strong for me", "pills under my foundation",
                    "the jar is mostly empty packaging", "burns on my sensitive skin",
                    "not moisturizing enough for winter", "the pump stopped working halfway"),
          extras={"Material Type Free": ("Paraben Free", "Sulfate Free", "Alcohol Free"),
                  "Unit Count": ("1.0 Count",)}),

    _type("shampoo", "shampoo", "Shampoo", _BEAUTY_SRC, _BEAUTY, "Hair Shampoo", (6, 40), _HAIR_BRANDS,
          core={"Hair Type": ("All", "Curly", "Fine", "Color Treated", "Dry", "Oily", "Damaged"),
                "Item Form": ("Liquid", "Bar", "Gel", "Foam"),
                "Scent": ("Unscented", "Coconut", "Lavender", "Tea Tree", "Argan", "Citrus", "Mint"),
                "Product Benefits": ("Volumizing", "Moisturizing", "Anti-Dandruff", "Color Protection",
                                     "Clarifying", "Strengthening"),
                "Material Feature": ("Sulfate Free", "Paraben Free", "Vegan", "Natural", "Silicone Free"),
                "Size": ("8 Fl Oz", "12 Fl Oz", "16 Fl Oz", "33.8 Fl Oz"),
                "Age Range (Description)": ("Adult", "Kid", "All Ages"),
                "Skin Type": ("Sensitive", "All", "Normal")},
          optional={"Special Feature": ("Salon Quality", "Color Safe", "pH Balanced"),
                    "Number of Items": ("1", "2"),
                    "Recommended Uses For Product": ("Daily Use", "Hair Loss", "Scalp Care")},
          variants=("Scent", "Size"),
          title_attrs=("{Scent}", "for {Hair Type} Hair", "{Size}", "{Material Feature}"),
          keywords=("Sulfate Free", "Moisturizing", "Volumizing", "Anti Dandruff", "Salon Formula",
                    "Daily Shampoo", "for Men and Women"),
          points=("{Product Benefits} formula for {Hair Type} hair.",
                  "{Material Feature} and gentle enough for daily use.",
                  "Light {Scent} scent that does not linger too long.",
                  "A {Size} bottle lasts for months."),
          positive=("leaves my hair soft without weighing it down", "lathers well even with a small amount",
                    "my dandruff cleared up in two weeks", "the scent lingers lightly all day",
                    "gentle enough for daily washing", "keeps my color from fading",
                    "my curls stay defined after washing", "scalp no longer feels itchy",
                    "rinses out completely without residue", "the bottle lasts over three months"),
          negative=("made my hair feel dry and straw-like", "the scent is overpowering", "barely lathers at all",
                    "left my scalp itchy and flaky", "the cap leaked in my luggage",
                    "made my hair greasy by the next day", "stripped color from my dyed hair",
                    "the formula is runny and watery"),
          extras={"Liquid Volume": ("8 Fluid Ounces", "12 Fluid Ounces", "16 Fluid Ounces")}),

    _type("hair_dryer", "hair dryer", "Hair Dryer", _BEAUTY_SRC, _BEAUTY, "Hair Dryers", (15, 200), _HAIR_BRANDS,
          core={"Hair Type": ("All", "Curly", "Thick", "Fine"),
                "Power Source": ("Corded Electric", "AC"),
                "Color": ("Black", "White", "Pink", "Rose Gold", "Purple", "Teal", "Gray"),
                "Special Feature": ("Ionic", "Foldable Handle", "Cool Shot", "Diffuser Included", "Ceramic",
                                    "Lightweight"),
                "Material": ("Plastic", "Ceramic", "Tourmaline"),
                "Recommended Uses For Product": ("Home", "Travel", "Salon"),
                "Age Range (Description)": ("Adult",),
                "Style": ("Compact", "Professional", "Travel")},
          optional={"Number of Items": ("1",), "Finish Type": ("Matte", "Glossy"),
                    "Product Benefits": ("Frizz Control", "Fast Drying", "Volume")},
          variants=("Color", "Style"),
          title_attrs=("{Color}", "{Style}", "with {Special Feature}"),
          keywords=("1875W", "Ionic Blow Dryer", "with Diffuser", "Fast Drying", "Low Noise",
                    "Negative Ion", "Travel Hair Dryer"),
          points=("{Material} technology dries {Hair Type} hair fast with less heat damage.",
                  "3 heat and 2 speed settings plus a cool shot.",
                  "Includes a concentrator and a diffuser.",
                  "{Style} design that is easy to hold."),
          positive=("dries my thick hair in ten minutes", "light enough to hold without arm fatigue",
                    "leaves my hair smooth without frizz", "the cool shot button sets my style",
                    "quiet enough to use while others sleep", "the diffuser keeps my curls defined",
                    "folds small for my travel bag", "the cord is long enough to reach the mirror",
                    "the attachments snap on firmly", "does not get too hot on the handle"),
          negative=("louder than my old dryer", "the attachments fall off while drying",
                    "smells like burning plastic", "the handle gets hot after a few minutes",
                    "too heavy for long drying sessions", "airflow is weak on high setting",
                    "stopped working after a few months", "the buttons are easy to bump accidentally"),
          extras={"Wattage": ("1200 watts", "1600 watts", "1875 watts"), "Number of Heat Settings": ("2", "3")}),

    _type("lipstick", "lipstick", "Lipstick", _BEAUTY_SRC, _BEAUTY, "Lipstick", (5, 40), _BEAUTY_BRANDS,
          core={"Color": ("Ruby Red", "Nude", "Berry", "Coral", "Mauve", "Pink Rose", "Plum", "Brick Red", "Cherry"),
                "Finish Type": ("Matte", "Satin", "Glossy", "Sheer", "Metallic"),
                "Item Form": ("Stick", "Liquid", "Crayon"),
                "Skin Type": ("All",),
                "Material Feature": ("Vegan", "Cruelty Free", "Natural"),
                "Product Benefits": ("Long Lasting", "Moisturizing", "Transfer Proof", "Hydrating"),
                "Special Feature": ("Long Wearing", "Waterproof", "Smudge Proof", "SPF"),
                "Age Range (Description)": ("Adult",)},
          optional={"Scent": ("Vanilla", "Unscented", "Mint"), "Number of Items": ("1", "3")},
          variants=("Color", "Finish Type"),
          title_attrs=("{Color}", "{Finish Type}", "{Item Form}"),
          keywords=("Long Lasting", "Matte Lipstick", "Highly Pigmented", "Moisturizing", "Non-Stick Cup",
                    "Waterproof", "Velvet"),
          points=("Highly pigmented {Finish Type} color in one swipe.",
                  "{Product Benefits} formula that wears for hours.",
                  "{Material Feature}; made without parabens.",
                  "The shade {Color} flatters most skin tones."),
          positive=("lasts through my morning coffee", "does not dry out my lips",
                    "the color matches the swatch online", "glides on smoothly in one swipe",
                    "does not transfer onto my mask", "the matte finish feels lightweight", "stays put through lunch",
                    "the shade flatters my skin tone", "no feathering around my lips", "the case clicks shut securely"),
          negative=("dries my lips and cracks by noon", "the shade is much darker than pictured",
                    "transfers onto every cup", "feels sticky and heavy", "the bullet broke off the first time",
                    "has a strong waxy smell", "settles into lip lines", "fades patchily within an hour")),

    _type("makeup_brush_set", "makeup brush set", "Makeup Brush Set", _BEAUTY_SRC, _BEAUTY, "Makeup Brush Sets",
          (8, 45), _BEAUTY_BRANDS,
          core={"Material": ("Synthetic", "Nylon", "Goat Hair", "Synthetic, Wood"),
                "Color": ("Rose Gold", "Black", "Pink", "White/Gold", "Marble", "Champagne", "Purple"),
                "Number of Items": ("5", "10", "12", "14", "16"),
                "Item Form": ("Powder", "Cream", "Liquid"),
                "Skin Type": ("All", "Sensitive"),
                "Material Feature": ("Cruelty Free", "Vegan", "Natural"),
                "Recommended Uses For Product": ("Foundation", "Blending", "Eyeshadow", "Contouring"),
                "Special Feature": ("Travel Case", "Dense Bristles", "Soft Bristles")},
          optional={"Age Range (Description)": ("Adult",), "Style": ("Professional", "Travel"),
                    "Shape": ("Round", "Angled", "Flat")},
          variants=("Color", "Number of Items"),
          title_attrs=("{Number of Items} Pcs", "{Color}", "{Material}"),
          keywords=("Premium Synthetic", "Foundation Brush", "Kabuki", "with Case", "Eyeshadow Brushes",
                    "Professional", "Blending"),
          points=("{Number of Items} brushes for face and eyes.",
                  "Soft {Material} bristles that do not shed.",
                  "{Material Feature} and suitable for {Skin Type} skin.",
                  "Comes with a {Color} travel pouch."),
          positive=("the bristles are dense and very soft", "blends foundation without streaks",
                    "no shedding even after washing", "the travel case keeps brushes organized",
                    "dries quickly after cleaning", "the handles feel sturdy and balanced",
                    "picks up just the right amount of powder", "the small brushes work great for eyeshadow",
                    "no strong odor out of the box", "the bristles keep their shape after washes"),
          negative=("bristles shed all over my face", "the glue came loose on a handle",
                    "the dye bled when I washed them", "the brushes are too scratchy",
                    "the case smells strongly of plastic", "the eyeshadow brushes are too big",
                    "the handles feel cheap and light", "bristles splayed after a few washes"),
          extras={"Handle Material": ("Wood", "Aluminum"), "Number of Pieces": ("5", "10", "14")}),

    _type("nail_polish", "nail polish", "Nail Polish", _BEAUTY_SRC, _BEAUTY, "Nail Polish", (4, 20),
          _BEAUTY_BRANDS,
          core={"Color": ("Cherry Red", "Nude Pink", "Navy", "Lilac", "Coral", "Black", "Glitter Gold",
                          "Mint", "Burgundy", "Sky Blue"),
                "Finish Type": ("Glossy", "Matte", "Glitter", "Shimmer", "Cream", "Metallic"),
                "Item Form": ("Liquid", "Gel"),
                "Material Feature": ("Non-Toxic", "Vegan", "Cruelty Free", "10-Free"),
                "Special Feature": ("Quick Dry", "Long Lasting", "Chip Resistant", "Peel Off"),
                "Size": ("0.5 Fl Oz", "0.25 Fl Oz", "0.33 Fl Oz"),
                "Number of Items": ("1", "6", "12"),
                "Age Range (Description)": ("Adult", "Kid")},
          optional={"Scent": ("Unscented",), "Product Benefits": ("Strengthening", "Long Lasting"),
                    "Pattern": ("Solid", "Glitter")},
          variants=("Color", "Finish Type"),
          title_attrs=("{Color}", "{Finish Type}", "{Size}"),
          keywords=("Quick Dry", "Long Lasting", "Salon Finish", "Non-Toxic", "Gel Effect", "Chip Resistant"),
          points=("{Finish Type} {Item Form} color in two coats.",
                  "{Special Feature} formula that resists chipping.",
                  "{Material Feature} and low odor.",
                  "Wide brush for even application."),
          positive=("dries to the touch in a couple of minutes", "two coats give full opaque coverage",
                    "lasts a week without chipping", "the brush makes application easy",
                    "the color matches the bottle", "no strong smell while painting",
                    "the glossy finish looks salon quality", "easy to remove with regular remover",
                    "safe enough for my daughter to use", "the glitter spreads evenly"),
          negative=("chipped within two days", "streaky even after three coats", "the brush bristles are frayed",
                    "took forever to dry", "the color looks nothing like the bottle", "got thick and gloopy quickly",
                    "smells very strong", "peeled off in strips")),

    # ---- Office ---------------------------------------------------------------------------------------
    _type("gel_pen", "gel pen", "Gel Pen", _OFFICE_SRC, _OFFICE, "Gel Ink Rollerball Pens", (5, 25), _OFFICE_BRANDS,
          core={"Ink Color": ("Black", "Blue", "Red", "Assorted", "Black, Blue, Red", "Pastel"),
                "Point Type": ("Fine", "Extra Fine", "Medium", "Bold"),
                "Color": ("Black", "Clear", "Assorted", "White", "Blue"),
                "Closure": ("Retractable", "Cap", "Click"),
                "Number of Items": ("10", "12", "24", "36", "48"),
                "Material": ("Plastic", "Rubber", "Metal"),
                "Special Feature": ("Quick Dry", "Smear Proof", "Comfort Grip", "Refillable"),
                "Shape": ("Round", "Triangular")},
          optional={"Recommended Uses For Product": ("School", "Office", "Journaling", "Drawing"),
                    "Age Range (Description)": ("Kid", "Adult"), "Style": ("Classic", "Colorful", "Minimalist")},
          variants=("Ink Color", "Number of Items"),
          title_attrs=("{Ink Color} Ink", "{Point Type} Point", "{Number of Items} Pack", "{Closure}"),
          keywords=("Quick Dry", "0.5mm", "0.7mm", "Smooth Writing", "Retractable", "for Journaling",
                    "Office Supplies"),
          points=("{Point Type} point for crisp, smooth lines.",
                  "{Ink Color} gel ink that dries fast.",
                  "Pack of {Number of Items} with a comfortable {Material} grip.",
                  "{Closure} design keeps the tip clean."),
          positive=("the ink does not smear for left-handed writing", "writes smoothly without skipping",
                    "the colors show up well on dark paper", "the grip stays comfortable during long notes",
                    "does not bleed through thin notebook paper", "the fine tip is great for small handwriting",
                    "the ink dries in a few seconds", "the retractable click feels solid",
                    "lasted through a whole semester", "pastel colors are vivid and consistent"),
          negative=("several pens arrived dried out", "the ink skips and blobs", "bleeds through my planner pages",
                    "the clip snapped off quickly", "smears even after drying", "runs out of ink quickly",
                    "the caps crack easily", "the colors look dull on paper"),
          extras={"Line Size": ("0.5 Millimeters", "0.7 Millimeters", "1.0 Millimeters")}),

    _type("notebook", "notebook", "Notebook", _OFFICE_SRC, _OFFICE, "Composition Notebooks", (5, 30),
          _OFFICE_BRANDS,
          core={"Sheet Size": ("A5", "B5", "Letter", "8.5 x 11 Inches", "5.5 x 8.5 Inches"),
                "Color": _OFFICE_COLORS,
                "Material": ("Paper", "PU Leather", "Kraft Paper", "Plastic"),
                "Style": ("College Ruled", "Wide Ruled", "Dotted", "Grid", "Blank"),
                "Closure": ("Elastic Band", "Spiral", "None"),
                "Number of Items": ("1", "2", "3", "5"),
                "Shape": ("Rectangular",),
                "Pattern": ("Solid", "Floral", "Marble")},
          optional={"Recommended Uses For Product": ("School", "Journaling", "Office", "Bullet Journal"),
                    "Special Feature": ("Thick Paper", "Lay Flat", "Numbered Pages", "Pocket"),
                    "Age Range (Description)": ("Adult", "Teen")},
          variants=("Color", "Style"),
          title_attrs=("{Style}", "{Sheet Size}", "{Color}", "{Number of Items} Pack"),
          keywords=("Hardcover", "Spiral Notebook", "Journal", "120gsm Thick Paper", "Lay Flat",
                    "for School and Office"),
          points=("Thick {Style} pages that resist ink bleed.",
                  "{Sheet Size} size fits a bag or a desk.",
                  "{Material} cover with a {Closure} closure.",
                  "Pack of {Number of Items}."),
          positive=("fountain pen ink does not bleed through", "lies completely flat when open",
                    "the paper is thick and smooth", "the cover survives being tossed in my bag",
                    "the elastic band keeps it closed", "pages tear out cleanly along perforations",
                    "the dotted grid is faint but visible", "the back pocket holds loose receipts",
                    "the binding has not loosened after months", "the size fits perfectly in my purse"),
          negative=("ink ghosts through to the next page", "the binding fell apart quickly", "the cover scuffs easily",
                    "pages are thinner than expected", "the elastic band stretched out fast",
                    "the spiral catches on my bag", "the lines are printed too dark",
                    "pages came wrinkled in the middle"),
          extras={"Number of Pages": ("100", "160", "200"), "Paper Finish": ("Matte", "Smooth")}),

    _type("stapler", "stapler", "Stapler", _OFFICE_SRC, (("Office Products", 0.8), ("Amazon Home", 0.2)),
          "Desk Staplers", (6, 45), _OFFICE_BRANDS,
          core={"Color": _OFFICE_COLORS,
                "Material": ("Metal", "Plastic", "Metal, Plastic"),
                "Special Feature": ("Jam Free", "Spring Powered", "Ergonomic Handle", "Built-in Staple Remover",
                                    "Heavy Duty"),
                "Power Source": ("Manual", "Battery Powered", "Electric"),
                "Number of Items": ("1",),
                "Style": ("Desktop", "Mini", "Heavy Duty", "Long Reach"),
                "Recommended Uses For Product": ("Office", "School", "Home"),
                "Mounting Type": ("Desktop", "Handheld")},
          optional={"Shape": ("Rectangular",), "Age Range (Description)": ("Adult",),
                    "Finish Type": ("Matte", "Glossy")},
          variants=("Color", "Style"),
          title_attrs=("{Style}", "{Color}", "{Material}"),
          keywords=("Desktop Stapler", "20 Sheet Capacity", "Jam Free", "with 1000 Staples", "Office Stapler",
                    "Heavy Duty", "One Finger Stapling"),
          points=("Staples up to 25 sheets with little effort.",
                  "{Material} body with a non-slip base.",
                  "Front-loading tray reloads in seconds.",
                  "{Style} design for {Recommended Uses For Product}."),
          positive=("staples twenty sheets with no effort", "never jams even with cheap staples",
                    "reloading takes a few seconds", "the rubber base does not scratch my desk",
                    "heavy enough to stay put while stapling", "staples fold flat every time",
                    "small enough for my pencil pouch", "the built-in remover actually works",
                    "works with standard staples from any brand", "feels solid after years of office use"),
          negative=("jams every few staples", "staples come out crooked", "struggles with more than five sheets",
                    "the spring broke after a month", "the plastic housing cracked", "the staple remover is useless",
                    "needs a lot of force to press", "the reload mechanism is confusing"),
          extras={"Sheet Capacity": ("20", "25", "40", "100"), "Staple Size": ("26/6", "24/6")}),

    _type("desk_lamp", "desk lamp", "Desk Lamp", _OFFICE_SRC,
          (("Amazon Home", 0.5), ("Tools & Home Improvement", 0.3), ("Office Products", 0.2)), "Desk Lamps",
          (15, 80), _OFFICE_BRANDS,
          core={"Color": ("Black", "White", "Silver", "Gold", "Gray", "Wood Grain", "Pink"),
                "Material": ("Aluminum", "ABS", "Metal", "Wood"),
                "Power Source": ("Corded Electric", "USB", "Battery Powered"),
                "Special Feature": ("Dimmable", "Touch Control", "USB Charging Port", "Eye Caring",
                                    "Memory Function", "Timer"),
                "Mounting Type": ("Desktop", "Clamp", "Wall Mount"),
                "Style": ("Modern", "Minimalist", "Industrial", "Architect"),
                "Finish Type": ("Matte", "Brushed", "Painted"),
                "Recommended Uses For Product": ("Reading", "Study", "Office", "Bedside")},
          optional={"Shape": ("Round", "Rectangular"), "Connector Type": ("USB Type C", "USB Type A")},
          variants=("Color", "Mounting Type"),
          title_attrs=("{Color}", "{Mounting Type}", "{Style}", "with {Special Feature}"),
          keywords=("LED Desk Lamp", "Dimmable", "Eye-Caring", "with USB Charging Port", "Touch Control",
                    "Architect Lamp", "5 Color Modes"),
          points=("{Special Feature} with 5 color modes and 10 brightness levels.",
                  "Flicker-free LEDs that are easy on the eyes.",
                  "{Material} arm adjusts to any angle.",
                  "{Mounting Type} setup that saves desk space."),
          positive=("the light is bright enough for detailed work", "no flicker even at low brightness",
                    "the arm stays exactly where I put it", "the USB port charges my phone overnight",
                    "the warm setting is easy on my eyes", "the clamp holds tight on my thick desk",
                    "the touch controls are responsive", "remembers my last brightness setting",
                    "lights my entire desk evenly", "small footprint saves desk space"),
          negative=("the arm droops over time", "flickers at the lowest setting", "the touch button is too sensitive",
                    "the base is too light and tips over", "the light is too blue even on warm",
                    "the clamp scratches my desk", "makes a faint buzzing noise", "the USB port charges very slowly"),
          extras={"Light Source Type": ("LED",), "Wattage": ("5 watts", "10 watts", "12 watts")},
          heavy=True),

    _type("highlighter", "highlighter", "Highlighter", _OFFICE_SRC, _OFFICE, "Highlighters", (4, 20),
          _OFFICE_BRANDS,
          core={"Ink Color": ("Yellow", "Pastel", "Assorted", "Neon", "Fluorescent Assorted"),
                "Point Type": ("Chisel", "Fine", "Dual Tip", "Bullet"),
                "Number of Items": ("4", "6", "10", "12", "24"),
                "Color": ("Assorted", "Yellow", "Pastel", "Multicolor"),
                "Material": ("Plastic",),
                "Special Feature": ("Smear Guard", "Quick Dry", "No Bleed", "Acid Free"),
                "Closure": ("Cap", "Retractable"),
                "Recommended Uses For Product": ("Bible Journaling", "Studying", "Office", "School")},
          optional={"Age Range (Description)": ("Adult", "Kid"), "Style": ("Classic", "Pastel", "Mild"),
                    "Shape": ("Round", "Flat")},
          variants=("Ink Color", "Number of Items"),
          title_attrs=("{Ink Color}", "{Point Type} Tip", "{Number of Items} Count"),
          keywords=("Highlighter Pens", "Chisel Tip", "Quick Dry", "No Bleed", "Aesthetic", "Bible Safe"),
          points=("{Point Type} tip draws thick and thin lines.",
                  "{Special Feature} ink for printed pages.",
                  "Set of {Number of Items} in {Ink Color} shades.",
                  "{Closure} keeps the tip from drying out."),
          positive=("does not smear printed ink", "does not bleed through Bible pages",
                    "the chisel tip makes both thick and thin lines", "colors stay bright after months",
                    "the caps click on securely", "lasts through a whole semester", "dries instantly on glossy paper",
                    "the pastel shades are soft on the eyes", "highlights evenly without streaks",
                    "the dual tip is handy for notes"),
          negative=("dries out quickly with the cap on", "bleeds through thin paper", "smears laser printed text",
                    "the colors are too faint", "the tip frayed after a week", "the ink smells strong",
                    "leaves streaky lines", "several arrived already dry")),

    _type("desk_organizer", "desk organizer", "Desk Organizer", _OFFICE_SRC,
          (("Office Products", 0.6), ("Amazon Home", 0.4)), "Desk Supplies Holders", (10, 45), _OFFICE_BRANDS,
          core={"Color": ("Black", "White", "Gold", "Natural Wood", "Gray", "Pink", "Rose Gold"),
                "Material": ("Mesh Metal", "Wood", "Bamboo", "Plastic", "Acrylic"),
                "Shape": ("Rectangular", "Square", "Round"),
                "Style": ("Modern", "Rustic", "Minimalist"),
                "Finish Type": ("Matte", "Natural", "Powder Coated"),
                "Number of Items": ("1", "2"),
                "Mounting Type": ("Desktop", "Wall Mount"),
                "Recommended Uses For Product": ("Office", "Home", "School", "Art Supplies")},
          optional={"Special Feature": ("Rotating", "Drawer", "Multiple Compartments", "Sliding Drawer"),
                    "Pattern": ("Solid", "Mesh")},
          variants=("Color", "Material"),
          title_attrs=("{Material}", "{Color}", "with {Special Feature}"),
          keywords=("Desk Accessories", "Pen Holder", "Office Supplies Storage", "with Drawer",
                    "Multi-Functional", "Desktop Caddy"),
          points=("{Material} build with several compartments for pens and notes.",
                  "{Style} look that fits home and office desks.",
                  "Keeps {Recommended Uses For Product} supplies within reach.",
                  "Assembles in minutes."),
          positive=("holds all my pens and sticky notes", "the drawers slide smoothly",
                    "sturdy enough that it does not tip over", "assembled in a few minutes",
                    "fits neatly under my monitor", "the mesh looks clean and modern",
                    "the compartments fit letter-size paper", "keeps my small desk clutter-free",
                    "the wood finish looks high end", "the rotating base makes supplies easy to grab"),
          negative=("the drawers stick when opening", "scratches easily on the surface",
                    "smaller than it looks in photos", "wobbles when I grab a pen", "arrived with a cracked corner",
                    "screws stripped during assembly", "the compartments are too narrow for markers",
                    "has a strong paint smell"),
          extras={"Number of Compartments": ("5", "6", "8", "10")}),
]

PRODUCT_TYPES: dict[str, ProductType] = {t.key: t for t in _TYPE_LIST}

# Review opinions per product type (and generic ones), as construction and the judge read them.
OPINIONS_BY_TYPE: dict[str, dict[str, tuple[str, ...]]] = {
    t.key: {"positive": t.positive, "negative": t.negative} for t in _TYPE_LIST}
GENERIC_OPINIONS: dict[str, tuple[str, ...]] = {
    "positive": ("arrived well packaged with no damage", "the instructions were short and clear",
                 "customer service replaced a faulty unit quickly", "looks exactly like the product photos",
                 "still works perfectly after six months", "feels more expensive than the price"),
    "negative": ("arrived with scratches on it", "stopped working right after the return window",
                 "the packaging was damaged on arrival", "looks cheaper than in the photos",
                 "customer service never answered my emails", "instructions were missing from the box"),
}

_TYPE_BY_SUBCATEGORY = {t.subcategory: t for t in _TYPE_LIST}


def product_type_of(product: Product) -> ProductType | None:
    """The ProductType a synthetic product was made from (via its `categories`), else None."""
    categories = product.extras.get("categories")
    if isinstance(categories, list) and categories:
        return _TYPE_BY_SUBCATEGORY.get(categories[-1])
    return None


def all_opinions(type_key: str) -> tuple[str, ...]:
    """Every opinion a review of that type can carry: its own table plus the generic one."""
    table = OPINIONS_BY_TYPE[type_key]
    return table["positive"] + table["negative"] + GENERIC_OPINIONS["positive"] + GENERIC_OPINIONS["negative"]


# ---------------------------------------------------------------------------------------------------------
# Seeding, ids, dates
# ---------------------------------------------------------------------------------------------------------

def _rng(*parts: object) -> random.Random:
    """A Random seeded from sha256 of the parts joined by ':' (stable across processes and machines)."""
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


_ALNUM = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_ID_SPACE = 36 ** 8


class _IdMaker:
    """index -> "B0" + 8 base-36 chars, through an affine bijection of [0, 36^8): unique, random-looking."""

    def __init__(self, seed: int):
        rng = _rng(seed, "ids")
        mult = rng.randrange(10 ** 11, _ID_SPACE // 2)
        while mult % 2 == 0 or mult % 3 == 0:  # coprime with 36^8, so the map is a bijection
            mult += 1
        self.mult, self.offset = mult, rng.randrange(_ID_SPACE)

    def __call__(self, index: int) -> str:
        n = (self.mult * index + self.offset) % _ID_SPACE
        chars = []
        for _ in range(8):
            n, digit = divmod(n, 36)
            chars.append(_ALNUM[digit])
        return "B0" + "".join(reversed(chars))


_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")
_DAY_FIRST = 734503          # date(2012, 1, 1).toordinal()
_DAY_LAST_LISTING = 738672   # date(2023, 6, 1).toordinal()
_DAY_LAST_REVIEW = 738778    # date(2023, 9, 15).toordinal()
_UNIX_DAY0 = 719163          # date(1970, 1, 1).toordinal()
_CUM_DAYS = (0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334)


def _format_day(ordinal: int) -> str:
    """Amazon's "Date First Available" spelling, e.g. "September 20, 2022"."""
    d = datetime.date.fromordinal(ordinal)
    return f"{_MONTHS[d.month - 1]} {d.day}, {d.year}"


# ---------------------------------------------------------------------------------------------------------
# Families: the unit of near-duplication
# ---------------------------------------------------------------------------------------------------------

_TYPE_WEIGHTS = [1.0] * len(_TYPE_LIST)
_TYPE_CUM = [sum(_TYPE_WEIGHTS[:i + 1]) for i in range(len(_TYPE_WEIGHTS))]

_FAMILY_SIZES = (1, 3, 4, 5, 6, 7, 8)
_FAMILY_SIZE_CUM = (0.12, 0.32, 0.52, 0.68, 0.81, 0.91, 1.0)

# Multi-option fields (plus Special Feature) may hold several values in one string, as real listings do.
_MULTI_KEYS = frozenset(MULTI_OPTION_FIELDS) | {"Special Feature"}
_SEPARATORS = (", ", ", ", ",", "/", " / ")
_RESELLERS = ("GadgetHub Direct", "Prime Deals Co", "TopChoice Mart", "BestBuy Outlet Store", "EverydayGoods US")
_ODD_KINDS = (("caps", 0.06), ("see_more", 0.05), ("numeric", 0.03), ("empty", 0.04), ("foreign", 0.015))
_FOREIGN_VALUES = {"Style": "经典的", "Recommended Uses For Product": "游戏", "Special Feature": "防水"}
_SEE_MORE_KEYS = ("Compatible Phone Models", "Compatible Devices", "Special Feature",
                  "Recommended Uses For Product", "Product Benefits")
_NUMERIC_KEYS = ("Color", "Style", "Pattern", "Finish Type", "Material Feature")
_COUNTRIES = ("China", "USA", "Taiwan", "Vietnam", "Korea")
_PLACEHOLDER = re.compile(r"\{([^{}]+)\}")


@dataclass
class _Member:
    """One listing of a family: its detail values and how its numbers relate to the line's anchor.

    kind: "simple" (a family of plain near-duplicates: own numbers), "anchor" (the line's reference
    listing), "variant" (another value of the primary axis: color, size, pack count...), "leaf" (the
    anchor with one other spec changed: `key`), "clone" (the same item under another brand: white
    label), "dup" (the same item listed again by another seller: `aspect` says what differs - price,
    rating, count or title). Every listing has its own numbers and reviews; those of a line's variants,
    leaves and clone stay within the anchor's price, rating and rating-count brackets, a dup's leaves
    them on exactly its `aspect`. A `drifted` listing carries the line's other weight and dimensions.
    """

    kind: str
    values: dict[str, str]
    store: str
    manufacturer: str
    key: str | None = None
    aspect: str | None = None
    drifted: bool = False


@dataclass
class _Family:
    index: int
    ptype: ProductType
    brand: str
    store: str
    manufacturer: str
    main_category: str
    base: dict[str, str]                  # canonical key -> value shared by the members
    primary: str
    members: list[_Member]
    anchor: int | None                    # position of the line's anchor in `members` (None: simple family)
    anchor_numbers: tuple[float | None, float, int] | None   # (price, average rating, rating count)
    layout: list[tuple[str, str]]         # (emitted key, source): source is a canonical key, "x:<extra>" or "#noise"
    extras: dict[str, str]
    title_segments: list[str]
    title_joiner: str
    feature_plan: list[str]               # selling points in family order
    feature_header: str
    keywords: list[str]
    description_style: int
    price_base: float
    price_ending: float
    quality: float
    popularity: float
    first_day: int
    model_prefix: str
    dims: str
    weight: str
    pos_order: list[str]
    neg_order: list[str]
    drift_dims: str | None = None         # a line's other weight and dimensions (its drifted members')
    drift_weight: str | None = None

    @property
    def size(self) -> int:
        return len(self.members)


_BRAND_SYLLABLES = ("ka", "lo", "mi", "ve", "zu", "ra", "no", "ti", "xe", "do", "pa", "sy", "qu", "lu", "an",
                    "or", "el", "ix", "on", "ar", "be", "fo", "gi", "ha", "je", "mo", "ne", "ri", "so", "va")
_BRAND_SUFFIXES = ("", "", "", "tek", "ly", "io", "ora", "ex", "go", "pro")
_BRAND_CONSONANTS = "BCDFGHJKLMNPRSTVWXYZ"
GENERATED_BRANDS_PER_CATEGORY = 1500


def _generated_brand(seed: int, source: str, k: int) -> str:
    """The k-th made-up brand of a source category: "Velkora" or an all-caps "BZKRE" style seller name."""
    rng = _rng(seed, "brand", source, k)
    if rng.random() < 0.35:
        letters = [rng.choice(_BRAND_CONSONANTS) for _ in range(rng.randint(4, 7))]
        letters[rng.randrange(1, len(letters))] = rng.choice("AEIOU")
        return "".join(letters)
    word = "".join(rng.choice(_BRAND_SYLLABLES) for _ in range(rng.randint(2, 3))) + rng.choice(_BRAND_SUFFIXES)
    return word.capitalize()


def _pick_brand(seed: int, rng: random.Random, ptype: ProductType) -> str:
    """A curated brand of the type (shared across types of a category) or one of many generated ones,
    so big catalogs get many stores while small ones still repeat brands."""
    roll = rng.random()
    if roll < 0.02:
        return "Generic"
    if roll < 0.4:
        return rng.choice(ptype.brands)
    return _generated_brand(seed, ptype.source_category, rng.randrange(GENERATED_BRANDS_PER_CATEGORY))


def _store_for(seed: int, brand: str) -> str:
    """The store a brand usually sells under: fixed per (seed, brand) so a store carries many products."""
    rng = _rng(seed, "store", brand)
    roll = rng.random()
    if roll < 0.7:
        return brand
    return rng.choice((f"{brand} Store", f"{brand} Official", f"{brand}-US", f"{brand} Direct", brand.upper()))


def _manufacturer_for(seed: int, brand: str, source: str) -> str:
    rng = _rng(seed, "maker", brand)
    roll = rng.random()
    if roll < 0.6:
        return brand
    if roll < 0.75:
        return brand.upper() if rng.random() < 0.5 else brand.lower()
    if source != "All_Beauty" and roll < 0.9:
        return f"Shenzhen {brand} Technology Co.,Ltd"
    return f"{brand} Inc"


def _join_options(rng: random.Random, pool: tuple[str, ...], separator: str) -> str:
    """2-3 distinct options of a pool in one string: "Nylon, Silicone", "Black/Blue"."""
    atomic = [v for v in pool if not any(sep in v for sep in (",", "/", "|"))]
    if len(atomic) < 2:
        return rng.choice(pool)
    return separator.join(rng.sample(atomic, min(len(atomic), rng.choice((2, 2, 3)))))


def _choose_keys(rng: random.Random, ptype: ProductType, optional_share: float = 0.6) -> list[str]:
    keys = ["Brand", *ptype.core]
    keys += [k for k in ptype.optional if rng.random() < optional_share]
    return keys


def _base_values(rng: random.Random, ptype: ProductType, keys: list[str], brand: str,
                 variant_keys: set[str]) -> dict[str, str]:
    pools = ptype.value_pools
    separator = rng.choice(_SEPARATORS)
    values = {"Brand": brand}
    for key in keys[1:]:
        pool = pools[key]
        multi_p = 0.5 if key == "Special Feature" else 0.2
        if key in _MULTI_KEYS and key not in variant_keys and len(pool) >= 3 and rng.random() < multi_p:
            values[key] = _join_options(rng, pool, separator)
        else:
            values[key] = rng.choice(pool)
    return values


def _apply_odd_value(rng: random.Random, family_values: dict[str, str], ptype: ProductType,
                     keys: list[str], variant_keys: set[str]) -> str | None:
    """Spoil one non-variant value now and then, as real metadata is (docs/original-harness.md §5.4, cleaning);
    returns the spoiled key."""
    roll, kind = rng.random(), None
    for name, p in _ODD_KINDS:
        if roll < p:
            kind = name
            break
        roll -= p
    if kind is None:
        return None
    free = [k for k in keys if k != "Brand" and k not in variant_keys]
    if kind == "see_more":
        candidates = [k for k in free if k in _SEE_MORE_KEYS]
    elif kind == "numeric":
        candidates = [k for k in free if k in _NUMERIC_KEYS]
    elif kind == "empty":
        candidates = [k for k in free if k in ptype.optional]  # never an always-present key
    elif kind == "foreign":
        candidates = [k for k in free if k in _FOREIGN_VALUES]
    else:
        candidates = free
    if not candidates:
        return None
    key = rng.choice(candidates)
    value = family_values[key]
    if kind == "caps":
        family_values[key] = value.upper()
    elif kind == "numeric":
        family_values[key] = rng.choice(("1", "2", "01", "100", "2023", "5"))
    elif kind == "empty":
        family_values[key] = ""
    elif kind == "foreign":
        family_values[key] = _FOREIGN_VALUES[key]
    else:  # a long marketing blurb cut off by the page, as scraped
        noun = ptype.title_noun.lower()
        shared = {k: v for k, v in family_values.items() if k not in variant_keys}  # true for every member
        blurb = " ".join(t for t in (_fill(p, shared, noun) for p in ptype.selling_points) if t)
        long_text = f"{value}, {blurb} {value.upper()}: {blurb}"
        family_values[key] = long_text[:330].rstrip() + "\u2026   See more"
    return key


def _alias_modes(rng: random.Random, keys: list[str], values: dict[str, str]) -> dict[str, str]:
    """Per aliasable key: "canonical", "both" (alias key next to the canonical one) or "alias" (alias only).

    An alias-only key no longer counts as implicit-eligible in the original DB (exact key names), so
    alias-only is turned back into "both" where it would leave fewer than 3 implicit-eligible keys.
    """
    style = rng.random()
    modes = {}
    for key in keys:
        if key not in ALIASES_BY_CANONICAL:
            continue
        roll = rng.random()
        if style < 0.45:
            modes[key] = "canonical"
        elif roll < 0.5:
            modes[key] = "both"
        elif roll < 0.75:
            modes[key] = "alias"
        else:
            modes[key] = "canonical"
    exact_implicit = [k for k in keys if k in IMPLICIT_ELIGIBLE_FIELDS and values[k] and modes.get(k) != "alias"]
    for key in keys:
        if len(exact_implicit) >= 3:
            break
        if modes.get(key) == "alias" and key in IMPLICIT_ELIGIBLE_FIELDS and values[key]:
            modes[key] = "both"
            exact_implicit.append(key)
    return modes


def _layout(rng: random.Random, ptype: ProductType, keys: list[str], modes: dict[str, str],
            main_category: str) -> list[tuple[str, str]]:
    """The emitted key order: either spec/noise keys first (phones, electronics) or Brand and details first."""
    details, aliases_both = [], []
    for key in keys:
        mode = modes.get(key, "canonical")
        alias = ALIASES_BY_CANONICAL.get(key, [None])[0]
        if mode == "alias":
            details.append((alias, key))
        else:
            details.append((key, key))
            if mode == "both":
                aliases_both.append((alias, key))
    extras = [(name, "x:" + name) for name in ptype.extras if rng.random() < 0.7]
    dims_key = "Product Dimensions" if rng.random() < 0.58 else "Package Dimensions"
    noise = [(dims_key, "#dims"), ("Item Weight", "#weight")]
    if rng.random() < 0.65:
        noise.append(("Item model number", "#model"))
    if rng.random() < 0.65:
        noise.append(("Best Sellers Rank", "#bsr"))
    if rng.random() < 0.35:
        noise.append(("Is Discontinued By Manufacturer", "#discontinued"))
    if main_category == "Cell Phones & Accessories" and rng.random() < 0.5:
        noise.append(("Other display features", "#display"))
    if rng.random() < 0.15:
        noise.append(("Country of Origin", "#origin"))
    tail = [("Manufacturer", "#manufacturer")] if rng.random() < 0.85 else []
    if rng.random() < 0.9:
        tail.append(("Date First Available", "#date"))
    if rng.random() < 0.004:  # real listings once carry an empty-string key
        tail.append(("", "#blank"))
    if rng.random() < 0.5:
        brand_entry, rest = details[0], details[1:]
        rest.insert(rng.randrange(len(rest) + 1), brand_entry)
        return noise + aliases_both + extras + rest + tail
    rng.shuffle(noise)
    return details + extras + aliases_both + noise + tail


def _title_plan(rng: random.Random, ptype: ProductType, keys: list[str], primary: str) -> tuple[list[str], str]:
    """Title segments with {Key} placeholders, shared by a family so member titles differ only in values."""
    present = set(keys)
    attrs = [a for a in ptype.title_attrs if all(k in present for k in _PLACEHOLDER.findall(a))]
    primary_attrs = [a for a in attrs if "{" + primary + "}" in a]
    others = [a for a in attrs if a not in primary_attrs]
    rng.shuffle(others)
    if rng.random() < 0.15:  # the variant is not in the title at all: members share one title
        primary_attrs = []
    style = rng.choices(("short", "medium", "long", "bracket"), (0.2, 0.35, 0.3, 0.15))[0]
    noun = "{noun}"
    if style == "short":
        picked, kws = primary_attrs[:1], rng.sample(ptype.keywords, rng.randint(0, 1))
    elif style == "medium":
        picked, kws = primary_attrs + others[:1], rng.sample(ptype.keywords, rng.randint(1, 2))
    else:
        picked, kws = primary_attrs + others, rng.sample(ptype.keywords, rng.randint(2, 4))
    if style == "bracket":
        head = ["{Brand}", "".join(f"[{k}]" for k in kws), noun]
        body = picked
        joiner = " "
    else:
        lead_kw = kws[:1] and not kws[0].startswith(("with ", "for "))
        head = ["{Brand}", *kws[:1], noun] if lead_kw and rng.random() < 0.5 else ["{Brand}", noun, *kws[:1]]
        body = picked + kws[1:]
        rng.shuffle(body)
        joiner = rng.choice((", ", " ", " - ", ", "))
    brand_place = rng.random()
    if brand_place < 0.12:
        head = head[1:]                       # brand only in details and store
    elif brand_place < 0.2:
        head = head[1:]
        body = body + ["by {Brand}"]
    segments = [" ".join(head)] + body
    if style != "bracket" and "{Color}" in " ".join(segments) and rng.random() < 0.3:
        segments = [s for s in segments if s != "{Color}"] + ["({Color})"]
    return segments, joiner


_LINE_SHARE = 0.72            # families that are product lines (the rest: plain near-duplicate families)
_TOKENS = re.compile(r"[a-z0-9]+")


def _phrase_in(needle: str, hay: str) -> bool:
    """`needle` occurs in `hay` on word boundaries, case and punctuation aside."""
    n, h = " ".join(_TOKENS.findall(needle.lower())), " ".join(_TOKENS.findall(hay.lower()))
    return bool(n) and f" {n} " in f" {h} "


def _options(value: str) -> list[str]:
    return [o.strip() for o in re.split(r"[,/|]", value) if o.strip()]


def _alternatives(ptype: ProductType, key: str, value: str) -> list[str]:
    """Values of the pool a listing differing in `key` can carry: none of them names any option of
    `value`, so a requirement on `value` (any one option) rules that listing out."""
    pool = ptype.value_pools[key]
    mine = _options(value)
    return [v for v in pool if v != value and not any(_phrase_in(o, v) for o in mine)]


def _other_brand(seed: int, rng: random.Random, ptype: ProductType, brand: str) -> str:
    for _ in range(8):
        other = _pick_brand(seed, rng, ptype)
        if other.lower() != brand.lower() and other != "Generic":
            return other
    return _generated_brand(seed, ptype.source_category, rng.randrange(GENERATED_BRANDS_PER_CATEGORY)) + "x"


def _line_members(seed: int, rng: random.Random, ptype: ProductType, keys: list[str], base: dict[str, str],
                  brand: str, store: str, manufacturer: str, primary: str, spoiled: str | None,
                  anchor_numbers: tuple[float | None, float, int]) -> tuple[list[_Member], int]:
    """A product line as real listings have it: the anchor, its other primary-axis values (colors,
    sizes, pack counts...), one listing per other spec it is also sold in (material, connector, finish...),
    the same item under another brand, and re-listings by other sellers that differ in price, rating,
    rating count or title wording. Members come out shuffled; returns them and the anchor's position."""
    first = rng.choice(ptype.core[primary])
    others = _alternatives(ptype, primary, first)
    primary_values = [first] + rng.sample(others, min(len(others), rng.choice((1, 2, 2, 3))))
    anchor_values = {**base, primary: primary_values[0]}
    members = [_Member("anchor", anchor_values, store, manufacturer)]
    members += [_Member("variant", {**anchor_values, primary: v}, store, manufacturer)
                for v in primary_values[1:]]
    specs = [k for k in keys if k not in ("Brand", primary) and k != spoiled and base.get(k)
             and _alternatives(ptype, k, base[k])]
    rng.shuffle(specs)
    for key in specs:
        members.append(_Member("leaf", {**anchor_values, key: rng.choice(_alternatives(ptype, key, base[key]))},
                               store, manufacturer, key=key))
    if rng.random() < 0.25:
        other = _other_brand(seed, rng, ptype, brand)
        members.append(_Member("clone", {**anchor_values, "Brand": other}, _store_for(seed, other),
                               _manufacturer_for(seed, other, ptype.source_category)))
    price, average, count = anchor_numbers
    feasible = {"rating": _half_star_floor(average) > 1.0, "count": _count_bucket(count) is not None,
                "price": price is not None}
    pair = rng.choices((("rating", "count"), ("rating", "price"), ("count", "price")), (0.6, 0.2, 0.2))[0]
    aspects = [a for a in pair if feasible[a]] + (["title"] if rng.random() < 0.5 else [])
    for aspect in aspects:
        seller = rng.choice(_RESELLERS) if rng.random() < 0.7 else f"{brand} Outlet"
        members.append(_Member("dup", dict(anchor_values), seller, manufacturer, aspect=aspect))
    order = list(range(len(members)))
    rng.shuffle(order)
    return [members[i] for i in order], order.index(0)


# The share of a line's listings outside the anchor's configuration that drift: they carry the line's other
# weight and dimensions (facts construction never reads: not in ecab.fields.DETAIL_FIELDS) and list one more
# option on the multi-valued specs they share with the anchor (a requirement on the anchor's value still holds
# there: the judge checks "contains"). Every other listing of a line is the anchor with one thing changed, so
# without this the anchor would hold the most common value of every field and sit one value from most listings:
# a script picking the most typical or most central of the query's matches would find the target without
# asking anything (ecab/construct/validity.py, structural picks; docs/decisions.md#validity-audit).
LINE_DRIFT_SHARE = 0.75


def _drift(seed: int, family: _Family) -> None:
    """Mark most members of a line outside the anchor's configuration as drifted and draw what they carry
    (from their own random stream: the rest of the family is drawn exactly as before)."""
    rng = _rng(seed, "drift", family.index)
    l, w, h = sorted((round(rng.uniform(0.3, 12), 2) for _ in range(3)), reverse=True)
    family.drift_dims = f"{l} x {w} x {h} inches"
    family.drift_weight = (f"{round(rng.uniform(1, 25), 1)} pounds" if family.ptype.heavy
                           else f"{round(rng.uniform(0.4, 30), 2)} ounces")
    anchor = family.members[family.anchor].values
    extra = {}       # multi-valued key -> the one more option the drifted listings list
    for key in sorted(k for k in anchor if k in _MULTI_KEYS and anchor[k]):
        options = [v for v in _alternatives(family.ptype, key, anchor[key])
                   if not any(sep in v for sep in (",", "/", "|"))]
        if options:
            extra[key] = rng.choice(options)
    for member in family.members:
        # The anchor's own configuration (the anchor and its re-listings, any of which can be a target)
        # keeps the family's values: the drift makes that configuration the minority on these facts.
        same = member.kind in ("anchor", "dup")
        member.drifted = not same and rng.random() < LINE_DRIFT_SHARE
        if member.drifted:
            # One more option on the multi-valued specs it shares with the anchor: every requirement on
            # them still holds ("contains"), but the anchor's exact value is no longer the common one.
            member.values = {k: (f"{v}, {extra[k]}" if k in extra and v == anchor[k] else v)
                             for k, v in member.values.items()}


def _make_family(seed: int, index: int) -> _Family:
    rng = _rng(seed, "family", index)
    ptype = rng.choices(_TYPE_LIST, cum_weights=_TYPE_CUM)[0]
    line = rng.random() < _LINE_SHARE
    roll = rng.random()
    size = next(s for s, c in zip(_FAMILY_SIZES, _FAMILY_SIZE_CUM) if roll < c)
    primary = ptype.variants[0]
    primary_pool = ptype.core[primary]
    size = min(size, len(primary_pool))
    brand = _pick_brand(seed, rng, ptype)
    store = _store_for(seed, brand) if rng.random() < 0.85 else rng.choice(_RESELLERS)
    main_category = rng.choices([c for c, _ in ptype.main_categories],
                                [w for _, w in ptype.main_categories])[0]
    keys = _choose_keys(rng, ptype, 0.8 if line else 0.6)   # a line's listings spell out more specs
    secondaries = [k for k in ptype.variants[1:] if k in keys]
    secondary = rng.choice(secondaries) if secondaries and rng.random() < 0.5 and not line else None
    variant_keys = {primary} | ({secondary} if secondary else set())
    base = _base_values(rng, ptype, keys, brand, variant_keys)
    spoiled = _apply_odd_value(rng, base, ptype, keys, variant_keys)
    modes = _alias_modes(rng, keys, base)
    layout = _layout(rng, ptype, keys, modes, main_category)
    title_segments, title_joiner = _title_plan(rng, ptype, keys, primary)
    low, high = ptype.price_range
    price_base = low * (high / low) ** rng.random()
    l, w, h = sorted((round(rng.uniform(0.3, 12), 2) for _ in range(3)), reverse=True)
    weight = (f"{round(rng.uniform(1, 25), 1)} pounds" if ptype.heavy
              else f"{round(rng.uniform(0.4, 30), 2)} ounces")
    points = list(ptype.selling_points)
    rng.shuffle(points)
    pos, neg = list(ptype.positive), list(ptype.negative)
    rng.shuffle(pos)
    rng.shuffle(neg)
    manufacturer = _manufacturer_for(seed, brand, ptype.source_category)
    price_ending = rng.choice((0.99, 0.99, 0.95, 0.49, 0.0))
    quality = min(4.9, max(2.0, rng.gauss(4.25, 0.4)))
    popularity = rng.gauss(3.9, 1.5)
    anchor, anchor_numbers = None, None
    if line:
        anchor_price = None if rng.random() < 0.3 else _round_price(price_base, price_ending)
        anchor_numbers = (anchor_price, round(min(5.0, max(1.0, quality + rng.gauss(0, 0.15))), 1),
                          max(1, min(50_000, int(rng.lognormvariate(popularity, 0.6)))))
        members, anchor = _line_members(seed, rng, ptype, keys, base, brand, store, manufacturer, primary, spoiled,
                                        anchor_numbers)
    else:
        members = []
        for value in rng.sample(primary_pool, size):
            values = {**base, primary: value}
            if secondary and rng.random() < 0.6:
                values[secondary] = rng.choice(ptype.value_pools[secondary])
            members.append(_Member("simple", values, store, manufacturer))
    family = _Family(
        index=index, ptype=ptype, brand=brand, store=store, manufacturer=manufacturer,
        main_category=main_category, base=base, primary=primary, members=members, anchor=anchor,
        anchor_numbers=anchor_numbers,
        layout=layout, extras={name: rng.choice(pool) for name, pool in ptype.extras.items()},
        title_segments=title_segments, title_joiner=title_joiner, feature_plan=points,
        feature_header=rng.choice(("caps", "lenticular", "plain", "check")),
        keywords=rng.sample(ptype.keywords, min(4, len(ptype.keywords))),
        description_style=rng.randrange(3), price_base=price_base,
        price_ending=price_ending, quality=quality, popularity=popularity,
        first_day=rng.randint(_DAY_FIRST, _DAY_LAST_LISTING),
        model_prefix="".join(rng.choice(_ALNUM[10:]) for _ in range(rng.randint(2, 3))) + str(rng.randint(1, 99)),
        dims=f"{l} x {w} x {h} inches", weight=weight, pos_order=pos, neg_order=neg)
    if anchor is not None:
        _drift(seed, family)
    return family


def _iter_families(seed: int) -> Iterator[_Family]:
    index = 0
    while True:
        yield _make_family(seed, index)
        index += 1


# ---------------------------------------------------------------------------------------------------------
# Products
# ---------------------------------------------------------------------------------------------------------

def _first_option(value: str) -> str:
    """The display form of a possibly multi-valued string: its first option."""
    for sep in (",", "/", "|"):
        if sep in value:
            return value.split(sep, 1)[0].strip()
    return value


def _fill(template: str, values: dict[str, str], noun: str, short: bool = False) -> str | None:
    """Fill {Key} placeholders; None if a key is missing or empty (the caller drops that fragment)."""
    missing = False

    def one(match: re.Match) -> str:
        nonlocal missing
        key = match.group(1)
        if key == "noun":
            return noun
        value = values.get(key)
        if not value or "See more" in value:
            missing = True
            return ""
        return _first_option(value) if short or ", " in value else value

    text = _PLACEHOLDER.sub(one, template)
    return None if missing else text


def _round_price(raw: float, ending: float) -> float:
    whole = max(1, round(raw))
    return round(whole - 1 + ending if ending else float(whole), 2)


def _price(family: _Family, rng: random.Random) -> float | None:
    if rng.random() < 0.3:
        return None
    raw = family.price_base * rng.choice((1.0, 1.0, 1.0, 0.9, 0.95, 1.05, 1.1, 1.2))
    return _round_price(raw, family.price_ending)


def _half_star_floor(average: float) -> float:
    return max(1.0, math.floor(average * 2) / 2)


def _count_bucket(count: int) -> int | None:
    below = [b for b in RATING_NUMBER_BUCKETS if b <= count]
    return below[-1] if below else None


def _price_bracket_low(price: float) -> float:
    """The largest price bucket at or below `price` (0 below the first): prices from there up to `price`
    share its price cap."""
    below = [b for b in PRICE_BUCKETS if b <= price]
    if price >= PRICE_BUCKETS[-1]:
        return float(math.floor(price / 50) * 50)
    return float(below[-1]) if below else 0.0


def _price_bracket_top(price: float) -> float:
    """The smallest price bucket strictly above `price` (the next multiple of 50 past the last bucket)."""
    for bucket in PRICE_BUCKETS:
        if bucket > price:
            return float(bucket)
    return float((math.floor(price / 50) + 1) * 50)


def _line_numbers(family: _Family, member: _Member, rng: random.Random) -> tuple[float | None, float, int]:
    """(price, average rating, rating count) of a line member: its own, within the anchor's brackets (the
    same price bucket and never dearer, the same half star, the same rating-count bucket), so a requirement
    drawn from any of them holds for the others; except a dup's one `aspect`, which lands outside them
    (dearer than the next price bucket, rated below the half star, fewer ratings than the bucket)."""
    price, average, count = family.anchor_numbers
    if member.kind == "anchor":
        return price, average, count
    floor, bucket = _half_star_floor(average), _count_bucket(count)
    new_price = price
    if price is not None:
        low = _price_bracket_low(price)
        new_price = _round_price(rng.uniform(max(low, 0.8 * price), price), family.price_ending)
        if not low <= new_price <= price:
            new_price = price
    new_average = round(rng.uniform(floor, min(5.0, floor + 0.4)), 1)
    if bucket is None:
        new_count = rng.randint(1, RATING_NUMBER_BUCKETS[0] - 1)
    else:
        above = [b for b in RATING_NUMBER_BUCKETS if b > bucket]
        new_count = rng.randint(bucket, (above[0] - 1) if above else max(bucket, int(count * 1.6)))
    if member.aspect == "price" and price is not None:
        top = _price_bracket_top(price)
        new_price = max(_round_price(top * rng.uniform(1.08, 1.45), family.price_ending), round(top + 1, 2))
    elif member.aspect == "rating":
        new_average = round(rng.uniform(max(1.0, floor - 1.0), floor - 0.1), 1)
    elif member.aspect == "count" and bucket is not None:
        new_count = rng.randint(max(1, bucket // 4), bucket - 1)
    return (new_price if new_price is None or new_price > 0 else price), max(1.0, min(5.0, new_average)), new_count


def _title(family: _Family, values: dict[str, str], member: _Member | None = None) -> str:
    noun = family.ptype.title_noun
    if member is not None and member.aspect == "title":
        # A seller who never names the product type: brand, a keyword, then the attributes.
        attrs = [_fill(a, values, noun, short=True) for a in family.ptype.title_attrs]
        parts = [values.get("Brand") or family.brand, family.keywords[0], *(a for a in attrs if a)]
        return " ".join(p for p in parts if p).replace("  ", " ").strip()
    parts = [_fill(seg, values, noun, short=True) for seg in family.title_segments]
    if member is not None and member.kind == "leaf" and not any("{" + member.key + "}" in seg
                                                               for seg in family.title_segments):
        # A listing sold in another spec says so in its title ("..., Matte"), as sellers do.
        parts.append(_first_option(values[member.key]))
    return family.title_joiner.join(p for p in parts if p).replace("  ", " ").strip()


_POOL_PHRASES: dict[str, list[tuple[str, str]]] = {}


def _pool_phrases(ptype: ProductType) -> list[tuple[str, str]]:
    """(key, " tokens ") of every distinctive (4+ character) value of the type's pools."""
    if ptype.key not in _POOL_PHRASES:
        _POOL_PHRASES[ptype.key] = [(k, f" {' '.join(_TOKENS.findall(v.lower()))} ")
                                    for k, pool in ptype.value_pools.items() for v in pool
                                    if len("".join(_TOKENS.findall(v.lower()))) >= 4]
    return _POOL_PHRASES[ptype.key]


def _states_other_value(text: str, ptype: ProductType, values: dict[str, str]) -> bool:
    """Whether `text` names a value of the type's pools that this listing does not carry (a line's
    listings share bullet text, which must not claim another listing's spec)."""
    hay = f" {' '.join(_TOKENS.findall(text.lower()))} "
    for key, phrase in _pool_phrases(ptype):
        if phrase in hay:
            own = f" {' '.join(_TOKENS.findall((values.get(key) or '').lower()))} "
            if phrase not in own:
                return True
    return False


def _features(family: _Family, values: dict[str, str], rng: random.Random) -> list[str]:
    if rng.random() < 0.12:
        return []
    noun = family.ptype.title_noun.lower()
    line = family.anchor is not None
    bullets = []
    for i, point in enumerate(family.feature_plan):
        text = _fill(point, values, noun)
        if text is None or (line and _states_other_value(text, family.ptype, values)):
            continue
        header = family.keywords[i % len(family.keywords)]
        if line and _states_other_value(header, family.ptype, values):
            header = ""
        if not header:
            pass
        elif family.feature_header == "caps":
            text = f"{header.upper()}: {text}"
        elif family.feature_header == "lenticular":
            text = f"\u3010{header}\u3011 {text}"
        elif family.feature_header == "check":
            text = f"\u2714 {text}"
        bullets.append(text)
    return bullets[:rng.randint(3, 6)]


def _description(family: _Family, values: dict[str, str], rng: random.Random) -> list[str]:
    if rng.random() < 0.45:
        return []
    noun = family.ptype.title_noun.lower()
    filled = [t for t in (_fill(p, values, noun) for p in family.feature_plan) if t]
    intro = f"The {family.brand} {noun} is made for everyday use."
    if family.description_style == 0:
        return [" ".join([intro, *filled[:2]])]
    if family.description_style == 1:
        return ["Product Description", " ".join(filled[:3]) or intro]
    return [intro, f"Package includes: 1 x {family.ptype.title_noun}."]


def _detail_dict(family: _Family, values: dict[str, str], member: int, index: int, rng: random.Random,
                 rating_number: int) -> dict:
    details: dict = {}
    for emitted, source in family.layout:
        if source.startswith("x:"):
            details[emitted] = family.extras[source[2:]]
        elif source == "#manufacturer":
            details[emitted] = family.members[member].manufacturer
        elif source.startswith("#"):
            details[emitted] = _noise_value(family, source, member, index, rng, rating_number)
        else:
            details[emitted] = values[source]
    return details


def _seller_package(family: _Family, member: int, source: str) -> str:
    """A re-listing's own package dimensions or weight, near the line's (its own stream: nothing else moves)."""
    rng = _rng("package", family.index, member)
    if source == "#dims":
        return " x ".join(f"{round(float(x) * rng.uniform(0.85, 1.15), 2)}"
                          for x in family.dims.split(" inches")[0].split(" x ")) + " inches"
    number, unit = family.weight.split(" ", 1)
    return f"{round(float(number) * rng.uniform(0.85, 1.15), 2)} {unit}"


def _noise_value(family: _Family, source: str, member: int, index: int, rng: random.Random, rating_number: int):
    spec = family.members[member]
    if spec.kind == "dup" and source in ("#dims", "#weight"):
        return _seller_package(family, member, source)   # another seller states its own package
    if source == "#dims":
        return family.drift_dims if spec.drifted else family.dims
    if source == "#weight":
        return family.drift_weight if spec.drifted else family.weight
    if source == "#model":
        return f"{family.model_prefix}-{(index * 7919 + member) % 9000 + 1000}"
    if source == "#bsr":
        sub_rank = max(1, int(20000 / (rating_number + 1) ** 0.6 * rng.lognormvariate(0, 0.5)))
        root = "Electronics" if family.main_category == "All Electronics" else family.main_category
        if rng.random() < 0.3:
            return {family.ptype.subcategory: sub_rank}
        return {root: sub_rank * rng.randint(8, 40), family.ptype.subcategory: sub_rank}
    if source == "#discontinued":
        return "No" if rng.random() < 0.95 else "Yes"
    if source == "#display":
        return "Wireless"
    if source == "#origin":
        return _COUNTRIES[family.index % len(_COUNTRIES)]
    if source == "#manufacturer":
        return family.manufacturer
    if source == "#date":
        return _format_day(family.first_day + member * 11)
    return ""  # "#blank"


def _rating_number(family: _Family, rng: random.Random) -> int:
    return max(1, min(50_000, int(rng.lognormvariate(family.popularity, 0.6))))


# ---------------------------------------------------------------------------------------------------------
# Reviews
# ---------------------------------------------------------------------------------------------------------

_PREFIXES = ("", "", "", "", "Honestly, ", "So far ", "After a month, ", "Update: ", "Pros: ")
_FILLERS = {
    "positive": ("Would buy again.", "Highly recommend.", "Great value for the money.", "Exactly what I needed.",
                 "Five stars from me."),
    "mixed": ("It's fine for the price.", "Might return it.", "Not bad, not great.", "Keeping it for now."),
    "negative": ("Returning it.", "Not worth the money.", "Very disappointed.", "Would not buy again."),
}
_TITLES = {
    5: ("Five Stars", "Love it", "Exactly as described", "Works great", "Great {noun}", "Highly recommend"),
    4: ("Pretty good", "Solid {noun}", "Good value", "Does the job", "Almost perfect"),
    3: ("It's okay", "Mixed feelings", "Average", "Some issues"),
    2: ("Disappointed", "Not as advertised", "Meh", "Expected better"),
    1: ("Don't buy", "Returned it", "Broke fast", "Waste of money", "One Star"),
}


def _sentence(opinion: str, rng: random.Random) -> str:
    """One review sentence that contains the opinion verbatim (case aside)."""
    prefix = rng.choice(_PREFIXES)
    body = opinion if prefix else opinion[0].upper() + opinion[1:]
    return f"{prefix}{body}."


def _opinion_profile(family: _Family, member: int, rng: random.Random) -> tuple[list[str], list[str]]:
    """A member's slice of the type's opinions: neighbours in a family overlap only partly. A re-listing
    of a line's item hears part of what its anchor's buyers say, plus something of its own."""
    pos, neg = family.pos_order, family.neg_order
    if family.anchor is not None:
        # One product line, one product: its listings' buyers say the same things, each listing adding one
        # remark of its own; the buyers of a re-listing that differs in a number mention only half of them.
        start = 2 * family.anchor
        anchor_pos = [pos[(start + t) % len(pos)] for t in range(4)]
        anchor_neg = [neg[(start + t) % len(neg)] for t in range(3)]
        own = pos[(start + 4 + member) % len(pos)]
        if member == family.anchor:
            return anchor_pos, anchor_neg
        spec = family.members[member]
        if spec.kind == "dup" and spec.aspect != "title":
            # The re-listings that differ in a number hear complementary halves of the line's opinions.
            half = sum(1 for m in family.members[:member] if m.kind == "dup" and m.aspect != "title") % 2
            return anchor_pos[half::2], rng.sample(anchor_neg, 2)
        return anchor_pos + ([own] if own not in anchor_pos else []), anchor_neg
    mine_pos = [pos[(2 * member + t) % len(pos)] for t in range(4)]
    mine_neg = [neg[(2 * member + t) % len(neg)] for t in range(3)]
    extra = rng.choice(pos)
    if extra not in mine_pos:
        mine_pos.append(extra)
    return mine_pos, mine_neg


def _review_rating(average: float, rng: random.Random) -> int:
    """Amazon's J shape: happy reviewers give 5 (or 4), unhappy ones 1-3; the mix tracks the average."""
    happy = min(0.98, max(0.02, (average - 1.7) / 3.1))  # 4.8 * happy + 1.7 * (1 - happy) = average
    if rng.random() < happy:
        return 5 if rng.random() < 0.8 else 4
    roll = rng.random()
    return 1 if roll < 0.5 else 2 if roll < 0.8 else 3


def _review_text(rating: int, pos: list[str], neg: list[str], rng: random.Random,
                 cover: list[str] | None = None) -> tuple[str, str]:
    """(text, the main opinion) for one review: 1-4 sentences, at least one concrete opinion. `cover`: the
    positive opinions not yet heard on this listing; a happy review mentions the first of them (and no
    generic remark), so a product line's listings all come to carry its opinions."""
    if rating >= 4 and cover:
        first = cover.pop(0)
        opinions = [first] + rng.sample([o for o in pos if o != first], rng.choice((0, 0, 1)))
        sentences = [_sentence(o, rng) for o in opinions]
        if rating == 4 and rng.random() < 0.3:
            sentences.append(f"Only complaint: {rng.choice(neg)}.")
        mood = "positive"
    elif rating >= 4:
        opinions = rng.sample(pos, rng.choice((1, 1, 2)))
        if cover is None and rng.random() < 0.15:
            opinions.append(rng.choice(GENERIC_OPINIONS["positive"]))
        sentences = [_sentence(o, rng) for o in opinions]
        if rating == 4 and rng.random() < 0.3:
            sentences.append(f"Only complaint: {rng.choice(neg)}.")
        mood = "positive"
    elif rating == 3:
        opinions = [rng.choice(pos)]
        sentences = [_sentence(opinions[0], rng), f"However, {rng.choice(neg)}."]
        mood = "mixed"
    else:
        opinions = rng.sample(neg, rng.choice((1, 1, 2)))
        if rng.random() < 0.15:
            opinions.append(rng.choice(GENERIC_OPINIONS["negative"]))
        sentences = [_sentence(o, rng) for o in opinions]
        mood = "negative"
    if len(sentences) < 4 and rng.random() < 0.5:
        sentences.append(rng.choice(_FILLERS[mood]))
    return " ".join(sentences[:4]), opinions[0]


def _reviews(family: _Family, member: int, index: int, product_id: str, average: float, rating_number: int,
             rng: random.Random) -> list[Review]:
    kind = family.members[member].kind
    roll = rng.random()
    if kind in ("anchor", "variant", "leaf", "clone"):   # a line's own listings share its reviewed product
        count = rng.randint(6, 9) if roll < 0.15 else \
            MAX_REVIEWS_PER_PRODUCT if rng.random() < 0.4 else rng.randint(10, MAX_REVIEWS_PER_PRODUCT - 1)
    elif roll < 0.05:
        count = 0
    elif roll < 0.15:
        count = rng.randint(1, 4)
    else:
        count = MAX_REVIEWS_PER_PRODUCT if rng.random() < 0.35 else rng.randint(5, MAX_REVIEWS_PER_PRODUCT - 1)
    count = min(count, rating_number)
    pos, neg = _opinion_profile(family, member, rng)
    cover = list(pos) if family.anchor is not None else None
    noun = family.ptype.entity
    first_day = family.first_day + member * 11
    reviews = []
    for k in range(count):
        rating = _review_rating(average, rng)
        text, main_opinion = _review_text(rating, pos, neg, rng, cover)
        if rng.random() < 0.3:
            title = main_opinion[0].upper() + main_opinion[1:]
        else:
            title = rng.choice(_TITLES[rating]).replace("{noun}", noun)
        day = rng.randint(min(first_day + 3, _DAY_LAST_REVIEW), _DAY_LAST_REVIEW)
        timestamp = (day - _UNIX_DAY0) * 86_400_000 + rng.randrange(86_400) * 1000
        reviews.append(Review(review_id=index * MAX_REVIEWS_PER_PRODUCT + k + 1, product_id=product_id,
                              rating=float(rating), title=title, text=text,
                              helpful_vote=min(5000, int(rng.paretovariate(1.3)) - 1),
                              verified_purchase=rng.random() < 0.85, timestamp=timestamp))
    return reviews


# ---------------------------------------------------------------------------------------------------------
# The public generator
# ---------------------------------------------------------------------------------------------------------

def _make_product(family: _Family, member: int, index: int, seed: int, ids: _IdMaker) -> tuple[Product, list[Review]]:
    rng = _rng(seed, index)
    spec = family.members[member]
    values = spec.values
    if family.anchor is None:
        rating_number = _rating_number(family, rng)
        average = round(min(5.0, max(1.0, family.quality + rng.gauss(0, 0.15))), 1)
        price = _price(family, rng)
    else:
        price, average, rating_number = _line_numbers(family, spec, rng)
    product_id = ids(index)
    product = Product(
        product_id=product_id, title=_title(family, values, spec), main_category=family.main_category,
        store=spec.store, average_rating=average, rating_number=rating_number, price=price,
        features=_features(family, values, rng), description=_description(family, values, rng),
        details=_detail_dict(family, values, member, index, rng, rating_number),
        extras={"categories": [family.main_category, family.ptype.subcategory]})
    return product, _reviews(family, member, index, product_id, average, rating_number, rng)


def iter_synthetic(n_products: int, seed: int = 0, batch_size: int = 1000) -> Iterator[CatalogBatch]:
    """Stream a synthetic catalog of `n_products` products (and their reviews) in batches.

    Deterministic in (n_products, seed); independent of batch_size; prefix-stable (the first k products
    are the same for every n >= k). A batch holds at most `batch_size` products plus their reviews.
    """
    if not isinstance(n_products, int) or n_products < 0:
        raise ValueError(f"n_products must be a non-negative int, got {n_products!r}")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    if n_products > _ID_SPACE:
        raise ValueError(f"n_products must be at most {_ID_SPACE}, got {n_products}")
    ids = _IdMaker(seed)
    products: list[Product] = []
    reviews: list[Review] = []
    index = 0
    for family in _iter_families(seed):
        for member in range(family.size):
            if index >= n_products:
                break
            product, product_reviews = _make_product(family, member, index, seed, ids)
            products.append(product)
            reviews.extend(product_reviews)
            index += 1
            if len(products) == batch_size:
                yield CatalogBatch(products=products, reviews=reviews)
                products, reviews = [], []
        if index >= n_products:
            break
    if products:
        yield CatalogBatch(products=products, reviews=reviews)
