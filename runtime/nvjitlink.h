// PTX to cubin through nvJitLink, opened with dlopen: machine code ahead of time, no GPU needed.
//
// The driver JIT-compiles PTX when a module is loaded (Context::load_module); a cubin made here
// skips that step at run time and can be stored in a compiled artifact. libnvJitLink ships with
// the CUDA toolkit and needs neither a driver nor a device; it is looked up by its soname through
// LD_LIBRARY_PATH and the loader cache, then in /usr/local/cuda/lib64.
#pragma once

#include "runtime/cuda_driver.h"

#include <string>

namespace fxc::cuda {

/// Empty when libnvJitLink can be opened, else why not. Never throws.
std::string nvjitlink_unavailable_reason();

/// The cubin (an ELF image, loadable with Context::load_module) of `ptx` compiled for `arch`
/// ("sm_90", "sm_90a", ...) at -O3. `name` is used in messages. Throws CudaError("nvJitLink:
/// ...") with the compiler's error log when the PTX does not compile, the arch is malformed or
/// the library is missing.
std::string ptx_to_cubin(const std::string& ptx, const std::string& arch, const std::string& name);

} // namespace fxc::cuda
