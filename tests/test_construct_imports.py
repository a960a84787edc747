"""No import cycle runs through ecab.construct (issue 16, item 1).

grimp (installed with import-linter) reads every import, function-level ones included, so a cycle cannot hide
inside a function. A construct module found in a strongly connected component of the import graph is part of a
cycle; the failure names the modules and one import chain that closes the loop. What two modules share belongs
to the module that owns the concept (e.g. construct/category_products.py), not to a lazy import.
"""
from __future__ import annotations

import grimp

PACKAGE = "ecab.construct"


def strongly_connected(graph) -> list[set[str]]:
    """The import graph's components of more than one module (Tarjan, iterative: no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def test_the_cycle_finder_finds_a_cycle():
    class Graph:   # a -> b -> c -> a, and d -> a
        edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
        modules = set(edges)

        def find_modules_directly_imported_by(self, module):
            return self.edges[module]

    assert strongly_connected(Graph()) == [{"a", "b", "c"}]


def test_no_import_cycle_runs_through_construct():
    graph = grimp.build_graph("ecab", include_external_packages=False, cache_dir=None)
    cycles = [c for c in strongly_connected(graph) if any(m == PACKAGE or m.startswith(PACKAGE + ".") for m in c)]
    messages = []
    for component in cycles:
        first, *_ = sorted(m for m in component if m.startswith(PACKAGE))
        back = next(m for m in sorted(component) if m != first and graph.chain_exists(m, first)
                    and graph.chain_exists(first, m))
        loop = graph.find_shortest_chain(first, back) + graph.find_shortest_chain(back, first)[1:]
        messages.append(f"{sorted(component)}: {' -> '.join(loop)}")
    assert not cycles, "import cycles through ecab.construct:\n" + "\n".join(messages)
