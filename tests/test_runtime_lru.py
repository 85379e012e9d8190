"""The LRU behind every plan/program cache (OpenCL and CUDA): bound, order, threads."""

from __future__ import annotations

import threading

from clreduce.lru import LRU


def test_bound_and_least_recently_used_order():
    evicted = []
    cache = LRU(3, on_evict=lambda k, v: evicted.append(k))
    for k in "abc":
        cache.put(k, k.upper())
    assert cache.get("a") == "A"  # a is now the most recent
    cache.put("d", "D")
    assert evicted == ["b"] and len(cache) == 3
    assert cache.get("b") is None and cache.get("c") == "C"


def test_put_keeps_the_first_value_and_bound_can_change():
    size = [4]
    cache = LRU(lambda: size[0])
    assert cache.put("k", 1) == 1 and cache.put("k", 2) == 1
    for i in range(10):
        cache.put(i, i)
    assert len(cache) == 4
    size[0] = 2
    cache.put("x", 0)
    assert len(cache) == 2


def test_many_threads_never_exceed_the_bound_or_mix_values():
    cache = LRU(32)
    errors = []

    def work(seed):
        for i in range(5000):
            key = (seed * 7 + i) % 100
            got = cache.put(key, ("value", key))
            if got != ("value", key) or cache.get(key, ("value", key)) != ("value", key):
                errors.append((key, got))
            if len(cache) > 32:
                errors.append(("size", len(cache)))

    threads = [threading.Thread(target=work, args=(s,)) for s in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:5]
    assert len(cache) <= 32
