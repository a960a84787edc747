"""The catalog's in-memory caches: a small thread-safe LRU (the shard reader's point lookups) and the
search-page cache every catalog client keeps (docs/decisions.md#page-cache). A built catalog is read-only,
so nothing cached ever goes stale."""
from __future__ import annotations

import threading
from collections import OrderedDict
from concurrent.futures import Future
from typing import Callable

from ecab.catalog.base import SearchPage
from ecab.catalog.search import search_args

SEARCH_CACHE_SIZE = 4096   # search pages kept per catalog client (SearchPageCache)
MISSING = object()         # what LRU.get returns for a key it does not hold (None is a value a cache keeps)


class LRU:
    """A small thread-safe LRU map (functools.lru_cache cannot be peeked or filled in bulk)."""

    def __init__(self, size: int):
        self.size = size
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            if key not in self._items:
                return MISSING
            self._items.move_to_end(key)
            return self._items[key]

    def put(self, key, value) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            if len(self._items) > self.size:
                self._items.popitem(last=False)


def page_key(query: str, mode: str, limit: int, offset: int, where: str | None) -> tuple | None:
    """A search's cache key, its arguments normalized (search_args); None for a search that finds nothing."""
    mode, limit, offset = search_args(query, mode, limit, offset)
    return None if mode is None else (query, mode, limit, offset, where)


def fresh(page: SearchPage) -> SearchPage:
    """A caller's own copy of a cached page (its hits list; the hits themselves are immutable)."""
    return SearchPage(hits=list(page.hits), total=page.total)


class SearchPageCache:
    """Search pages by their arguments (a built catalog is read-only); a search already running is waited for,
    not run again (both count as hits). Callers get a fresh SearchPage (the hits are immutable).
    See docs/decisions.md#page-cache."""

    def __init__(self, size: int = SEARCH_CACHE_SIZE):
        self._pages = LRU(size)
        self._running: dict[tuple, Future] = {}
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def clear(self) -> None:
        with self._lock:
            self._pages = LRU(self._pages.size)
            self.hits = self.misses = 0

    def stats(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses}

    def search(self, query: str, mode: str, limit: int, offset: int, where: str | None,
               run: Callable[[str, str, int, int, str | None], SearchPage]) -> SearchPage:
        """The catalog clients' `search`: normalize the arguments (search_args), then the cached page, the
        page another thread is computing, or `run(query, mode, limit, offset, where)`."""
        key = page_key(query, mode, limit, offset, where)
        if key is None:
            return SearchPage(hits=[], total=0)
        with self._lock:
            page = self._pages.get(key)
            running = self._running.get(key) if page is MISSING else None
            if page is MISSING and running is None:
                self.misses += 1
                mine = self._running[key] = Future()
            else:
                self.hits += 1
        if page is MISSING:
            page = running.result() if running is not None else self._run(key, mine, run)
        return fresh(page)

    def cached(self, query: str, mode: str, limit: int, offset: int, where: str | None) -> SearchPage | None:
        """The page if it is cached (a hit), else None without counting a miss: the caller then searches. Cheap
        enough for the event loop, so a cached page never queues behind the tool threads' searches."""
        key = page_key(query, mode, limit, offset, where)
        if key is None:
            return SearchPage(hits=[], total=0)
        page = self._pages.get(key)
        if page is MISSING:
            return None
        with self._lock:
            self.hits += 1
        return fresh(page)

    def _run(self, key: tuple, mine: Future, run: Callable) -> SearchPage:
        try:
            page = run(*key)
        except BaseException as exc:
            with self._lock:
                del self._running[key]
            mine.set_exception(exc)   # whoever waited for this search gets the same error
            raise
        with self._lock:   # cached before it stops running: no moment in which neither holds it
            self._pages.put(key, page)
            del self._running[key]
        mine.set_result(page)
        return page
