"""tools/bench_rowops.py of this tree with row_scan.cl's CPU_OWN_EXP planned on every CPU runtime
(plan_scan.SCAN_OWN_EXP_IMPLEMENTATIONS widened to PoCL, Intel and rusticl), to measure the
vector lanes where the planner does not choose them. Arguments: bench_rowops.py's."""
import runpy
import sys
from pathlib import Path

tree = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(tree))
import clreduce.plan_scan as plan_scan  # noqa: E402

plan_scan.SCAN_OWN_EXP_IMPLEMENTATIONS = ("pocl", "intel", "rusticl")
sys.argv = [str(tree / "tools" / "bench_rowops.py")] + sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
