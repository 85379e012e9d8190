#!/usr/bin/env bash
# A/B of logcumsumexp between two trees on one OpenCL device, three alternating rounds
# (base, new, base, new, base, new); each tree runs its own tools/bench_rowops.py with a fresh
# program cache. Usage: ab.sh BASE_TREE NEW_TREE DEVICE OUTFILE [extra bench args]
# Environment as in the README (OCL_ICD_VENDORS, RUSTICL_ENABLE, the venv's python in PY).
set -u
base=$1; new=$2; dev=$3; out=$4; shift 4
py=${PY:-python3}
: > "$out"
for round in 1 2 3; do
  for tree in "$base" "$new"; do
    echo "== round $round tree $tree device $dev" >> "$out"
    (cd /tmp && XDG_CACHE_HOME=$(mktemp -d) PYTHONPATH="$tree" timeout 300 "$py" "$tree/tools/bench_rowops.py" \
        --device "$dev" --ops logcumsumexp --mb 16 --repeat 5 "$@" 2>&1 | grep -v -i "warn\|prg.build\|lambda" | tail -n 8) >> "$out"
  done
done
