"""A loop-owning agent: it runs its own loop and calls tools when it likes, as agent frameworks do.

Run it:  python -m ecab.run model=example-loop-agent
(conf/model/example-loop-agent.yaml: {kind: python, target: examples.loop_agent:shop}).

`session.tools` are the episode's tools as OpenAI tool definitions (pass them to any chat-completions client),
`await session.call(name, arguments)` runs one through the episode and returns its parsed result. ecab keeps
the budget, the record and the judging: recommend_product ends the episode, and a call past the budget is
never answered (the loop is cancelled).
"""
from __future__ import annotations

import ecab


async def shop(session: ecab.ToolSession) -> str:
    """Search with the query, then with each profile preference added, keep the products seen most often,
    check their details, and recommend the best-rated."""
    profile = (await session.call("get_user_profile")).get("profile") or {}
    preferences = [str(v) for v in profile.values() if isinstance(v, str) and len(v) < 40]
    seen: dict[str, int] = {}
    for query in [session.query] + [f"{session.query} {p}" for p in preferences[:3]]:
        if session.calls_left <= 3:
            break
        page = await session.call("search_products", {"query": query})
        for hit in page.get("products", [])[:10]:
            seen[hit["product_id"]] = seen.get(hit["product_id"], 0) + 1
    shortlist = sorted(seen, key=lambda p: -seen[p])[:5]
    if not shortlist:
        return "nothing matched the query"        # a loop that returns without recommending: no_tool_call
    stats = await session.call("get_product_review_stats", {"product_ids": shortlist})
    rating = {row["product_id"]: row.get("average_rating") or 0 for row in stats.get("products", [])}
    best = max(shortlist, key=lambda p: (seen[p], rating.get(p, 0)))
    if "get_price" in session.tool_names:          # a user's tool (examples/extra_tool.py), when offered
        price = await session.call("get_price", {"product_id": best})
        if "error" in price:
            return f"could not price {best}"
    await session.call("recommend_product", {"product_id": best, "reasoning": "seen in most searches"})
    return "recommended"
