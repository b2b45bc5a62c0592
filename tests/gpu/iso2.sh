#!/bin/sh
S=tests/gpu/specs/bias_scale_mixed.yaml
for d in "-D M=4097 -D N=24" "-D M=4097 -D N=24" "-D M=4096 -D N=24" "-D M=2000 -D N=24" "-D M=4097 -D N=32" "-D M=4097 -D N=1032" "-D M=1000 -D N=1032" "-D M=100 -D N=24"; do
  printf '%s: ' "$d"; build/wsfuse run --check $S $d 2>&1 | tr '\n' ' '; echo
done
compute-sanitizer --tool memcheck build/wsfuse run --check $S -D M=4097 -D N=24 2>&1 | tail -15
