// Checking a run's results: --expect against a safetensors file, --check-accuracy against float64.
#pragma once

#include "driver/options.h"
#include "driver/pipeline.h"
#include "frontend/graph.h"

#include <map>
#include <string>

namespace fxc {

struct CheckReport {
  bool ok = true;
  /// One line per checked tensor; a mismatch adds torch.testing.assert_close's report (over the
  /// mismatched elements) and the values at its greatest absolute difference.
  std::string text;
};

/// Compares every result whose name the file holds as `output_<i>` (and, in train mode,
/// `grad.*`); other keys (input_<i>, ...) are ignored. An expected output or gradient that the
/// run did not produce is a failure, and so is a file with nothing to compare. NaN matches NaN
/// only with `equal_nan` (--equal-nan), as in torch.testing.assert_close. Without
/// `check_dtype` (--dtype: bf16 results against float32 references) only values are compared.
CheckReport check_expected(const NamedTensors& results,
                           const std::map<std::string, WeightData>& expected, double rtol,
                           double atol, bool train, bool equal_nan = false,
                           bool check_dtype = true);

/// Judges each result like torch._dynamo's same(ref, res, fp64_ref): `base` is the float32
/// eager result, `fp64` the float64 reference, both in the order of `results`.
CheckReport check_accuracy(const NamedTensors& results, const std::vector<Tensor>& base,
                           const std::vector<Tensor>& fp64);

/// A run's results for --outputs (written) and --expect (check_expected within --rtol/--atol,
/// the report on check_report_stream, a mismatch reported as an error naming the file); `train`
/// compares gradients too; with --dtype, values only. Returns 1 when they do not match, else 0.
int write_and_expect(const Options& opts, const NamedTensors& results, bool train);

} // namespace fxc
