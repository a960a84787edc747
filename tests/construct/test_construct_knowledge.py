"""Construction knows no more about generated products than about real ones (issue 15, item 4).

What construction may know beyond a product's own record (value pools for negatives, title phrases for the
entity) comes from the catalog's rows through `ecab.catalog.base.catalog_knowledge`, the same for every
source; construct/ never imports the generator.
"""
from __future__ import annotations

import ast
import copy
import random
from pathlib import Path

from ecab.catalog.base import catalog_knowledge
from ecab.catalog.knowledge import CatalogKnowledge
from ecab.catalog.synthetic import iter_synthetic
from ecab.construct.draft import Feature
from ecab.construct.extract import build_value_pools, choose_excluded_values
from ecab.construct.rubrics import choose_entity

CONSTRUCT = Path(__file__).resolve().parents[2] / "ecab" / "construct"
GENERATOR = "ecab.catalog.synthetic"


def _imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    """Every module an import statement (anywhere, also inside functions and try blocks) or an
    importlib/__import__ call with a literal name brings in."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
            if name in ("import_module", "__import__"):
                found.append((node.lineno, node.args[0].value))
    return found


def test_construct_never_imports_the_generator():
    offenders = []
    for path in sorted(CONSTRUCT.rglob("*.py")):
        for lineno, module in _imported_modules(ast.parse(path.read_text(encoding="utf-8"))):
            if module == GENERATOR or module.startswith(GENERATOR + "."):
                offenders.append(f"{path.relative_to(CONSTRUCT.parents[1])}:{lineno} imports {module}")
    assert not offenders, "construction must read the catalog, not the generator:\n" + "\n".join(offenders)


def test_the_import_finder_sees_the_forms_construction_used():
    """The finder above catches the try-import inside a function that rubrics.py and extract.py had."""
    code = ("def f():\n    try:\n        from ecab.catalog.synthetic import PRODUCT_TYPES\n"
            "    except ImportError:\n        return []\n"
            "import importlib\nm = importlib.import_module('ecab.catalog.synthetic')\n"
            "from ecab.catalog import synthetic\n")
    modules = [m for _, m in _imported_modules(ast.parse(code))]
    assert modules.count(GENERATOR) == 3


def _products(n: int = 1200, seed: int = 2):
    return [p for batch in iter_synthetic(n, seed, 400) for p in batch.products]


def _anonymous(product):
    """The same row with nothing that says how it was made: the generator's `categories` trail (what
    `product_type_of` read) is gone, as it is from a released task's target_product."""
    other = copy.deepcopy(product)
    other.extras.pop("categories", None)
    return other


def test_entity_and_exclusions_depend_on_the_rows_only():
    """A generated product and the same row without its generator trail get the same entity phrase and the
    same excluded values: there is no side channel from the generator into construction."""
    products = _products()
    knowledge = build_value_pools(products)
    blind = build_value_pools([_anonymous(p) for p in products])
    assert blind.phrase_brands == knowledge.phrase_brands and blind.value_pools == knowledge.value_pools
    checked = 0
    for product in products[:300]:
        anon = _anonymous(product)
        assert choose_entity(product, knowledge) == choose_entity(anon, knowledge)
        for key in ("Color", "Material", "Form Factor", "Brand", "Special Feature", "Connector Type"):
            value = product.details.get(key)
            if not isinstance(value, str) or not value:
                continue
            feature = Feature(field=f"details.{key}", value=value, type="attribute_match", negative=True)
            got = choose_excluded_values(feature, product, knowledge, random.Random(checked))
            assert got == choose_excluded_values(feature, anon, knowledge, random.Random(checked))
            checked += 1
    assert checked > 200


def test_knowledge_is_computed_from_rows_alike_for_store_and_product_list(small_catalog):
    """The store's knowledge (Catalog.knowledge) is the one computed from its rows as a plain list, and
    a reader without a knowledge() method gets the same from catalog_knowledge."""
    rows = [p for batch in small_catalog.iter_products() for p in batch]
    expected = CatalogKnowledge.from_products(rows)
    assert catalog_knowledge(small_catalog) == expected

    class Bare:        # only iter_products: the fallback path of catalog_knowledge
        def iter_products(self, batch_size: int = 1024):
            yield from small_catalog.iter_products(batch_size)

    assert catalog_knowledge(Bare()) == expected


def test_entity_phrase_needs_two_brands_else_title_heuristic():
    """A phrase one brand uses says nothing about product types: a catalog of unrelated titles falls back to
    the head-of-title heuristic, for generated and real titles alike."""
    from ecab.schema import Product

    rows = [Product(product_id=f"P{i}", title=title, main_category="C", details={"Brand": brand})
            for i, (title, brand) in enumerate([
                ("Boao 3 Pieces Face Mask Brush, Silicone Applicator for Clay Mask", "Boao"),
                ("Kuzzo Phone Case for iPhone 15, Black", "Kuzzo"),
                ("Vexo Phone Case with Card Holder", "Vexo"),
                ("Vexo Slim Wallet, Leather", "Vexo")])]
    knowledge = CatalogKnowledge.from_products(rows)
    assert choose_entity(rows[0], knowledge).title_span == "Face Mask Brush"     # the heuristic
    assert knowledge.phrase_brands["C"].get("phone case") == 2
    assert choose_entity(rows[1], knowledge).title_span == "Phone Case"
    assert choose_entity(rows[3], knowledge).query_surface == "slim wallet"     # no shared phrase: heuristic


def test_entity_spans_are_whole_words_of_the_title():
    """A phrase never ends inside a word ("IPX" of "IPX7"): the validator finds the span on token bounds."""
    from ecab.core.text import contains_phrase, normalize
    from ecab.schema import Product

    rows = [Product(product_id=f"E{i}", title=f"{brand} Noise Cancelling Green Ear Hook IPX7 Waterproof",
                    main_category="C", details={"Brand": brand, "Color": "Green"})
            for i, brand in enumerate(["Gido", "Kelva", "Orbo"])]
    knowledge = CatalogKnowledge.from_products(rows)
    for row in rows:
        entity = choose_entity(row, knowledge)
        assert "ipx" not in entity.query_surface.split()
        assert contains_phrase(normalize(row.title), normalize(entity.title_span)), entity
