M=lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum,lts__t_sectors_op_atom.sum,lts__t_sectors_op_red.sum,lts__t_sectors.sum,lts__t_sector_hit_rate.pct,lts__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_srcunit_ltcfabric.sum,lts__t_sectors_srcunit_tex.sum,dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,lts__d_sectors_fill_device.sum,lts__t_sectors_srcnode_gpc.sum,breakdown:lts__throughput.avg.pct_of_peak_sustained_elapsed
ncu --metrics $M -c 1 build/wsfuse run tests/gpu/specs/relu_chain.yaml -D N=67108864 2>&1 | grep -E "lts|dram|gpu__" 
cat > /tmp/tc.py <<'PY'
import torch
N = 1 << 26
a, b, c = (torch.randn(N, device="cuda", dtype=torch.bfloat16) for _ in range(3))
f = torch.compile(lambda a, b, c: torch.relu(a * b + c))
f(a, b, c); torch.cuda.synchronize()
f(a, b, c); torch.cuda.synchronize()
PY
echo ---- triton
ncu --metrics $M -k regex:triton -c 1 python3 /tmp/tc.py 2>&1 | grep -E "lts|dram|gpu__"
