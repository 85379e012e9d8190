"""tools/bench_cuda.py's report says why a target was missed from the row's own numbers
(no GPU: rows written by hand)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_TOOL = Path(__file__).resolve().parent.parent / "tools" / "bench_cuda.py"
_spec = importlib.util.spec_from_file_location("bench_cuda", _TOOL)
bench_cuda = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_cuda)


def _row(rows, k, **gbps):
    return {"dtype": "float32", "rows": rows, "k": k, "bytes": rows * k * 4,
            "timings": {name: {"gbps": value} for name, value in gbps.items()}}


def _reason(row):
    (target,) = bench_cuda.targets({"results": [row]})
    assert not target["met"]
    return bench_cuda.miss_reason(row, target)


def test_a_kernel_short_of_the_copy_is_named_as_the_kernel():
    # 1 GiB of rows of 16 (a copy target): the kernel at 0.84 of the copy, as on the H200 before mean_div
    row = _row(16777216, 16, clreduce=3572, kernel=3583, torch=623, cupy=3027, copy=4269)
    assert "the kernel itself falls short: 3583 GB/s" in _reason(row)


def test_a_kernel_that_meets_it_behind_a_slow_call_is_host_bound():
    # 32 MB: 12.8 us of kernel, 18.4 us a public call, torch 13.2 us a call
    row = _row(8192, 1000, clreduce=1780, kernel=2558, torch=2484, cupy=728, copy=3571)
    reason = _reason(row)
    assert "the kernel alone meets it (2558 GB/s, 12.8 us a call)" in reason
    assert "18.4 us a call back to back against torch's 13.2: host-bound" in reason
