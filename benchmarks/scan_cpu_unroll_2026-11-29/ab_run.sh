# A/B of two source trees on one OpenCL device, one process per tree and round, trees
# alternating (A B A B ...): each line is the best of the rounds' fastest calls (this 2-core
# VM's neighbours doubled single rounds' times; the best call is what the code allows).
#   bash ab_run.sh TREE_A TREE_B DEVICE DTYPE OPS SHAPES CALLS ROUNDS
# TREE_*: roots holding clreduce/ and cl_kernels/ (e.g. `git archive REV clreduce cl_kernels | tar -x -C DIR`).
# OCL_ICD_VENDORS picks the runtimes; each tree keeps its own kernel cache under $TMPDIR.
here=$(cd "$(dirname "$0")" && pwd)
A=$1; B=$2; shift 2
out=$(mktemp)
tmp=${TMPDIR:-/tmp}
for r in $(seq 1 "${6:-3}"); do
  for t in A B; do
    tree=$A; [ "$t" = B ] && tree=$B
    (cd "$tmp" && XDG_CACHE_HOME="$tmp/ab_cache_$t" PYTHONPATH="$tree" python "$here/ab_ops.py" "$1" "$2" "$3" "$4" "$5") \
        | sed "s/^/$t /" >> "$out"
  done
done
python - "$out" <<'PY'
import collections, sys
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    t, op, shape, best, med = line.split()
    d[(op, shape, t)].append(float(best))
for op, shape in dict.fromkeys((k[0], k[1]) for k in d):
    a, b = d[(op, shape, "A")], d[(op, shape, "B")]
    print(f"{op:14s} {shape:12s} A {min(a):8.3f} ms  B {min(b):8.3f} ms  A/B {min(a)/min(b):5.2f}"
          f"   rounds A {' '.join(f'{v:.2f}' for v in a)} | B {' '.join(f'{v:.2f}' for v in b)}")
PY
