#!/usr/bin/env bash
# Builds the meta oracle driver and compares fxc's meta functions with PyTorch (python3-torch).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${TMPDIR:-/tmp}/fxc_meta_oracle
mkdir -p "$out"
g++ -std=c++20 -O1 -I"$root" -I"$root/include" "$root/tools/meta_oracle/meta_oracle.cpp" \
  "$root"/frontend/{builder,meta,schema,graph,dtype,storage}.cpp -o "$out/meta_oracle"
/usr/bin/python3 "$root/tools/meta_oracle/meta_oracle.py" "$out/meta_oracle"
