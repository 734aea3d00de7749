"""Cursor walking: pass ``cursors.next`` back as ``after`` until it is null (or, from a ``before``
cursor, ``cursors.previous`` back as ``before``); a cursor seen before ends it."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from analytics_provider.exceptions import PaginationLoopError, bounded

FetchPage = Callable[[str | None], Mapping[str, Any]]


class Pages:
    """A lazy iterator over the items of a list operation.

    A page is fetched only when the caller needs its first item; ``pages()`` walks whole pages
    (for their side data, such as the user counters of List Users). Iterating a second time
    starts again from the first page. ``backwards``: the walk started from a ``before`` cursor and
    follows ``cursors.previous``, so pages come from the later ones to the earlier ones (the items
    of each page in the service's order).
    """

    def __init__(
        self, fetch: FetchPage, items_key: str, after: str | None = None, operation: str = "", backwards: bool = False
    ) -> None:
        self._fetch = fetch
        self._items_key = items_key
        self._operation = operation
        self._after = after
        self._follow = "previous" if backwards else "next"
        self.requests = 0

    def pages(self) -> Iterator[Mapping[str, Any]]:
        after = self._after
        seen = {after}
        while True:
            page = self._fetch(after)
            self.requests += 1
            yield page
            cursors = page.get("cursors")
            after = cursors.get(self._follow) if isinstance(cursors, Mapping) else None
            if not after or not page.get(self._items_key):
                return
            if after in seen:
                raise PaginationLoopError(
                    f"{self._operation or 'the list'} answered the cursor {bounded(str(after), 100)!r} a second time "
                    f"(after {self.requests} pages); following it would never end"
                )
            seen.add(after)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for page in self.pages():
            yield from page.get(self._items_key) or []
