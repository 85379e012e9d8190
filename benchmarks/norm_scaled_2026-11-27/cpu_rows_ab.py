"""Interleaved before/after of row ops' public call on CPU OpenCL devices (numpy in and out).

    OCL_ICD_VENDORS=... python cpu_rows_ab.py BEFORE_TREE softmax,rms_norm float32,float16 \
        65536x128,8192x1000 intel,pocl

BEFORE_TREE: another tree's root (`git archive <rev> cl_kernels clreduce tools | tar -x -C DIR`),
loaded as the package clreduce_before; the tree holding this file is "after". Per cell, 15
rounds alternate two calls of each tree; printed is the best of each and after / before.
"""
import sys, time, statistics, importlib, importlib.util
from pathlib import Path
import numpy as np
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
import clreduce as after
def load_tree(root, name):
    spec = importlib.util.spec_from_file_location(name, root / "clreduce" / "__init__.py",
                                                  submodule_search_locations=[str(root / "clreduce")])
    m = importlib.util.module_from_spec(spec); sys.modules[name] = m; spec.loader.exec_module(m); return m
before = load_tree(Path(sys.argv[1]).resolve(), "clreduce_before")
ops = sys.argv[2].split(","); dts = sys.argv[3].split(","); shapes = [tuple(map(int, s.split("x"))) for s in sys.argv[4].split(",")]
devs = sys.argv[5].split(",")
rng = np.random.default_rng(0)
for dev in devs:
    qa = importlib.import_module("clreduce.backends.opencl").queue_for(dev)
    qb = importlib.import_module("clreduce_before.backends.opencl").queue_for(dev)
    for dt in dts:
        for (r, k) in shapes:
            x = rng.standard_normal((r, k)).astype(dt)
            w = rng.standard_normal(k).astype(dt)
            for op in ops:
                def call(pkg, q):
                    f = getattr(pkg, op)
                    return f(x, w, queue=q) if op.endswith("norm") else f(x, queue=q)
                ya, yb = call(after, qa), call(before, qb)
                assert np.allclose(ya.astype(np.float32), yb.astype(np.float32), rtol=2e-3, atol=2e-3, equal_nan=True)
                t = {"b": [], "a": []}
                for rnd in range(15):
                    for name, pkg, q in (("b", before, qb), ("a", after, qa)):
                        s = time.perf_counter(); call(pkg, q); call(pkg, q); t[name].append((time.perf_counter() - s) / 2)
                mb, ma = min(t["b"]) * 1e3, min(t["a"]) * 1e3
                print(f"{dev} {dt} {op} {r}x{k}: before {mb:.2f} ms, after {ma:.2f} ms, a/b {ma/mb:.3f}", flush=True)
