"""Benchmark the row ops against numpy formulas and torch (CPU, 2 threads) in one run.

GB/s = (bytes read + bytes written) / median wall time of the public call, after warm-up,
rotating between several inputs so small arrays are not timed from cache. Two clreduce
columns: numpy in -> numpy out (the headline), and device-resident pyopencl arrays (call +
queue.finish()).

    python tools/bench_rowops.py --quick                  # smoke run, tiny sizes
    python tools/bench_rowops.py --device 0:0 --mb 256    # rows scaled so each input is ~256 MB
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import clreduce
from clreduce.backends.opencl import queue_for

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
    ap.add_argument("--device", default=None, help="CLREDUCE-style selector (P:D or a name); default device otherwise")
    ap.add_argument("--mb", type=float, default=256.0, help="input size per array in MB (rows are scaled)")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--quick", action="store_true", help="smoke run: 1 MB arrays, 3 repeats, 3 shapes")
    args = ap.parse_args(argv)
    if args.quick:
        args.mb, args.repeat = 1.0, 3
    shapes = SHAPES[:3] if args.quick else SHAPES
    queue = queue_for(args.device)
    import pyopencl.array as cla

    print(f"device: {queue.device.name} | GB/s = (read + written) / median wall time")
    print(f"{'op':14s} {'shape':>16s} {'clreduce':>9s} {'cl-dev':>9s} {'numpy':>9s} {'torch2t':>9s}")
    rng = np.random.default_rng(0)
    for op in args.ops.split(","):
        fn = getattr(clreduce, op)
        ref = numpy_formula(op)
        tor = torch_formula(op)
        for rows, k in shapes:
            rows = max(1, int(args.mb * 1e6 / 4 / k)) if k <= args.mb * 1e6 / 4 else 1
            k = min(k, int(args.mb * 1e6 / 4))
            inputs = [rng.standard_normal((rows, k)).astype(np.float32) for _ in range(2)]
            moved = bytes_moved(op, rows, k) / 1e9
            kw = {"axis": -1} if op == "cumsum" else {}
            cells = [median_time(lambda x: fn(x, queue=queue, **kw), inputs, args.repeat)]
            dev_inputs = [cla.to_device(queue, x) for x in inputs]
            cells.append(median_time(lambda x: fn(x, **kw), dev_inputs, args.repeat, finish=queue.finish))
            cells.append(median_time(ref, inputs, args.repeat))
            cells.append(median_time(tor, inputs, args.repeat) if tor else None)
            text = " ".join(f"{moved / t:9.2f}" if t else f"{'-':>9s}" for t in cells)
            print(f"{op:14s} {f'{rows}x{k}':>16s} {text}", flush=True)


if __name__ == "__main__":
    main()
