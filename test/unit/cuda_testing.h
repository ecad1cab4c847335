// Test helpers for the CUDA unit cases: closeness of run results (skipping: skip.h).
#pragma once

#include "runtime/compare.h"
#include "runtime/cuda_driver.h"
#include "runtime/tensor.h"
#include "skip.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace fxc::testing {

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
