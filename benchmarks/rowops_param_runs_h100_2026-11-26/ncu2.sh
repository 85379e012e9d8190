source .gpu/setup.sh
R=$PWD
NCU="ncu --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis"
cd /tmp
PYTHONPATH=/tmp/site:$R timeout 150 $NCU --kernel-name regex:"norm_rows" --launch-skip 2 --launch-count 2 python3 $R/.gpu/tools/ncu_rms.py cl > $OUT/ncu_cl.txt 2>&1; echo "cl rc $?"
PYTHONPATH=/tmp/site:$R timeout 250 $NCU --kernel-name regex:"triton" --launch-skip 0 --launch-count 6 python3 $R/.gpu/tools/ncu_rms.py compile > $OUT/ncu_tc.txt 2>&1; echo "tc rc $?"
grep -E "^\s+[a-z_]+.*\(|==PROF==|Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Memory Throughput|DRAM Throughput|L2 Hit|Block Size|Grid Size|Waves Per SM" $OUT/ncu_cl.txt $OUT/ncu_tc.txt | cut -c1-160 | head -120
