"""clreduce bench: the harness measures what it says and its peers compute the same thing.

Timings are never asserted (benchmarks are programs); these tests check the report's
shape, that every clreduce figure is backed by a correct result, and that each peer
computes the reduction it is compared with.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from clreduce import bench, bench_peers


@pytest.mark.parametrize("op", bench_peers.PEER_OPS)
@pytest.mark.parametrize("peer", bench_peers.PEERS)
def test_peer_computes_the_same_reduction(peer, op):
    x = np.random.default_rng(3).standard_normal((37, 129), dtype=np.float32)
    try:
        fn = bench_peers.make_peer(peer, op, x.shape, x.dtype)
    except bench_peers.PeerUnavailable as exc:
        pytest.skip(str(exc))
    got = np.asarray(fn(x))
    want = getattr(np, op)(x.astype(np.float64), axis=-1)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_unknown_peer_and_op_are_refused():
    with pytest.raises(ValueError, match="unknown peer"):
        bench_peers.make_peer("tensorflow", "mean", (2, 3), np.float32)
    with pytest.raises(bench_peers.PeerUnavailable, match="argmax"):
        bench_peers.make_peer("numpy", "argmax", (2, 3), np.float32)


@pytest.mark.parametrize("rows, k, max_bytes, expected", [
    (442368, 128, 64 << 20, (131072, 128)),     # rows scaled down to the cap
    (8, 1000, 256 << 20, (8, 1000)),             # already small: unchanged
    (1, 268435456, 256 << 20, (1, 67108864)),    # one row over the cap: row shortened
])
def test_scaled_shape(rows, k, max_bytes, expected):
    assert bench.scaled_shape(rows, k, max_bytes) == expected


def test_bench_report_on_one_device(cl_device, tmp_path):
    path = tmp_path / "bench.json"
    report = bench.run(devices=[cl_device], op="sum", max_bytes=1 << 18, repeat=2, json_path=str(path),
                       peers=["numpy"], calls=20, shapes=[(64, 1000), (4, 65536)], log=lambda *a: None)
    assert json.loads(path.read_text()) == report
    (dev,) = report["devices"]
    assert [tuple(r["shape"]) for r in dev["rows"]] == [(64, 1000), (1, 65536)]
    for row in dev["rows"]:
        assert row["correct"], row
        assert set(row["gbps"]) == {"public", "device", "kernel", "numpy"}
        # the kernel figure is None only where the event timer is unusable (rusticl's Mesa
        # 22.3.6 reports 1 ns for any command), and says why; every other figure is measured
        assert all(v > 0 for k, v in row["gbps"].items() if k != "kernel")
        assert (row["gbps"]["kernel"] is None) == (row["event_timer"] is not None), row
        assert row["gbps"]["kernel"] is None or row["gbps"]["kernel"] > 0
        assert row["best_peer"] == "numpy"
    assert dev["axes"]["axis=0"]["correct"] and dev["axes"]["axis=-1"]["correct"]
    assert isinstance(dev["per_call_us"]["clreduce.sum(device array)"], float)
    text = bench.markdown(report)
    assert text.count("\n| 64×1000 |") == 1 and "numpy in / best peer" in text
