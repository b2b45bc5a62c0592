which ncu nsys
for f in bench/tmp/relu_*.yaml; do timeout 60 build/wsfuse bench $f 2>&1 | tail -1; done
build/wsfuse check tests/gpu/specs/relu_chain.yaml | tail -1; python3 bench/tmp/peer.py
