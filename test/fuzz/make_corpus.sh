#!/usr/bin/env bash
# Rebuilds the fuzzers' seed corpora test/fuzz/corpus/<format>/ from the repository's own inputs:
# test/error cases, test/graphs and examples graphs, small fixtures, and (given an fxc binary)
# the decompressed payloads of .fxo artifacts compiled from them. Small on purpose: a seed is a
# starting point for mutation, not a test. Usage: test/fuzz/make_corpus.sh <path-to-fxc>
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
fxc=$1
out=$src/test/fuzz/corpus
rm -rf "$out"
mkdir -p "$out"/{pt2,fxg,safetensors,fxo}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# .pt2: the error corpus's archives (8x8 MLPs), one valid one stored and one deflated, convnet.
cp "$src"/test/error/*.pt2 "$out/pt2/"
python3 - "$src" "$out/pt2" <<'PY'
import sys, zipfile, importlib.util
src, out = sys.argv[1], sys.argv[2]
spec = importlib.util.spec_from_file_location("mc", src + "/test/error/make_corpus.py")
mc = importlib.util.module_from_spec(spec); spec.loader.exec_module(mc)
entries = mc.read_mlp()
for name, method in [("mlp8_stored.pt2", zipfile.ZIP_STORED), ("mlp8_deflated.pt2", zipfile.ZIP_DEFLATED)]:
    with zipfile.ZipFile(out + "/" + name, "w", method) as z:
        for k, v in entries.items():
            z.writestr(zipfile.ZipInfo(k, date_time=(1980, 1, 1, 0, 0, 0)), v, compress_type=method)
PY
cp "$src/test/fixtures/convnet.pt2" "$out/pt2/"

# .fxg: the error corpus's graphs, the small example and test graphs, one zstd-compressed.
cp "$src"/test/error/*.fxg "$src"/test/graphs/*.fxg "$src"/examples/{mlp,norms}.fxg "$out/fxg/"
cp "$src/test/error/corrupt.fxg.zst" "$out/fxg/"
zstd -q -19 "$src/examples/mlp.fxg" -o "$out/fxg/mlp.fxg.zst"

# safetensors: the error corpus's, and two small input files.
cp "$src"/test/error/*.safetensors "$out/safetensors/"
cp "$src"/test/fixtures/{berttiny,convnet}.io.safetensors "$out/safetensors/"

# .fxo payloads and weight sections (the fuzz_fxo harness seals them): interpreted and compiled
# (plan), inference and train, from the 8x8 MLP and the norms example; and the four linked into
# one artifact of several models. A seed is the payload's length (u64), the decompressed
# payload, then the weight section.
payload() {
  python3 - "$1" "$2" <<'PY'
import struct, subprocess, sys
b = open(sys.argv[1], 'rb').read()
csize, usize, woff, wsize = struct.unpack('<QQQQ', b[24:56])
p = subprocess.run(['zstd', '-q', '-d', '-c'], input=b[64:64 + csize], stdout=subprocess.PIPE,
                   check=True).stdout
assert len(p) == usize
open(sys.argv[2], 'wb').write(struct.pack('<Q', len(p)) + p + b[woff:woff + wsize])
PY
}
for spec in "eager inference" "aot_eager train" "inductor inference" "inductor train"; do
  set -- $spec
  for g in "$out/pt2/mlp8_stored.pt2" "$src/examples/norms.fxg"; do
    name=$(basename "$g"); name=${name%%.*}
    "$fxc" --no-cache --device=cpu --backend=$1 --mode=$2 -o "$tmp/$name.fxo" "$g"
    payload "$tmp/$name.fxo" "$out/fxo/${name}_$1_$2.payload"
    cp "$tmp/$name.fxo" "$tmp/${name}_$1_$2.fxo"
  done
done
"$fxc" --link -o "$tmp/linked.fxo" e="$tmp/mlp8_stored_eager_inference.fxo" \
  a="$tmp/mlp8_stored_aot_eager_train.fxo" i="$tmp/norms_inductor_inference.fxo" \
  t="$tmp/mlp8_stored_inductor_train.fxo"
payload "$tmp/linked.fxo" "$out/fxo/linked.payload"
du -sh "$out"/*
