"""Cursor walking: pass ``cursors.next`` back as ``after`` until it is null."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

FetchPage = Callable[[str | None], Mapping[str, Any]]


class Pages:
    """A lazy iterator over the items of a list operation.

    A page is fetched only when the caller needs its first item; ``pages()`` walks whole pages
    (for their side data, such as the user counters of List Users). Iterating a second time
    starts again from the first page.
    """

    def __init__(self, fetch: FetchPage, items_key: str, after: str | None = None) -> None:
        self._fetch = fetch
        self._items_key = items_key
        self._after = after
        self.requests = 0

    def pages(self) -> Iterator[Mapping[str, Any]]:
        after = self._after
        while True:
            page = self._fetch(after)
            self.requests += 1
            yield page
            after = (page.get("cursors") or {}).get("next")
            if not after or not page.get(self._items_key):
                return

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for page in self.pages():
            yield from page.get(self._items_key) or []
