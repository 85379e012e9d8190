"""Public-call GB/s of register-row plans with 1, 2, 4 rows a trip (RowForce.trip_rows), CUDA."""
import sys, os, time
sys.path.insert(0, "tools")
import torch
import bench_rowops as br
import clreduce
from clreduce.plan_rowops import RowForce, RowProblem
from clreduce.backends.cuda.rowops import plan_for
from clreduce.plan import UnsupportedOnDevice
T0 = time.time()
LIMIT = float(os.environ.get("LIMIT", "500"))
ops = os.environ.get("OPS", "layer_norm,rms_norm,softmax").split(",")
dts = os.environ.get("DTS", "float16,float32").split(",")
shapes = os.environ.get("SHAPES", "16777216x16,1048576x32,4194304x64,442368x128").split(",")
trips = [int(v) for v in os.environ.get("TRIPS", "1,2,4").split(",")]
for op in ops:
    for dt in dts:
        for shp in shapes:
            if time.time() - T0 > LIMIT:
                print("TIME LIMIT"); sys.exit()
            rows, k = (int(v) for v in shp.split("x"))
            dtype = getattr(torch, dt)
            size = rows * k * dtype.itemsize
            copies = max(2, -(-(512 << 20) // size))
            base = torch.randn((rows, k), device="cuda", dtype=torch.float32)
            xs = [(base + 0.001 * i).to(dtype) for i in range(copies)]
            del base
            peer, w = br.cuda_torch_op(op, k, dtype)
            norm = op in ("rms_norm", "layer_norm")
            prob = RowProblem(op, rows, k, dt, weight=norm, bias=False, params_half=(norm and dt == "float16"))
            fn = getattr(clreduce, op)
            call = (lambda t, f=None: fn(t, w, force=f)) if norm else (lambda t, f=None: fn(t, force=f))
            ref = None
            out = []
            for tr in trips:
                f = RowForce(trip_rows=tr)
                try:
                    p, _ = plan_for(0, prob, f)
                    got = call(xs[0], f)
                except UnsupportedOnDevice as e:
                    out.append(f"t{tr} -"); continue
                if ref is None:
                    ref = got
                same = torch.equal(got, ref) or bool(((got == ref) | (got.isnan() & ref.isnan())).all())
                ms = br.wall_ms(lambda t: call(t, f), xs, 3)
                out.append(f"t{tr} {2 * size / ms / 1e6:5.0f}{'' if same else ' DIFF'}")
            print(f"{op:10s} {dt:8s} {shp:12s} lanes {p.lanes:3d} nper {p.nper:2d} | " + " | ".join(out), flush=True)
            del xs
            torch.cuda.empty_cache()
