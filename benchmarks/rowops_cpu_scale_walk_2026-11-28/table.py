"""Markdown table of the base/new A/B in this folder: numpy-in GB/s (two runs each), device-array
GB/s, and numpy's formula, per device, op and shape. Run from this folder."""
import json
from pathlib import Path

for dev, label in (("3_0", "PoCL (pip)"), ("2_0", "Intel's CPU runtime")):
    runs = {(t, i): json.loads(Path(f"scale_{dev}_{t}_{i}.json").read_text())["results"] for t in ("base", "new") for i in (1, 2)}
    print(f"\n**{label}** (float32, 64 MB inputs, GB/s read + written)\n")
    print("| op | shape | numpy in: before | **now** | device array: before | now | numpy formula |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for j, row in enumerate(runs[("base", 1)]):
        def cells(tree, key):
            return " / ".join(f"{runs[(tree, i)][j]['gb'] / runs[(tree, i)][j][key]:.2f}" for i in (1, 2))
        numpy = min(r[j]["numpy_s"] for r in runs.values())
        print(f"| {row['op']} | {row['shape'][0]}×{row['shape'][1]} | {cells('base', 'clreduce_s')} | "
              f"**{cells('new', 'clreduce_s')}** | {cells('base', 'cl_device_s')} | {cells('new', 'cl_device_s')} | "
              f"{row['gb'] / numpy:.2f} |")
