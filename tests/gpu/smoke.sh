#!/bin/sh
# smoke.sh: quick GPU checks of the pointwise specs at several sizes (dev use).
W=${W:-build/wsfuse}
S=tests/gpu/specs
pass=0 fail=0
t() {
	if "$W" run --check "$@" > /tmp/smoke.out 2>&1; then pass=$((pass+1)); echo "ok   $*"; else fail=$((fail+1)); echo "FAIL $*"; cat /tmp/smoke.out; fi
}
for spec in relu_chain relu_chain_ws relu_chain_s1; do
	for n in 1 7 8 1000 1001 65536 1000003 16777216; do t $S/$spec.yaml -D N=$n; done
done
t $S/bias_scale_mixed.yaml
t $S/bias_scale_mixed.yaml -D M=1 -D N=8
t $S/bias_scale_mixed.yaml -D M=4097 -D N=24
t $S/bias_scale_mixed.yaml -D M=3 -D N=4096
echo "$pass passed, $fail failed"
