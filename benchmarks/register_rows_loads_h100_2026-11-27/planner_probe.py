"""Probe (GPU): the public call of float16 / float32 row ops with the planner patched per process.

    CFG=wide,mb512=2 PYTHONPATH=<repo> python planner_probe.py softmax:16384x16384 rms_norm:8192x32768:float32

CFG, comma-separated: "wide" (float16 softmax rows take the float32 rule's wide groups), "mbW=K"
(MIN_BLOCKS K for float16 register rows of NPER > 16 in groups of W), "regfloats=N" (N
elements a thread), "mbrms=K" (MIN_BLOCKS K for rms_norm rows of NPER 16), "wideops" (the norms
join the wide-group rule), "peer" (torch's time too). Prints GB/s (bytes read + written over
the median wall time of back-to-back calls on torch tensors), the max error against torch in
float32 and the plan.
"""
import dataclasses, os, sys, time, json
import torch
import clreduce
import clreduce.plan_rowops as pr

cfg = dict(kv.split("=") if "=" in kv else (kv, "1") for kv in os.environ.get("CFG", "").split(",") if kv)
orig_wg, orig_mb = pr._cuda_register_wg, pr.cuda_min_blocks
def wg_patch(caps, problem, force, wg, acc_bytes):
    if "wide" in cfg and problem.dtype == "float16":
        return orig_wg(caps, dataclasses.replace(problem, dtype="float32"), force, wg, acc_bytes)
    return orig_wg(caps, problem, force, wg, acc_bytes)
if "wideops" in cfg:
    pr.CUDA_WIDE_REGISTER_OPS = ("softmax", "log_softmax", "rms_norm", "layer_norm")
if "regfloats" in cfg:
    pr.REG_FLOATS = int(cfg["regfloats"])
def mb_patch(caps, problem, cache, nper, wg):
    if "mbrms" in cfg and problem.op == "rms_norm" and cache == "registers" and nper == 16:
        return int(cfg["mbrms"])
    if cache == "registers" and problem.dtype == "float16" and nper > 16 and f"mb{wg}" in cfg:
        return int(cfg[f"mb{wg}"])
    return orig_mb(caps, problem, cache, nper, wg)
pr._cuda_register_wg, pr.cuda_min_blocks = wg_patch, mb_patch

def timed(fn, xs, reps=20):
    for x in xs[:2]: fn(x)
    torch.cuda.synchronize()
    ts = []
    for b in range(9):
        t = time.perf_counter()
        for i in range(reps): fn(xs[i % len(xs)])
        torch.cuda.synchronize()
        ts.append((time.perf_counter() - t) / reps)
    return sorted(ts)[4]

res = {}
peer = "peer" in cfg
for spec in sys.argv[1:]:
    op, shp, *dt = spec.split(":")
    DT = getattr(torch, dt[0]) if dt else torch.half
    R, K = map(int, shp.split("x"))
    g = torch.Generator(device="cuda").manual_seed(0)
    xs = [(torch.randn(R, K, device="cuda", generator=g) * 3).to(DT) for _ in range(2)]
    w = torch.randn(K, device="cuda", generator=g).to(DT)
    if op in ("softmax", "log_softmax"):
        f = getattr(clreduce, op)
        tf = (lambda t: torch.softmax(t, -1)) if op == "softmax" else (lambda t: torch.log_softmax(t, -1))
        ref = tf(xs[0].float())
    elif op == "rms_norm":
        f = lambda t: clreduce.rms_norm(t, w)
        tf = lambda t: torch.nn.functional.rms_norm(t, (K,), w, 1e-6)
        ref = tf(xs[0].float()) if False else torch.nn.functional.rms_norm(xs[0].float(), (K,), w.float(), 1e-6)
    else:
        f = lambda t: clreduce.layer_norm(t, w)
        tf = lambda t: torch.nn.functional.layer_norm(t, (K,), w, None, 1e-5)
        ref = torch.nn.functional.layer_norm(xs[0].float(), (K,), w.float(), None, 1e-5)
    y = f(xs[0])
    from clreduce.backends.cuda.rowops import plan_for
    from clreduce.plan_rowops import RowProblem
    pl, _ = plan_for(0, RowProblem(op=op, rows=R, row_len=K, dtype=str(DT).split(".")[1], weight=op.endswith("norm"), params_half=op.endswith("norm") and DT == torch.half))
    plan_s = f"{pl.cache} wg{pl.wg_size} nper{pl.nper} mb{dict(pl.defines).get('MIN_BLOCKS')}"
    err = float((y.float() - ref).abs().max())
    nb = 2 * xs[0].numel() * xs[0].element_size()
    reps = max(20, int(4e9 / nb))
    gbs = nb / timed(f, xs, reps) / 1e9
    line = {"gbs": round(gbs), "err": err, "plan": plan_s}
    if peer:
        line["torch"] = round(nb / timed(tf, xs, reps) / 1e9)
    res[spec] = line
    print(os.environ.get("CFG", "main"), spec, line, flush=True)
    del xs
    torch.cuda.empty_cache()
