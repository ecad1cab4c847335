# Sourced by the GPU benches (bench/gpu_zoo.sh, gpu_anchor.sh, attention.sh): unpacks the package
# of tools/build-gpu.sh ($pkg, .tar.xz or .tar.gz) into $work, sets $fxc, and puts on the library
# path what test/gpu/run.sh puts there: the packed libraries, cuDNN from PyTorch's environment
# ($py), cuBLASLt from the toolkit. Prints the package's commit. Exits 2 when $pkg cannot be
# unpacked.
# shellcheck shell=bash
tar -C "$work" -xf "$pkg" || { echo "error: cannot unpack $pkg (run tools/build-gpu.sh)"; exit 2; }
fxc=$work/fxc-gpu/bin/fxc
libpath=$work/fxc-gpu/lib
cudnn=$("$py" -c 'import nvidia.cudnn as m, os; print(os.path.join(list(m.__path__)[0], "lib"))' 2>/dev/null)
[ -n "$cudnn" ] && libpath=$libpath:$cudnn
[ -d /usr/local/cuda/lib64 ] && libpath=$libpath:/usr/local/cuda/lib64
export LD_LIBRARY_PATH=$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONUNBUFFERED=1
echo "commit: $(cat "$work/fxc-gpu/COMMIT" 2>/dev/null)"
