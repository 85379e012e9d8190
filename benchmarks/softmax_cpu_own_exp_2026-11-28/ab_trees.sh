#!/bin/bash
# Alternating A/B of two trees' softmax on one OpenCL CPU device (ab.txt):
#   bash ab_trees.sh BASE_TREE DEVICE_PREFIX OPS KIND ROUNDS
# BASE_TREE: another checkout's root (e.g. `git archive 04a073d | tar -x -C BASE`); the other
# tree is this checkout. KIND as benchmarks/softmax_cpu_passes_2026-11-28/ab.py takes it.
# Run with OCL_ICD_VENDORS pointing at the ICDs (DESIGN.md) and the venv's python first on PATH.
here=$(cd "$(dirname "$0")/../.." && pwd)
base=$(cd "$1" && pwd)
for r in $(seq "$5"); do
  for t in base work; do
    if [ $t = base ]; then pp=$base; else pp=$here; fi
    echo "$t: $(cd /tmp && XDG_CACHE_HOME=/tmp/xc_$t PYTHONPATH=$pp python "$here/benchmarks/softmax_cpu_passes_2026-11-28/ab.py" "$2" "$3" "$4" 2>&1 | grep -v Warn)"
  done
done
