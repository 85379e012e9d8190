"""``clreduce probe --verify``: run each sub-group mode the device offers on a few problems
against numpy, and mark modes that build but answer wrong as bad (same memory as a build
failure: the planner then moves down built-in -> shuffle -> local for this device).

Drivers miscompile sub-group code (Adreno E031.38.x, llama.cpp #29081): a failed build is
caught at run time, a wrong answer only by a check like this one.
"""

from __future__ import annotations

import numpy as np

from ..plan import Force, UnsupportedOnDevice
from . import cl_fallback

# (op, dtype, shape): a scalar sum with a vector tail, an exact integer max, a two-moment
# state, an index state, a multiplicative one; rows long and short
CASES = [
    ("sum", "float32", (37, 1000)),
    ("max", "int32", (64, 257)),
    ("var", "float32", (16, 4099)),
    ("argmax", "float32", (33, 300)),
    ("prod", "float32", (8, 40)),
    ("sum", "int32", (3, 100003)),
]
# float32 results of up to 1e5 values against numpy's float64-free answer: sums are compared
# with an absolute bound scaled by sum|x| (rounding grows with it); other ops relatively
RTOL = 1e-4


def _modes(caps) -> list[str]:
    modes = []
    if caps.subgroup_reduce_builtins:
        modes.append("builtin")
    if caps.khr_shuffle or caps.qcom_shuffle or caps.ptx_shuffle:
        modes.append("shuffle")
    return modes + ["local"]


def _data(dtype: str, shape, rng) -> np.ndarray:
    if dtype.startswith("int"):
        return rng.integers(-1000, 1000, size=shape, dtype=dtype)
    if dtype == "float32":
        return (rng.random(shape, dtype=np.float32) + 0.5).astype(dtype)  # prod stays finite-ish
    raise ValueError(dtype)


def _close(op: str, x: np.ndarray, got, want) -> bool:
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return False
    if x.dtype.kind in "iu" or op in ("argmax", "argmin", "max", "min"):
        return bool(np.array_equal(got, want))
    if op == "sum":
        return bool(np.all(np.abs(got - want) <= RTOL * np.abs(x).sum(axis=-1)))
    return bool(np.allclose(got, want, rtol=RTOL, atol=0))


def verify_device(device) -> list[dict]:
    """Run every sub-group mode of ``device`` on CASES; return one dict per (mode, case):
    ``{"mode", "planned_mode", "op", "dtype", "shape", "status"}`` with status "ok",
    "wrong", "build failed" or "not applicable". Wrong and failing modes are marked bad."""
    import clreduce

    from . import opencl

    caps = opencl.caps_of(device)
    queue = opencl.queue_for(device)
    rng = np.random.default_rng(11)
    report = []
    for mode in _modes(caps):
        for op, dtype, shape in CASES:
            entry = {"mode": mode, "op": op, "dtype": dtype, "shape": list(shape)}
            force = Force(sg_mode=mode)
            x = _data(dtype, shape, rng)
            try:
                problem = opencl.Problem(rows=shape[0], row_len=shape[1], dtype=dtype, op=op)
                launch_plan, _ = opencl.plan_for(queue, problem, force)
                entry["planned_mode"] = launch_plan.sg_mode
                got = getattr(clreduce, op)(x, axis=-1, device=device, force=force)
            except UnsupportedOnDevice:
                entry["status"] = "not applicable"
            except opencl.KernelBuildError as exc:
                entry["status"] = "build failed"
                if cl_fallback.can_fall_back(entry.get("planned_mode", mode)):
                    cl_fallback.mark_bad(caps, entry.get("planned_mode", mode), exc.log, "failed to build")
            else:
                ok = _close(op, x, got, getattr(np, op)(x, axis=-1))
                entry["status"] = "ok" if ok else "wrong"
                if not ok and cl_fallback.can_fall_back(launch_plan.sg_mode):
                    cl_fallback.mark_bad(caps, launch_plan.sg_mode, f"{op} {dtype} {shape} differs from numpy",
                                         "answered wrong in probe --verify")
            report.append(entry)
    return report
