#!/bin/sh
for s in full2d bias2d scale2d f16; do
  for d in "-D M=4097 -D N=24" "-D M=257 -D N=24" "-D M=4097 -D N=32" "-D M=100 -D N=24" "-D M=17 -D N=24" "-D M=16 -D N=24"; do
    printf '%s %s: ' $s "$d"; build/wsfuse run --check tests/gpu/iso/$s.yaml $d 2>&1 | tail -1
  done
done
