"""A small thread-safe LRU mapping for the backends' plan and program caches.

Every cache a backend owns is one of these, bounded by ``CLREDUCE_CACHE_SIZE`` (see
config.py), so a process that reduces many distinct shapes keeps a fixed working set.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable, Hashable


class LRU:
    """Mapping with at most ``maxsize`` entries; the least recently used one goes first.

    ``get`` and ``put`` take one lock (tens of nanoseconds uncontended; ``get_unlocked``
    takes none, for keys that allow it). Values are built
    outside the lock by the caller; ``put`` keeps the first value stored for a key, so two
    threads that raced to build the same entry end up sharing one.

    Parameters
    ----------
    maxsize : int or callable
        The bound, or a function returning it (read on every insert, so a test or a user
        can change ``CLREDUCE_CACHE_SIZE`` at run time).
    on_evict : callable, optional
        Called as ``on_evict(key, value)`` outside the lock for every dropped entry.
    """

    def __init__(self, maxsize: int | Callable[[], int], on_evict: Callable | None = None):
        self._maxsize = maxsize
        self._data: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self._on_evict = on_evict

    @property
    def maxsize(self) -> int:
        return max(1, int(self._maxsize() if callable(self._maxsize) else self._maxsize))

    def get(self, key: Hashable, default=None):
        with self._lock:
            try:
                self._data.move_to_end(key)
            except KeyError:
                return default
            return self._data[key]

    def get_unlocked(self, key: Hashable, default=None):
        """``get`` without the lock, for a per-call path where an uncontended lock is a cost.

        Only for keys whose ``hash`` and ``==`` run no Python code (tuples of str, int,
        bytes, None, types, numpy/torch dtypes): each OrderedDict step is then one atomic
        C call under the GIL. A key evicted between the two steps reads as missing.
        """
        data = self._data
        try:
            data.move_to_end(key)
            return data[key]
        except KeyError:
            return default

    def put(self, key: Hashable, value):
        """Store ``value`` unless ``key`` is present; return the stored value."""
        bound = self.maxsize
        evicted = []
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                return self._data[key]
            self._data[key] = value
            while len(self._data) > bound:
                evicted.append(self._data.popitem(last=False))
        self._evicted(evicted)
        return value

    __setitem__ = put

    def discard_if(self, predicate: Callable[[Hashable, object], bool]) -> int:
        """Drop every entry for which ``predicate(key, value)`` is true; return how many went."""
        with self._lock:
            # a snapshot (one C call): get_unlocked may reorder the dict while predicate runs
            gone = [(k, self._data.pop(k)) for k in [k for k, v in list(self._data.items()) if predicate(k, v)]]
        self._evicted(gone)
        return len(gone)

    def clear(self) -> None:
        with self._lock:
            gone = list(self._data.items())
            self._data.clear()
        self._evicted(gone)

    def items(self) -> list:
        with self._lock:
            return list(self._data.items())

    def __len__(self) -> int:
        with self._lock:  # never observe the moment between an insert and its eviction
            return len(self._data)

    def __contains__(self, key) -> bool:
        return key in self._data

    def _evicted(self, items) -> None:
        if self._on_evict is not None:
            for key, value in items:
                self._on_evict(key, value)
