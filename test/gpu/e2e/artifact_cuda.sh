#!/usr/bin/env bash
# On the GPU: CUDA .fxo artifacts. Fixtures compiled with --device=cuda to .fxo reproduce
# PyTorch's outputs (and gradients in train mode) under `fxc --run x.fxo`, and the embed example
# (C, through libfxcrt.so: no LLVM) loads the PTX artifact and matches PyTorch too. `--bench
# --json` of a CUDA .fxo times its plan runners with CUDA events on resident buffers, with per-step
# times and nonzero GB/s, and counts the bytes --bench of the graph counts.
# Usage: artifact_cuda.sh <fxc>   (libfxcrt.so is looked for beside fxc and in ../lib)
set -u
fxc=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
root=$(cd "$(dirname "$0")/../../.." && pwd)
fx=$root/test/fixtures
bindir=$(cd "$(dirname "$fxc")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
run() { # run <label> <args...>
  local label=$1; shift
  if out=$("$@" 2>&1); then echo "ok   $label"
  else echo "FAIL $label"; echo "$out" | head -12 | sed 's/^/     /'; fail=1; fi
}
cd "$work" || exit 1
for m in mlp block convnet norms; do
  run "compile $m.pt2 --device=cuda to $m.fxo" "$fxc" --device=cuda --tf32=none "$fx/$m.pt2" -o $m.fxo
  run "--run $m.fxo --expect" "$fxc" --run $m.fxo --inputs "$fx/$m.io.safetensors" --expect "$fx/$m.io.safetensors"
done
run "compile mlp train" "$fxc" --device=cuda --mode=train "$fx/mlp.pt2" -o train.fxo
run "--run train.fxo --expect gradients" "$fxc" --run train.fxo --inputs "$fx/mlp.io.safetensors" \
  --expect "$fx/mlp.grad.safetensors" --atol 1e-4

# --bench of CUDA artifacts: timed like the compiled graph (CUDA events, resident buffers).
bench_fxo() { # bench_fxo <artifact> <graph> <compile flags...>
  local fxo=$1 g=$2; shift 2
  if "$fxc" --bench --json "$fxo" >"$fxo.bench.json" 2>bench.err &&
     "$fxc" --device=cuda "$@" --bench --json "$g" >"$fxo.graph.json" 2>>bench.err &&
     python3 - "$fxo.bench.json" "$fxo.graph.json" <<'PY'
import json, sys
a, g = (json.load(open(f)) for f in sys.argv[1:])
print(f"     {a['graph']}: {a['median_ms']:.4f} ms, {a['gbps']:.1f} GB/s, {a['tflops']:.3f} TFLOP/s; "
      f"graph: {g['median_ms']:.4f} ms, {g['gbps']:.1f} GB/s")
assert a["timer"] == "cuda_events" and a["device"] == "cuda" and a["flush_bytes"] == 256 << 20, a
assert a["mode"] == g["mode"] and a["bytes"] == g["bytes"] and a["bytes"] > 0 and a["gbps"] > 0, (a, g)
assert a["steps"] and all(s["median_ms"] > 0 for s in a["steps"]), a["steps"]
assert [(s["kind"], s["name"]) for s in a["steps"]] == [(s["kind"], s["name"]) for s in g["steps"]]
# The graph's flops where its path finds the extern's node (matmuls: always; mlp has two).
assert a["flops"] == g["flops"] or g["flops"] == 0, (a["flops"], g["flops"])
assert a["flops"] > 0 or "mlp" not in a["graph"], a["flops"]
roles = {s["graph"] for s in a["steps"]}
assert roles == ({"forward", "backward"} if a["mode"] == "train" else {"inference"}), roles
PY
  then echo "ok   --bench --json $fxo: CUDA events, steps, the graph's bytes"
  else echo "FAIL --bench --json $fxo"; head -12 bench.err | sed 's/^/     /'; fail=1; fi
}
bench_fxo mlp.fxo "$fx/mlp.pt2"
bench_fxo convnet.fxo "$fx/convnet.pt2"
bench_fxo train.fxo "$fx/mlp.pt2" --mode=train

lib=
for d in "$bindir" "$bindir/../lib"; do [ -f "$d/libfxcrt.so" ] && lib=$(cd "$d" && pwd); done
cc=$(command -v cc || command -v gcc || true)
if [ -z "$lib" ]; then echo "FAIL libfxcrt.so not found beside $fxc"; fail=1
elif [ -z "$cc" ] || ! command -v python3 >/dev/null; then echo "N/A  embed: no C compiler or python3 on this machine"
else
  if ldd "$lib/libfxcrt.so" | grep -qi llvm; then echo "FAIL libfxcrt.so links LLVM"; fail=1; fi
  run "cc examples/embed/main.c" "$cc" -std=c99 -I"$root/include" -o embed "$root/examples/embed/main.c" \
    -L"$lib" -lfxcrt -Wl,-rpath,"$lib"
  python3 - "$fx/mlp.io.safetensors" <<'PY'
import json, struct, sys
raw = open(sys.argv[1], 'rb').read()
n = struct.unpack('<Q', raw[:8])[0]
head = json.loads(raw[8:8 + n]); data = raw[8 + n:]
lo, hi = head['input_0']['data_offsets']; open('inputs.bin', 'wb').write(data[lo:hi])
lo, hi = head['output_0']['data_offsets']
vals = struct.unpack('<%df' % ((hi - lo) // 4), data[lo:hi])
open('expected.txt', 'w').write('\n'.join('%.9g' % v for v in vals) + '\n')
PY
  if ./embed mlp.fxo inputs.bin >embed.out 2>embed.err && python3 - <<'PY'
lines = open('embed.out').read().split('\n')
got = [float(x) for x in lines[1:] if x]
want = [float(x) for x in open('expected.txt').read().split()]
assert len(got) == len(want) and max(abs(g - w) - 1e-4 * abs(w) for g, w in zip(got, want)) <= 1e-4
PY
  then echo "ok   embed runs the CUDA mlp.fxo through libfxcrt.so and matches PyTorch"
  else echo "FAIL embed on the CUDA mlp.fxo"; head -5 embed.err embed.out | sed 's/^/     /'; fail=1; fi
fi
exit $fail
