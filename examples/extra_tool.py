"""A tool of your own: one `Tool` record (name, description, JSON-schema parameters, handler).

Offer it in every episode by naming it in the config, which every process (Ray and process workers too)
imports by name:  python -m ecab.run 'tools.extra=[examples.extra_tool:PRICE_OF]'
or register it in your own process with `ecab.register_tool(PRICE_OF)`.
"""
from __future__ import annotations

import ecab


def price_of(box, params, result) -> dict:
    """The handler: `box` is the episode's tool box (`box.catalog`, `box.task`), `params` the parsed arguments.
    A sync handler runs in a worker thread (blocking=True, the default); `async def` runs on the event loop."""
    product = box.catalog.get_product(str(params["product_id"]))
    if product is None:
        return {"error": f"Product {params['product_id']} not found"}
    return {"product_id": product.product_id, "price": product.price}


PRICE_OF = ecab.Tool(
    "get_price", "Get the current price of one product by its product_id.",
    {"type": "object", "properties": {"product_id": {"type": "string", "description": "The product ID."}},
     "required": ["product_id"]},
    price_of)
