"""Value pools, brand lists and main-category mixes that several product types share (data only)."""
from __future__ import annotations

from ecab.catalog.synthetic.product_type import SOURCE_CATEGORIES

CASE_COLORS = ("Black", "Clear", "Navy Blue", "Pink", "Purple", "Red", "Midnight Green", "Lavender",
               "Rose Gold", "Sierra Blue", "White", "Black/Blue", "Clear/Glitter", "Mint Green")
PHONE_MODELS = ("iPhone 15 Pro Max", "iPhone 15", "iPhone 14 Pro", "iPhone 13", "Samsung Galaxy S23 Ultra",
                "Samsung Galaxy S22", "Samsung Galaxy A54", "Google Pixel 8 Pro", "Google Pixel 7a",
                "OnePlus 11", "Motorola Moto G Power")
PHONE_LISTS = ("iPhone 15, iPhone 14, iPhone 13", "Samsung Galaxy S23, Galaxy S22, Galaxy S21",
               "iPhone, Samsung Galaxy, Google Pixel", "Universal", "Google Pixel 8, Pixel 7",
               "iPhone 12, iPhone 12 Pro, iPhone 12 Pro Max")
DEVICE_LISTS = ("Smartphones", "Smartphones, Tablets", "Smartphones, Earbuds, Smartwatches",
                "Laptops, Smartphones, Tablets", "Smartphone, Tablet, Laptop")
PC_DEVICES = ("PC, Mac", "Laptop, Desktop", "PC, Mac, Laptop", "Windows, Mac, Chromebook", "Personal Computer")
BEAUTY_COLORS = ("Pink", "White", "Black", "Rose Gold", "Lavender", "Mint Green", "Beige", "Clear")
OFFICE_COLORS = ("Black", "White", "Blue", "Pink", "Gray", "Green", "Mint", "Rose Gold", "Silver", "Red")

CASE_BRANDS = ("Tekshield", "CaseNova", "ARMORIX", "Lumora", "BAIZRKE", "Shieldon", "Vexo", "Kuzzo",
               "Mr.Guard", "Zenicase", "OtterNest", "Qingduo")
CHARGE_BRANDS = ("Voltrix", "Ampero", "Chargeon", "NOVAPOW", "Kissmart", "Zapcell", "Powerly", "TRPYD",
                 "Ecoamp", "Ankora", "Wattsy", "CableLovers")
AUDIO_BRANDS = ("Soundora", "Echowave", "QUIETON", "Auralis", "Beatnix", "Sonique", "Vibe Lab", "Kordo",
                "Zentune", "Ankora")
COMPUTER_BRANDS = ("Nexbook", "Aerion", "Corsera", "Logibyte", "KEYMATE", "Trionic", "Vertexa", "Zyntek",
                   "Orbix", "Pixelio", "YMDK", "Kanexo")
CAMERA_BRANDS = ("Optiva", "Lensora", "Campro", "ZOSIQ", "Snapix", "Aperix", "Trekcam", "Viewlux",
                 "Hawkeye Optics", "Orbix")
BEAUTY_BRANDS = ("Glowessa", "Purelle", "Velvetine", "Aurabeau", "Rosewell", "Silkara", "Dermalux",
                 "Bloom & Bare", "Kiyomi", "Oliva Botanics", "Lumiere & Co")
HAIR_BRANDS = ("Salonique", "Curlista", "Tressa", "Ionix Pro", "Maneology", "Purelle", "Rosewell", "Silkara")
OFFICE_BRANDS = ("Inkora", "Scriptly", "Deskio", "Officio", "Penzo", "Notara", "Staplex", "Clipwell",
                 "Markwise", "Lumidesk", "Orgaroo", "Meliven")

# main_categories mixes: (main category, share of the type's families)
CELL = (("Cell Phones & Accessories", 1.0),)
CELL_OR_ELEC = (("Cell Phones & Accessories", 0.6), ("All Electronics", 0.4))
ELEC = (("All Electronics", 1.0),)
COMPUTERS = (("Computers", 1.0),)
CAMERA = (("Camera & Photo", 1.0),)
BEAUTY = (("All Beauty", 1.0),)
OFFICE = (("Office Products", 1.0),)

CELL_SRC, ELEC_SRC, BEAUTY_SRC, OFFICE_SRC = SOURCE_CATEGORIES[2], SOURCE_CATEGORIES[1], \
    SOURCE_CATEGORIES[0], SOURCE_CATEGORIES[3]
