"""The row-op kernels' argument lists and buffer sizes, written once for every launcher.

The full paths (``opencl_rowops.run``, ``cuda/rowops.run``) and the per-call fast path's
launchers (``cl_row_launch``, ``cuda/row_fast``) all bind the arguments a plan's passes take
from :func:`kernel_args`, so a kernel signature lives in one place besides its ``.cl`` file
(cl_kernels/softmax.cl, row_norm.cl, row_scale.cl, row_scan.cl).

An argument is either a buffer name -- one of :data:`BUFFERS`, bound per call; a buffer a
plan does not use (no weight, no partials without a split) is bound to a placeholder the
kernel never touches -- or ``IN_OFFSET`` (the input's element offset: pyopencl arrays may
start inside their buffer; CUDA pointers include it), or a typed numpy scalar set once.
"""

from __future__ import annotations

import numpy as np

from ..plan_rowops import RowPlan, RowProblem
from ..plan_scan import has_walk_pass, lookback_workspace, rescue_bytes, scan_rescues

BUFFERS = ("input", "output", "weight", "bias", "stats", "partials", "carries")
IN_OFFSET = "in_offset"
_ZERO = np.uint64(0)


def kernel_args(p: RowPlan, problem: RowProblem, eps: float = 0.0) -> tuple[tuple, ...]:
    """Per pass of ``p``: the kernel's arguments, in order (see the module doc)."""
    if p.kernel_file == "row_scan.cl":
        # scan_rows(in, in_offset, out, out_offset, n_rows, row_len, chunk_len, carries)
        # `carries`: the look-back's workspace; a split scan's carries (and rows' flags); a
        # whole-row scan's flags where PHASE 4 walks rows; else never read (any buffer)
        carries = "partials" if p.lookback_tile else "carries" if p.split > 1 or has_walk_pass(p) else None
        return tuple((launch.reads, IN_OFFSET if launch.reads == "input" else _ZERO, launch.writes, _ZERO,
                      np.uint64(launch.n_rows), np.uint64(launch.row_len), np.uint64(launch.chunk_len),
                      carries or launch.writes)
                     for launch in p.passes)
    # (in, in_offset, out, out_offset, [weight, bias, stats | scales], partials, n_rows, row_len,
    # chunk_len[, eps]): every pass takes the same list (PHASE tells it partials from rows)
    args = ["input", IN_OFFSET, "output", _ZERO]
    if p.kernel_file == "row_norm.cl":
        args += ["weight", "bias", "stats"]
    elif p.kernel_file == "row_scale.cl":
        args.append("stats")
    args += ["partials"] + [np.uint64(value) for _, _, value in p.scalars]
    if p.kernel_file == "row_norm.cl":
        args.append(np.dtype(p.acc_dtype).type(eps))
    return (tuple(args),) * len(p.passes)


def param_dtype(p: RowPlan, problem: RowProblem) -> np.dtype:
    """The element type of the weight / bias buffers the kernel reads: float16 for a
    ``params_half`` problem (row_norm.cl PARAM_HALF), else the plan's math type."""
    return np.dtype("float16") if problem.params_half else np.dtype(p.acc_dtype)


def buffer_bytes(p: RowPlan, problem: RowProblem) -> dict[str, int]:
    """Bytes of each buffer a launch allocates (0: the plan does not use it): the rows out
    (not for moments), per-row statistics (moments: mean and var; scales: amax or scale),
    and a split plan's partials (and a split scan's carries; a look-back scan's workspace is
    its partials)."""
    acc = np.dtype(p.acc_dtype).itemsize
    rows = problem.rows
    sizes = {"output": 0 if problem.op == "moments" else rows * problem.row_len * np.dtype(p.out_dtype).itemsize,
             "stats": 2 * rows * acc if problem.op == "moments" else rows * acc if p.kernel_file == "row_scale.cl"
             else 0, "partials": 0, "carries": 0}
    if p.lookback_tile:
        sizes["partials"] = lookback_workspace(rows, problem.row_len, p.lookback_tile, acc)[1]
    elif p.kernel_file == "row_scan.cl" and p.split == 1 and scan_rescues(problem.op, problem.dtype):
        sizes["carries"] = rescue_bytes(p, rows, acc)  # the rows' flags (and walk state), if any
    elif p.split > 1:
        if p.kernel_file == "row_scan.cl":
            sizes["partials"] = sizes["carries"] = rows * p.split * acc
            if scan_rescues(problem.op, problem.dtype):  # the rows' flags and walk state after the carries
                sizes["carries"] = (sizes["carries"] + 15) // 16 * 16 + rescue_bytes(p, rows, acc)
        else:  # row_norm.cl's chunks also keep their shift and SCALED flag (PARTIAL_SLOTS 4)
            sizes["partials"] = rows * p.split * (4 if p.kernel_file == "row_norm.cl" else 2) * acc
            if p.flat_write:  # and then each row's write constants (FLAT_WRITE_SLOTS 4)
                sizes["partials"] += rows * 4 * acc
    return sizes


def stats_shape(problem: RowProblem) -> tuple[int, ...] | None:
    """The statistics buffer's shape: (2, rows) mean/var for moments, (rows,) for scales."""
    if problem.op == "moments":
        return (2, problem.rows)
    return (problem.rows,) if problem.op in ("absmax_scale", "quantize_int8") else None
