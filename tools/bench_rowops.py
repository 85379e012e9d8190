"""Benchmark the row ops against their peers in one run: numpy formulas and torch (2 threads) on
an OpenCL CPU device, or torch eager and torch.compile on a CUDA GPU (``--backend cuda``).

GB/s = (bytes read + bytes written) / median wall time of the public call, after warm-up,
rotating between several inputs so small arrays are not timed from cache.

OpenCL (default): two clreduce columns, numpy in -> numpy out (the headline) and
device-resident pyopencl arrays (call + queue.finish()); rows are scaled to ``--mb``.

CUDA: DESIGN.md's shapes at full size (and the issue's 648720 x 128 float16 rms_norm), on
device-resident arrays: clreduce's public call on a torch tensor, torch eager
(torch.softmax, F.log_softmax, F.rms_norm, F.layer_norm, torch.cumsum), torch.compile of
the same function, and the device's copy bandwidth (cudaMemcpyAsync of the same bytes,
read + write). Each cell: median over batches of (wall time of back-to-back calls, then a
synchronize) / calls, inputs rotated over >= 512 MB. Results are checked against the torch
eager result before timing (max abs error in the JSON).

    python tools/bench_rowops.py --quick                  # OpenCL smoke run, tiny sizes
    python tools/bench_rowops.py --device 0:0 --mb 256    # OpenCL, rows scaled to ~256 MB per input
    python tools/bench_rowops.py --backend cuda --json out.json               # every op and shape
    python tools/bench_rowops.py --backend cuda --ops rms_norm --dtypes float16 --shapes 648720x128
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import clreduce  # noqa: E402

# (rows, K) of DESIGN.md's list; rows are rescaled to --mb
SHAPES = [(442368, 128), (1048576, 32), (65536, 4096), (8192, 1000), (4096, 65536), (64, 4194304), (4194304, 64)]
OPS = ("softmax", "log_softmax", "rms_norm", "layer_norm", "absmax_scale", "quantize_int8", "cumsum")


def numpy_formula(op):
    def softmax(x):
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    def log_softmax(x):
        s = x - x.max(-1, keepdims=True)
        return s - np.log(np.exp(s).sum(-1, keepdims=True))

    def rms_norm(x):
        return x / np.sqrt(np.mean(x * x, -1, keepdims=True) + 1e-6)

    def layer_norm(x):
        return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)

    def absmax_scale(x):
        a = np.abs(x).max(-1, keepdims=True)
        return x / a, a

    def quantize_int8(x):
        s = np.abs(x).max(-1, keepdims=True) / 127
        return np.rint(x / s).astype(np.int8), s

    def cumsum(x):
        return np.cumsum(x, -1)

    def logcumsumexp(x):
        return np.logaddexp.accumulate(x, -1)

    return locals()[op]


def torch_formula(op):
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return None
    torch.set_num_threads(2)
    table = {
        "softmax": lambda t: torch.softmax(t, -1),
        "log_softmax": lambda t: torch.log_softmax(t, -1),
        "rms_norm": lambda t: F.rms_norm(t, (t.shape[-1],), eps=1e-6),
        "layer_norm": lambda t: F.layer_norm(t, (t.shape[-1],), eps=1e-5),
        "absmax_scale": lambda t: (lambda a: (t / a, a))(t.abs().amax(-1, keepdim=True)),
        "quantize_int8": lambda t: (lambda s: (torch.round(t / s).to(torch.int8), s))(t.abs().amax(-1, keepdim=True) / 127),
        "cumsum": lambda t: torch.cumsum(t, -1),
        "cumprod": lambda t: torch.cumprod(t, -1),
        "logcumsumexp": lambda t: torch.logcumsumexp(t, -1),
    }
    fn = table[op]
    return lambda x: fn(torch.from_numpy(x))


def bytes_moved(op, rows, k, itemsize=4):
    read = rows * k * itemsize
    written = rows * k * (1 if op == "quantize_int8" else itemsize)
    if op in ("absmax_scale", "quantize_int8"):
        written += rows * 4
    return read + written


def median_time(fn, inputs, repeat, finish=None):
    for x in inputs[:2]:
        fn(x)
    if finish:
        finish()
    times = []
    for i in range(repeat):
        x = inputs[i % len(inputs)]
        t0 = time.perf_counter()
        fn(x)
        if finish:
            finish()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", choices=("opencl", "cuda"), default="opencl")
    ap.add_argument("--device", default=None, help="CLREDUCE-style selector (P:D or a name); default device otherwise")
    ap.add_argument("--mb", type=float, default=256.0, help="OpenCL: input size per array in MB (rows are scaled)")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--ops", default=None, help=f"comma-separated (default OpenCL: {','.join(OPS)}; "
                                                f"CUDA: {','.join(CUDA_OPS)})")
    ap.add_argument("--quick", action="store_true", help="smoke run: small arrays, few repeats, 3 shapes")
    ap.add_argument("--dtypes", default="float32,float16", help="CUDA: input dtypes")
    ap.add_argument("--shapes", default=None, help="CUDA: RxK list, e.g. 442368x128,648720x128")
    ap.add_argument("--no-compile", action="store_true", help="CUDA: skip the torch.compile column")
    ap.add_argument("--batches", type=int, default=7, help="CUDA: timed batches per cell")
    ap.add_argument("--json", default=None, help="write the results here as JSON")
    args = ap.parse_args(argv)
    if args.backend == "cuda":
        return cuda_main(args)
    if args.quick:
        args.mb, args.repeat = 1.0, 3
    shapes = SHAPES[:3] if args.quick else SHAPES
    from clreduce.backends.opencl import queue_for

    queue = queue_for(args.device)
    import pyopencl.array as cla

    results = []
    print(f"device: {queue.device.name} | GB/s = (read + written) / median wall time")
    print(f"{'op':14s} {'shape':>16s} {'clreduce':>9s} {'cl-dev':>9s} {'numpy':>9s} {'torch2t':>9s}")
    rng = np.random.default_rng(0)
    for op in (args.ops or ",".join(OPS)).split(","):
        fn = getattr(clreduce, op)
        ref = numpy_formula(op)
        tor = torch_formula(op)
        for rows, k in shapes:
            rows = max(1, int(args.mb * 1e6 / 4 / k)) if k <= args.mb * 1e6 / 4 else 1
            k = min(k, int(args.mb * 1e6 / 4))
            inputs = [rng.standard_normal((rows, k)).astype(np.float32) for _ in range(2)]
            moved = bytes_moved(op, rows, k) / 1e9
            kw = {"axis": -1} if op in ("cumsum", "cumprod", "logcumsumexp") else {}
            cells = [median_time(lambda x: fn(x, queue=queue, **kw), inputs, args.repeat)]
            dev_inputs = [cla.to_device(queue, x) for x in inputs]
            cells.append(median_time(lambda x: fn(x, **kw), dev_inputs, args.repeat, finish=queue.finish))
            cells.append(median_time(ref, inputs, args.repeat))
            cells.append(median_time(tor, inputs, args.repeat) if tor else None)
            text = " ".join(f"{moved / t:9.2f}" if t else f"{'-':>9s}" for t in cells)
            print(f"{op:14s} {f'{rows}x{k}':>16s} {text}", flush=True)
            results.append({"op": op, "shape": [rows, k], "dtype": "float32", "gb": moved,
                            **{name: t for name, t in zip(("clreduce_s", "cl_device_s", "numpy_s", "torch2t_s"), cells)}})
    if args.json:
        Path(args.json).write_text(json.dumps({"device": queue.device.name, "results": results}, indent=1))


# ---- CUDA ---------------------------------------------------------------------------------------
CUDA_SHAPES = [(442368, 128), (1048576, 32), (16777216, 16), (65536, 4096), (8192, 1000), (4096, 65536),
               (64, 4194304), (1, 268435456), (4194304, 64)]
QUACK = (648720, 128)  # the rms_norm shape (float16), where QuACK reaches ~3.1 TB/s
CUDA_OPS = ("softmax", "log_softmax", "rms_norm", "layer_norm", "cumsum")


def cuda_torch_op(op, k, dtype):
    """(torch function, weight tensor or None) for the row op over the last axis."""
    import torch
    import torch.nn.functional as F

    w = torch.ones(k, device="cuda", dtype=dtype) if op in ("rms_norm", "layer_norm") else None
    table = {
        "softmax": lambda t: torch.softmax(t, -1),
        "log_softmax": lambda t: F.log_softmax(t, -1),
        "rms_norm": lambda t: F.rms_norm(t, (k,), w, eps=1e-6),
        "layer_norm": lambda t: F.layer_norm(t, (k,), w, None, eps=1e-5),
        "cumsum": lambda t: torch.cumsum(t, -1),
        "cumprod": lambda t: torch.cumprod(t, -1),
        "logcumsumexp": lambda t: torch.logcumsumexp(t, -1),
    }
    return table[op], w


def cuda_clreduce_op(op, w):
    fn = getattr(clreduce, op)
    if op in ("rms_norm", "layer_norm"):
        return lambda t: fn(t, w)
    if op in ("cumsum", "cumprod", "logcumsumexp"):
        return lambda t: fn(t, axis=-1)
    return fn


def wall_ms(fn, inputs, batches: int, target_ms: float = 20.0, warmup: int = 3) -> float:
    """Median over batches of (wall time of back-to-back calls + one synchronize) / calls."""
    import torch

    for i in range(warmup):
        fn(inputs[i % len(inputs)])
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(3):
        fn(inputs[i % len(inputs)])
    torch.cuda.synchronize()
    est = max((time.perf_counter() - t0) / 3 * 1e3, 1e-3)
    calls = max(len(inputs), int(min(400, max(3, math.ceil(target_ms / est)))))
    per_call = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for i in range(calls):
            fn(inputs[i % len(inputs)])
        torch.cuda.synchronize()
        per_call.append((time.perf_counter() - t0) * 1e3 / calls)
    return statistics.median(per_call)


def cuda_main(args) -> int:
    import torch

    ops = (args.ops or ",".join(CUDA_OPS)).split(",")
    dtypes = args.dtypes.split(",")
    if args.shapes:
        shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    else:
        shapes = CUDA_SHAPES[:3] if args.quick else CUDA_SHAPES
    rotate_bytes = (64 if args.quick else 512) << 20
    props = torch.cuda.get_device_properties(0)
    # one compiled lambda per op sees every shape: past dynamo's recompile limit (8) it would
    # silently run eager, and the "compile" column of the last shapes would be torch eager
    import torch._dynamo

    for name in ("recompile_limit", "cache_size_limit"):
        if hasattr(torch._dynamo.config, name):
            setattr(torch._dynamo.config, name, 64)
    print(f"device: {props.name} | torch {torch.__version__} | GB/s = (read + written) / median wall time")
    cols = ("clreduce", "torch", "compile", "copy")
    print(f"{'op':12s} {'dtype':8s} {'shape':>14s} " + " ".join(f"{c:>9s}" for c in cols) + "   (GB/s)")
    results = []
    cases = [(op, dt, shape) for op in ops for dt in dtypes for shape in shapes]
    if not args.shapes and "rms_norm" in ops and QUACK not in shapes:
        cases.append(("rms_norm", "float16", QUACK))
    for op, dtype_name, (rows, k) in cases:
        dtype = getattr(torch, dtype_name)
        size = rows * k * torch.tensor([], dtype=dtype).element_size()
        copies = max(2, math.ceil(rotate_bytes / size))
        gen = torch.Generator(device="cuda").manual_seed(0)
        base = torch.randn((rows, k), device="cuda", generator=gen, dtype=torch.float32)
        inputs = [(base + 0.001 * i).to(dtype) for i in range(copies)]
        del base
        peer, w = cuda_torch_op(op, k, dtype)
        ours = cuda_clreduce_op(op, w)
        want, got = peer(inputs[0]), ours(inputs[0])
        err = float((got.float() - want.float()).abs().max())
        # a float64 reference: torch's own float16 cumsum adds in float16 (each partial sum
        # rounded to half), so an error "vs torch" there is mostly torch's
        peer64, _ = cuda_torch_op(op, k, torch.float64)
        ref = peer64(inputs[0].double())
        err64 = float((got.double() - ref).abs().max())
        torch_err64 = float((want.double() - ref).abs().max())
        del ref
        row = {"op": op, "dtype": dtype_name, "shape": [rows, k], "max_abs_err_vs_torch": err,
               "max_abs_err_vs_float64": err64, "torch_max_abs_err_vs_float64": torch_err64,
               "gb": 2 * size / 1e9}
        row["clreduce_ms"] = wall_ms(ours, inputs, args.batches)
        row["torch_ms"] = wall_ms(peer, inputs, args.batches)
        row["compile_ms"] = None
        if not args.no_compile:
            try:
                compiled = torch.compile(peer, dynamic=False)
                compiled(inputs[0])
                row["compile_ms"] = wall_ms(compiled, inputs, args.batches)
            except Exception as exc:  # noqa: BLE001 - a peer that cannot compile is reported, not fatal
                row["compile_error"] = f"{type(exc).__name__}: {exc}"[:300]
        dst = torch.empty_like(inputs[0])
        row["copy_ms"] = wall_ms(lambda x: dst.copy_(x), inputs, args.batches)
        del inputs, dst
        torch.cuda.empty_cache()
        cells = [row[f"{c}_ms"] for c in cols]
        text = " ".join(f"{row['gb'] / (t / 1e3):9.0f}" if t else f"{'-':>9s}" for t in cells)
        print(f"{op:12s} {dtype_name:8s} {f'{rows}x{k}':>14s} {text}   err {err:.2g} err64 {err64:.2g} "
              f"torch_err64 {torch_err64:.2g}", flush=True)
        results.append(row)
    if args.json:
        Path(args.json).write_text(json.dumps({"device": props.name, "torch": torch.__version__,
                                               "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
