#!/usr/bin/env bash
# The GPU test script: run on the GPU machine from the repository root, with the package that
# tools/build-gpu.sh put in carry/ (it builds nothing). Runs the unit tests' GPU cases (a missing
# GPU is a failure here), the same cases under compute-sanitizer memcheck, and the end-to-end
# fixtures with the carried fxc. Logs go to $OUT (the device tool's output folder) or gpu-logs/.
# Exits non-zero when any step fails. Usage: bash test/gpu/run.sh [package.tar.gz]
# SKIP_E2E=name,... leaves out those test/gpu/e2e scripts (e.g. anchor, whose PyTorch timing
# bench/gpu_zoo.sh supersedes when both share a device call); the summary lists them as SKIP.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
pkg=${1:-$root/carry/fxc-gpu.tar.gz}
out=${OUT:-$root/gpu-logs}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! tar -C "$work" -xf "$pkg"; then
  echo "error: cannot unpack $pkg (run tools/build-gpu.sh and carry carry/)" >&2
  exit 2
fi
bin=$work/fxc-gpu/bin

# Libraries: the packed ones, cuBLASLt from the toolkit, cuDNN from PyTorch's environment. fxc
# itself only searches the library path for cuDNN (docs/gpu.md); this script puts it there.
libpath=$work/fxc-gpu/lib
cudnn=$(python3 -c 'import nvidia.cudnn as m, os; print(os.path.join(list(m.__path__)[0], "lib"))' 2>/dev/null)
if [ ! -f "$cudnn/libcudnn.so.9" ]; then
  found=$(find / -xdev -name libcudnn.so.9 -print -quit 2>/dev/null)
  cudnn=${found:+$(dirname "$found")}
fi
[ -n "$cudnn" ] && libpath=$libpath:$cudnn
[ -d /usr/local/cuda/lib64 ] && libpath=$libpath:/usr/local/cuda/lib64
export LD_LIBRARY_PATH=$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export FXC_REQUIRE_CUDA=1 FXC_TEST_VADD_CUBIN=$work/fxc-gpu/vadd.cubin

{
  echo "commit: $(cat "$work/fxc-gpu/COMMIT")"
  echo "kernel: $(uname -r)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  echo "cudnn dir: ${cudnn:-not found}"
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
} 2>&1 | tee "$out/env.log"

declare -a summary
status=0
step() { # step <name> <log> <command...>: runs the command, logs it, records PASS/FAIL
  local name=$1 log=$2
  shift 2
  echo "=== $name"
  local t0=$SECONDS
  "$@" >"$out/$log" 2>&1
  local rc=$?
  tail -25 "$out/$log"
  if [ $rc -eq 0 ]; then summary+=("PASS  $name ($((SECONDS - t0)) s)"); else
    summary+=("FAIL  $name (exit $rc, $((SECONDS - t0)) s, see $log)")
    status=1
  fi
}

# The device tool's size limit splits the package (tools/build-gpu.sh): a part without fxc_unit
# or without fxc says so in the summary for the steps it cannot run.
has_unit=1 has_fxc=1
[ -x "$bin/fxc_unit" ] || has_unit=0
[ -x "$bin/fxc" ] || has_fxc=0
if [ $has_unit = 1 ]; then
step "unit tests, CUDA cases" unit.log "$bin/fxc_unit" -tc='cuda*'

# compute-sanitizer works on Firecracker machines, not on gVisor ones (KINDS.md): there it
# refuses the device, which is reported as such rather than as a failure of fxc. The case
# that provokes API errors on purpose is left out.
if command -v compute-sanitizer >/dev/null || [ -x /usr/local/cuda/bin/compute-sanitizer ]; then
  cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  before=$status
  step "compute-sanitizer memcheck" memcheck.log timeout 300 "$cs" --tool memcheck --error-exitcode 3 \
    "$bin/fxc_unit" -tc='cuda gpu*' -tce='*checked errors*'
  if grep -q "Device not supported" "$out/memcheck.log"; then
    summary[-1]="N/A   compute-sanitizer memcheck: the device is not supported on this machine (gVisor?)"
    status=$before
  fi
else
  summary+=("FAIL  compute-sanitizer memcheck: compute-sanitizer not found")
  status=1
fi
else
  summary+=("SKIP  unit tests and memcheck: $pkg has no fxc_unit (run with fxc-gpu-unit.tar.xz)")
fi
if [ $has_fxc = 0 ]; then
  summary+=("SKIP  end-to-end scripts: $pkg has no fxc (run with fxc-gpu-fxc.tar.xz)")
  echo "=== summary"
  printf '%s\n' "${summary[@]}" | tee "$out/summary.log"
  exit $status
fi

# End to end with the carried fxc: its statically linked LLVM (the inductor backend JITs x86-64)
# and its packed libraries work on this machine's image.
step "fixtures end to end (carried fxc)" e2e.log timeout 180 bash "$root/test/fixtures_e2e.sh" \
  "$bin/fxc" eager inductor
# GPU end-to-end checks: test/gpu/e2e/*.sh, each given the carried fxc.
n_e2e=0
for t in "$root"/test/gpu/e2e/*.sh; do
  [ -f "$t" ] || continue
  if [[ ",${SKIP_E2E:-}," == *",$(basename "$t" .sh),"* ]]; then
    summary+=("SKIP  gpu e2e $(basename "$t" .sh) (SKIP_E2E)")
    continue
  fi
  n_e2e=$((n_e2e + 1))
  step "gpu e2e $(basename "$t" .sh)" "e2e-$(basename "$t" .sh).log" bash "$t" "$bin/fxc"
done
summary+=("INFO  $n_e2e GPU end-to-end script(s) in test/gpu/e2e")

echo "=== summary"
printf '%s\n' "${summary[@]}" | tee "$out/summary.log"
exit $status
