#!/bin/bash
# usage: abx.sh DEVICE OPS KIND ROUNDS
cd /work/main
export OCL_ICD_VENDORS=/tmp/icd-all RUSTICL_ENABLE=llvmpipe
for r in $(seq $4); do
for t in base work; do
  if [ $t = base ]; then pp=/work/main/.gpu/sv/base; else pp=/work/main; fi
  echo "$t: $(cd /tmp && XDG_CACHE_HOME=/tmp/xc_$t PYTHONPATH=$pp /work/main/.venv/dev/bin/python /work/main/benchmarks/softmax_cpu_passes_2026-11-28/ab.py "$1" "$2" "$3")"
done; done
