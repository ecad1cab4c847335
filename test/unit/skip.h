// Whether a unit case can run on this machine, decided in one place.
//
// A case that needs something CI's machine has (libdevice and nvJitLink of the CUDA toolkit in
// /usr/local/cuda) fails when it is missing: a skip there would hide a case that can run.
// FXC_ALLOW_SKIPS=1 turns that into a skip on a machine set up by hand. A case that needs a CUDA
// device is in the doctest suite "gpu" (ctest unit.gpu) and is skipped without one, unless
// FXC_REQUIRE_CUDA=1 (test/gpu/run.sh) makes that a failure. Skips are counted: a run with a skip
// and no failure exits 77, which ctest shows as "Skipped" (SKIP_RETURN_CODE), never as a pass.
#pragma once

#include "runtime/cuda_driver.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace fxc::testing {

inline const std::string kLibdevice = "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc";

/// "case name: reason" for every case skipped in this run (test/unit/main.cpp prints them).
inline std::vector<std::string>& skipped_cases() {
  static std::vector<std::string> skipped;
  return skipped;
}

/// The case now running (set by the listener in test/unit/main.cpp).
inline std::string& current_case() {
  static std::string name;
  return name;
}

inline bool env_is(const char* name, const char* value) {
  const char* s = std::getenv(name);
  return s && std::string(s) == value;
}

inline void record_skip(const std::string& why) {
  skipped_cases().push_back(current_case() + ": " + why);
  MESSAGE("skipped: " << why);
}

/// Something CI's machine has: `why` empty when present. Missing, the case
/// fails (or, with FXC_ALLOW_SKIPS=1, is skipped).
inline bool have_dependency(const std::string& what, const std::string& why) {
  if (why.empty()) return true;
  if (env_is("FXC_ALLOW_SKIPS", "1"))
    record_skip(what + " missing: " + why);
  else
    FAIL_CHECK(what << " missing (" << why
                    << "); CI has it (tools/install-deps.sh, or the CUDA toolkit in "
                       "/usr/local/cuda); FXC_ALLOW_SKIPS=1 skips instead");
  return false;
}

/// libdevice, for PTX generation (codegen needs no GPU for it).
inline bool have_libdevice() {
  return have_dependency("libdevice", std::ifstream(kLibdevice) ? "" : kLibdevice + " not found");
}

/// A CUDA device (and the library `why` is about, when given). Only for cases in the "gpu"
/// suite: anywhere else a missing device is a failure, since the case would never run on CI.
inline bool have_cuda(std::string why = cuda::Context::unavailable_reason()) {
  if (why.empty()) return true;
  if (env_is("FXC_REQUIRE_CUDA", "1")) {
    FAIL_CHECK("FXC_REQUIRE_CUDA=1 but " << why);
  } else if (env_is("FXC_UNIT_NO_GPU", "1")) {
    FAIL_CHECK("this case needs a CUDA device but is not in the doctest suite \"gpu\"");
  } else {
    record_skip("no CUDA device: " + why);
  }
  return false;
}

} // namespace fxc::testing
