// Test helpers for the CUDA unit cases: skipping without a device, closeness of run results.
#pragma once

#include "runtime/compare.h"
#include "runtime/cuda_driver.h"
#include "runtime/tensor.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace fxc::testing {

/// Skips (returns false) without a device, unless FXC_REQUIRE_CUDA=1 makes that a failure.
inline bool have_cuda() {
  std::string why = cuda::Context::unavailable_reason();
  if (why.empty()) return true;
  const char* req = std::getenv("FXC_REQUIRE_CUDA");
  if (req && std::string(req) == "1") FAIL("FXC_REQUIRE_CUDA=1 but " << why);
  MESSAGE("no CUDA device, skipped: " << why);
  return false;
}

/// Every output of `got` within rtol = atol = `tol` of `want`.
inline void check_close(const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                        double tol) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CompareOptions co;
    co.rtol = co.atol = tol;
    CompareResult r = compare_tensors(got[i], want[i], co);
    INFO("output " << i << ": " << r.message);
    CHECK(r.ok);
  }
}

} // namespace fxc::testing
