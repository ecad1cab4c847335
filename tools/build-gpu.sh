#!/usr/bin/env bash
# Builds fxc and fxc_unit for the GPU machine and packs them into carry/fxc-gpu.tar.gz.
#
# LLVM is linked statically (-DFXC_STATIC_LLVM=ON): the GPU machine has no LLVM. The binaries
# are stripped and packed with the shared libraries that machine's image may lack (everything
# ldd names except the C library family and libstdc++/libgcc_s, which it has in newer versions),
# plus test/gpu/vadd.ll compiled to a cubin for the cubin-loading test. carry/ is ignored by git
# (.gitignore and .git/info/exclude); name it in the device `run` tool's `carry` parameter and
# run test/gpu/run.sh there (docs/gpu.md).
#
# Usage: tools/build-gpu.sh  (carry/fxc-gpu-fxc.tar.xz and carry/fxc-gpu-unit.tar.xz: see below)
#  (build dir: build-gpu or $FXC_GPU_BUILD; jobs: $JOBS or 2;
#                             build type: $FXC_BUILD_TYPE or Release)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${FXC_GPU_BUILD:-$src/build-gpu}
carry=$src/carry
jobs=${JOBS:-2}

cmake -G Ninja -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=${FXC_BUILD_TYPE:-Release} -DFXC_STATIC_LLVM=ON >/dev/null
ninja -C "$build" -j"$jobs" fxc fxc_unit fxcrt

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
pkg=$stage/fxc-gpu
mkdir -p "$pkg/bin" "$pkg/lib"
for b in fxc fxc_unit; do
  if ldd "$build/$b" | grep -q 'libLLVM'; then
    echo "error: $build/$b links libLLVM dynamically; FXC_STATIC_LLVM did not take effect" >&2
    exit 1
  fi
  strip --strip-unneeded -o "$pkg/bin/$b" "$build/$b"
done
# The runtime C API's library (examples/embed, test/gpu/e2e/artifact_cuda.sh); it has no LLVM.
strip --strip-unneeded -o "$pkg/lib/libfxcrt.so" "$build/libfxcrt.so"
ldd "$build/fxc" "$build/fxc_unit" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
  while read -r lib; do
    case $(basename "$lib") in
    libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | ld-linux* | libstdc++.so* | libgcc_s.so*) ;;
    *) cp -L "$lib" "$pkg/lib/" ;;
    esac
  done

llc=$(command -v llc-19 || true)
ptxas=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
if [ -z "$llc" ] || [ ! -x "$ptxas" ]; then
  echo "error: llc-19 and ptxas are needed for the test cubin (llc-19: '${llc}', ptxas: '$ptxas')" >&2
  exit 1
fi
"$llc" -march=nvptx64 -mcpu=sm_90 -O2 "$src/test/gpu/vadd.ll" -o "$stage/vadd.ptx"
"$ptxas" -arch=sm_90 "$stage/vadd.ptx" -o "$pkg/vadd.cubin"
git -C "$src" describe --always --dirty >"$pkg/COMMIT" 2>/dev/null || echo unknown >"$pkg/COMMIT"

mkdir -p "$carry"
tar -C "$stage" -czf "$carry/fxc-gpu.tar.gz" fxc-gpu
# The device tool carries at most 64 MiB with the working tree (about 48.5 MiB tracked): the
# whole package does not fit beside it. Two smaller ones, each for a call of its own, without the
# libraries the GPU image has (ldconfig -p there), compressed with xz: fxc-gpu-fxc.tar.xz (fxc,
# libfxcrt.so: the end-to-end scripts and the benches) and fxc-gpu-unit.tar.xz (fxc_unit: the
# CUDA unit cases and memcheck). test/gpu/run.sh and bench/gpu_zoo.sh take either.
for part in fxc unit; do
  slim=$stage/$part/fxc-gpu
  mkdir -p "$slim/bin"
  cp -r "$pkg/lib" "$pkg/vadd.cubin" "$pkg/COMMIT" "$slim/"
  for lib in libopenblas.so.0 libgfortran.so.5 libquadmath.so.0 libcrypto.so.3 libz.so.1 libbz2.so.1.0; do
    rm -f "$slim/lib/$lib"
  done
  if [ $part = fxc ]; then cp "$pkg/bin/fxc" "$slim/bin/"; else
    cp "$pkg/bin/fxc_unit" "$slim/bin/"
    rm -f "$slim/lib/libfxcrt.so"
  fi
  tar -C "$stage/$part" -cf - fxc-gpu | xz -9 -T0 >"$carry/fxc-gpu-$part.tar.xz"
done
exclude=$(git -C "$src" rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qx '/carry/' "$exclude" 2>/dev/null || echo '/carry/' >>"$exclude"
echo "packed $(du -h "$carry/fxc-gpu.tar.gz" | cut -f1) into $carry/fxc-gpu.tar.gz, and for the device" \
  "tool's limit $(du -h "$carry/fxc-gpu-fxc.tar.xz" | cut -f1) into fxc-gpu-fxc.tar.xz and" \
  "$(du -h "$carry/fxc-gpu-unit.tar.xz" | cut -f1) into fxc-gpu-unit.tar.xz:"
tar -tzvf "$carry/fxc-gpu.tar.gz" | awk '{print "  " $3 "  " $6}'
