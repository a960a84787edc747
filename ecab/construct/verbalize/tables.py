"""The template verbalizer's phrase tables, data only: per-field post-modifiers, fillers and sentence frames of
the query, the persona's noise pools, the clarification slots' trigger keywords and answer frames. The rules that
pick among them are in phrases.py, query.py, persona.py and clarification.py."""
from __future__ import annotations

from typing import Any

# ---------------------------------------------------------------------------------------------------------
# Per-field phrasing: explicit, implicit and negative post-modifiers of the entity noun
# ---------------------------------------------------------------------------------------------------------

# Explicit post-modifiers of the entity noun. Placeholders: {v} the value as written ("A/B" for several
# options), {p} the value in running text (see text.plain), {a_v} / {a_p} the same after "a" or "an".
EXPLICIT_MODS: dict[str, list[str]] = {
    "Brand": ["from {v}", "made by {v}", "by the brand {v}"],
    "Color": ["in {v}", "in the color {v}", "in {a_v} colorway"],   # "Assorted": see phrases._color
    "Material": ["made of {p}", "made from {p}"],
    "Style": ["in {a_p} style", "with {a_p} style"],
    "Size": ["in size {v}", "in the {v} size"],
    "Item Form": ["in {p} form", "that comes as {a_p}"],
    "Hair Type": ["for {p} hair", "made for {p} hair"],
    "Skin Type": ["for {p} skin", "suited to {p} skin"],
    "Scent": ["with {a_p} scent", "that smells of {p}"],
    "Finish Type": ["with {a_p} finish", "in {a_p} finish"],
    "Material Feature": ["that is {p}", "that's {p}"],
    "Form Factor": ["with {a_p} form factor", "in {a_p} design"],
    "Connector Type": ["with {a_v} connector", "that uses {a_v} connector"],
    "Compatible Phone Models": ["compatible with {v}", "that fits {v}"],
    "Screen Size": ["with a screen size of {p}", "with a display size of {p}"],
    "Pattern": ["with {a_p} pattern", "in {a_p} pattern"],
    "Shell Type": ["with {a_p} shell", "in the {p} shell type"],
    "Operating System": ["running {v}", "that runs {v}"],
    "RAM": ["with {v} of RAM", "that has {v} of RAM"],
    "Hard Drive": ["with {a_v} hard drive", "with {a_v} drive for storage"],
    "Processor": ["with {a_v} processor", "powered by {a_v} processor"],
    "Graphics Coprocessor": ["with {v} graphics", "with {a_v} graphics coprocessor"],
    "Wireless Type": ["with {p} wireless", "using {p} wireless"],
    "Computer Memory Type": ["with {v} memory", "using {v} memory"],
    "Memory Storage Capacity": ["with {v} of storage", "with a storage capacity of {v}"],
    "Hardware Platform": ["for the {v} platform", "built for {v}"],
    "Lens Type": ["with {a_p} lens", "using {a_p} lens"],
    "Video Capture Resolution": ["that records {v} video", "with {v} video capture"],
    "Ink Color": ["with {p} ink", "that writes in {p} ink"],
    "Shape": ["in {a_p} shape", "with {a_p} shape"],
    "Sheet Size": ["with a sheet size of {p}", "in the {p} sheet size"],
    "Closure": ["with {a_p} closure", "that closes with {a_p} closure"],
    "Point Type": ["with {a_p} point", "with {a_p} point type"],
}


# Wrappers around an implicit clue (a noun phrase from clues.py); "{c}" is the clue.
IMPLICIT_MODS: dict[str, list[str]] = {
    "Material": ["made of {c}", "built from {c}"],
    "Special Feature": ["that offers {c}", "with {c}"],
    "Style": ["with {c}", "styled with {c}"],
    "Skin Type": ["suited to {c}", "made for {c}"],
    "Hair Type": ["suited to {c}", "made for {c}"],
    "Item Form": ["that comes as {c}", "in the form of {c}"],
    "Product Benefits": ["that provides {c}", "that delivers {c}"],
    "Finish Type": ["with {c}", "finished with {c}"],
    "Material Feature": ["with {c}", "that has {c}"],
    "Scent": ["with {c}", "that smells of {c}"],
    "Form Factor": ["in the form of {c}", "built as {c}"],
    "Connectivity Technology": ["that connects via {c}", "that links up using {c}"],
    "Connector Type": ["with {c}", "that plugs in with {c}"],
    "Pattern": ["with {c}", "decorated with {c}"],
    "Mounting Type": ["designed for {c}", "made for {c}"],
    "Operating System": ["running {c}", "that runs {c}"],
    "RAM": ["with {c}", "that has {c}"],
    "Hard Drive": ["with {c}", "that stores data on {c}"],
    "Processor": ["powered by {c}", "that runs on {c}"],
    "Wireless Type": ["that talks over {c}", "using {c}"],
    "Lens Type": ["with {c}", "shooting through {c}"],
    "Power Source": ["powered by {c}", "that runs on {c}"],
    "Recommended Uses For Product": ["meant for {c}", "intended for {c}"],
    "Ink Color": ["that writes in {c}", "with ink in {c}"],
}
DEFAULT_IMPLICIT_MODS = ["with {c}"]
GERUND_MODS = ["capable of {c}", "designed for {c}"]


# The attribute dimension in plain words (slot keyword, hidden_info, negatives, responses).
DIMENSION: dict[str, str] = {
    "Age Range (Description)": "age range", "Recommended Uses For Product": "recommended uses",
    "average_rating": "average rating", "rating_number": "number of ratings", "price": "price",
    "Compatible Phone Models": "compatible phone models", "Compatible Devices": "compatible devices",
    "RAM": "RAM", "Number of Items": "number of items",
}


# Negative post-modifiers; "{list}" is the excluded values joined with "or".
NEGATIVE_MODS: dict[str, str] = {
    "Brand": "from {list}", "Color": "in {list}", "Material": "made of {list}", "Scent": "with {a_list} scent",
    "Style": "in {a_list} style", "Finish Type": "with {a_list} finish", "Pattern": "with {a_list} pattern",
    "Shape": "in {a_list} shape", "Ink Color": "with {list} ink", "Operating System": "running {list}",
    "Power Source": "powered by {list}",
}


# ---------------------------------------------------------------------------------------------------------
# Query fillers (problems, contexts, scenarios: never containing a hidden value) and sentence frames
# ---------------------------------------------------------------------------------------------------------

PROBLEMS = [
    "My old one finally stopped working",
    "The one I have now keeps letting me down",
    "I've put off replacing a worn-out piece of gear for too long",
    "My current setup is falling apart",
    "I lost mine last week and miss it every day",
    "The cheap one I bought last year did not last",
]
CONTEXTS = [
    "I'm putting together a gift for a friend",
    "I'm restocking a few things before a busy month",
    "I'm replacing a few things after a move",
    "I'm getting organized before a trip",
    "I'm upgrading a few things at home",
    "I'm helping a relative shop online",
]
# Category-flavoured scenarios for use_case_scenario (and as extra contexts elsewhere).
SCENARIOS: dict[str, list[str]] = {
    "All Beauty": ["I'm rebuilding my morning routine from scratch", "I'm packing a small travel kit"],
    "Beauty": ["I'm rebuilding my morning routine from scratch", "I'm packing a small travel kit"],
    "Cell Phones & Accessories": ["I commute two hours a day and live on my phone",
                                  "I'm getting my phone ready for a long road trip"],
    "Computers": ["I'm building out a home office for remote work", "I'm reworking my desk for long study sessions"],
    "All Electronics": ["I'm reorganizing the entertainment corner of my living room",
                        "I'm setting up a small workshop bench"],
    "Electronics": ["I'm reorganizing the entertainment corner of my living room",
                    "I'm setting up a small workshop bench"],
    "Camera & Photo": ["I'm getting into weekend photography", "I'm filming short videos for a hobby channel"],
    "Office Products": ["I'm restocking my desk for a new school term", "I'm organizing a shared office space"],
    "Amazon Home": ["I'm redoing a spare room", "I'm making our kitchen easier to work in"],
    "Tools & Home Improvement": ["I'm finishing a weekend repair project", "I'm fixing up an older house"],
}
DEFAULT_SCENARIOS = ["I'm dealing with a small everyday annoyance at home", "I'm planning ahead for a busy season"]


MOD_FRAMES = [
    "It has to be one {mods}.",
    "I'm only considering one {mods}.",
    "The right pick is one {mods}.",
    "I want one {mods}.",
    "Make sure it's one {mods}.",
]
NEGATIVE_FRAMES = [
    ("I don't want anything {neg}.", "don't want anything {neg}"),
    ("Please avoid anything {neg}.", "avoid anything {neg}"),
    ("Nothing {neg}, please.", "Nothing {neg}"),
]
BUDGET_FRAMES = ["I have {b}.", "I'm using {b}.", "I can apply {b}."]
REVIEW_FRAMES = [
    "I want reviews saying {ops}.",
    "It should have reviews that mention {ops}.",
    "I'm counting on reviews that mention {ops}.",
]


# ---------------------------------------------------------------------------------------------------------
# Persona noise (docs/original-harness.md §5.8): whitelisted, product-free profile context
# ---------------------------------------------------------------------------------------------------------

NOISE_POOLS: dict[str, dict[str, list[Any]]] = {
    "demographics": {
        "gender": ["Female", "Male", "Non-binary", "Prefer not to say"],
        "age_range": ["18-24", "25-34", "35-44", "45-54", "55-64", "65-74"],
        "location": ["Chicago, IL", "Austin, TX", "Seattle, WA", "Denver, CO", "Atlanta, GA", "Portland, OR",
                     "Omaha, NE", "Boston, MA", "Phoenix, AZ", "Raleigh, NC", "Columbus, OH", "San Diego, CA"],
        "occupation": ["Nurse", "Software Developer", "High School Teacher", "Accountant", "Graphic Designer",
                       "Electrician", "Retail Manager", "Graduate Student", "Pharmacist", "Sales Representative",
                       "Retired Librarian", "Logistics Coordinator"],
        "education_level": ["High School Diploma", "Associate Degree", "Bachelor's Degree", "Master's Degree",
                            "Doctorate", "Trade Certificate"],
    },
    "lifestyle": {
        "hobbies": ["Reading fiction", "Hiking", "Baking", "Board games", "Gardening", "Cycling", "Painting",
                    "Birdwatching", "Cooking", "Running", "Yoga", "Chess", "Woodworking", "Podcasts"],
        "daily_routine": [
            "Wakes up early, works a day shift, and winds down with a book in the evening.",
            "Works from home on weekdays and takes a long walk after lunch.",
            "Commutes to the office by train and cooks dinner most nights.",
            "Works evening shifts and runs errands in the morning.",
            "Splits the day between classes and a part-time job.",
            "Starts the day at the gym before heading to work.",
        ],
        "fitness_level": ["Sedentary", "Lightly active", "Moderate", "Active", "Very active"],
        "dietary_preference": ["Omnivore", "Vegetarian", "Vegan", "Pescatarian", "Gluten-free", "No restrictions"],
        "commute_method": ["Car", "Public Transit", "Bicycle", "Walking", "Carpool", "Works from home"],
        "pets": ["None", "One cat", "Two cats", "One dog", "A rescue dog", "A parakeet", "Fish tank"],
    },
    "shopping_habits": {
        "payment_method": ["Credit Card", "Debit Card", "Digital Wallet", "Gift Card balance", "Bank Transfer"],
        "shopping_frequency": ["Weekly", "Bi-weekly", "Monthly", "A few times a year", "Rarely"],
        "preferred_device": ["Smartphone", "Laptop", "Desktop computer", "Tablet"],
        "preferred_platform": ["App", "Web browser", "Both app and web"],
        "return_frequency": ["Almost never", "Rarely", "Sometimes", "Often"],
    },
}


# ---------------------------------------------------------------------------------------------------------
# Clarification (docs/original-harness.md §5.9): trigger keywords and answer frames
# ---------------------------------------------------------------------------------------------------------

# Generic trigger keywords per dimension (besides the dimension name, always first). They avoid very
# short tokens and common question words as substrings, because the ask_user rule is lenient
# (docs/original-harness.md §2.2 tool 8: a keyword scores when it is a substring of the question or shares a
# >= 3-letter word with it).
SLOT_KEYWORDS: dict[str, list[str]] = {
    "Special Feature": ["special features", "features", "functions", "capabilities", "extras", "built-in",
                        "functionality", "perks"],
    "Material Feature": ["material property", "material quality", "materials", "composition", "fabric",
                         "eco-friendly", "ingredients"],
    "Product Benefits": ["benefits", "benefit", "results", "effects", "helps", "advantages", "outcome"],
    "Finish Type": ["finish", "surface finish", "coating", "sheen", "glossy", "matte", "lustre"],
    "Recommended Uses For Product": ["recommended use", "intended use", "usage", "purpose", "occasion",
                                     "application", "activity", "uses"],
    "Connectivity Technology": ["connectivity", "connect", "connection", "wireless", "wired", "pairing",
                                "network", "bluetooth"],
    "Connector Type": ["connector", "plug", "jack", "charging port", "cable end", "usb", "interface",
                       "plug type"],
    "Pattern": ["pattern", "print", "motif", "graphic", "artwork", "decoration", "printed"],
    "Mounting Type": ["mounting", "mount", "install", "installation", "attach", "bracket", "placement",
                      "mounted"],
    "Screen Size": ["screen", "display", "display size", "inches", "diagonal", "monitor size", "inch"],
    "Graphics Coprocessor": ["graphics", "graphics card", "gpu", "video card", "chipset", "radeon", "nvidia"],
    "Computer Memory Type": ["memory type", "memory", "ddr", "sdram", "ram type", "memory generation", "dimm"],
    "Hardware Platform": ["platform", "system", "console", "ecosystem", "compatible system", "gaming system",
                          "device family"],
    "Video Capture Resolution": ["video resolution", "resolution", "recording quality", "video quality",
                                 "footage", "records", "1080p"],
    "Ink Color": ["ink colour", "ink shade", "writing color", "pen color", "refill color", "color ink"],
    "Shape": ["shaped", "outline", "silhouette", "geometry", "contour", "round", "geometric"],
    "Closure": ["fasten", "fastening", "zipper", "clasp", "seal", "buckle", "latch", "close"],
    "Point Type": ["point", "nib", "pen tip", "tip size", "point size", "fine point", "stroke"],
    "average_rating": ["rating", "stars", "star rating", "rated", "score", "well reviewed", "review score"],
    "rating_number": ["ratings", "reviews", "rating count", "review count", "ratings count", "popular",
                      "popularity", "reviewers"],
    "price": ["cost", "budget", "spend", "expensive", "cheap", "inexpensive", "price limit", "dollars"],
    "Item Form": ["form", "consistency", "texture", "cream", "liquid", "gel", "lotion", "powder", "balm"],
    "Scent": ["fragrance", "smell", "aroma", "scented", "perfume", "odor", "unscented"],
    # Persona-eligible fields can reach clarification only as "both" negatives; keep them covered too.
    "Brand": ["manufacturer", "maker", "label", "made by", "trademark", "logo", "vendor"],
    "Color": ["colour", "colors", "shade", "colorway", "paint", "colored"],
    "Material": ["materials", "made of", "fabric", "construction", "built from", "composition"],
    "Style": ["styles", "look", "design", "styling", "vibe", "visual", "decor"],
    "Form Factor": ["shape", "design", "build", "size class", "profile", "body type", "housing"],
    "Operating System": ["operating", "windows", "macos", "linux", "chrome os", "mobile os", "system"],
    "Wireless Type": ["wireless", "wifi", "wi-fi", "bluetooth", "radio", "signal", "frequency", "802.11"],
    "Power Source": ["power", "battery", "charging", "powered", "plug in", "cord", "runs on"],
    "Shell Type": ["shell", "case type", "casing", "cover", "hard case", "protective"],
}
GENERIC_EXTRA_KEYWORDS = ["requirement", "spec", "specification", "preference", "detail", "attribute"]


ATTRIBUTE_RESPONSES = [
    "For the {dim}, I need {v}.",
    "The {dim} should be {v}, please.",
    "I'm set on {v} for the {dim}. That part isn't negotiable.",
]
# Answers built on the explicit query phrase ("I'd like one with a wired connection.").
MOD_RESPONSES = [
    "I'd like one {mod}.",
    "It has to be one {mod}.",
    "Ideally one {mod}. That part isn't negotiable.",
]
NUMERIC_RESPONSES = {
    "average_rating": ["I only trust products {m}.", "I want something {m}, otherwise I'm not interested."],
    "rating_number": ["It should be a product {m}, so I know plenty of people tried it.",
                      "I only consider products {m}."],
    "price": ["I want it {m}.", "My limit is firm: it has to be {m}."],
}
