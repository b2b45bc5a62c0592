ncu --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats -c 1 build/wsfuse run tests/gpu/specs/relu_chain.yaml -D N=67108864 > $OUT/ncu.txt 2>&1
grep -E "Throughput|Duration|Bandwidth|Stall|Warp Cycles|Active Warps|Eligible|Issued|Registers|Achieved|Hit Rate|L2|DRAM|Block Limit" $OUT/ncu.txt | head -70
