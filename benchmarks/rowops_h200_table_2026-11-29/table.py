"""The four JSON files of this folder -> the README's table: GB/s of the public call on torch
tensors beside torch eager, torch.compile and the copy, with clreduce / best peer."""
import json
import pathlib

here = pathlib.Path(__file__).parent
print("| op | dtype | shape | clreduce | torch | torch.compile | copy | clreduce / best peer |")
print("|---|---|---|---:|---:|---:|---:|---:|")
for name in ("softmax", "log_softmax", "rms_norm", "layer_norm"):
    for r in json.loads((here / f"{name}.json").read_text())["results"]:
        gbs = {k: r["gb"] * 1e3 / r[f"{k}_ms"] for k in ("clreduce", "torch", "compile", "copy") if r.get(f"{k}_ms")}
        best = max(gbs["torch"], gbs.get("compile", 0))
        shape = "×".join(map(str, r["shape"]))
        print(f"| {r['op']} | {r['dtype']} | {shape} | {gbs['clreduce']:.0f} | {gbs['torch']:.0f} | "
              f"{gbs.get('compile', 0):.0f} | {gbs['copy']:.0f} | {gbs['clreduce'] / best:.2f} |")
