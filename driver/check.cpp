// Checking a run's results: --expect against a safetensors file, --check-accuracy against float64.
#include "driver/check.h"

#include "driver/driver.h"
#include "driver/tensor_io.h"
#include "frontend/log.h"
#include "frontend/safetensors.h"

#include "runtime/compare.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace fxc {

namespace {
std::string fmt(const char* f, double a, double b = 0) {
  char buf[128];
  std::snprintf(buf, sizeof buf, f, a, b);
  return buf;
}
// Root-mean-square difference of two same-shaped tensors, in double.
double rmse(const Tensor& a, const Tensor& b) {
  Tensor x = a.contiguous(), y = b.contiguous();
  int64_t n = x.numel();
  if (n == 0 || y.numel() != n) return 0;
  double acc = 0;
  for (int64_t i = 0; i < n; ++i) {
    double d = x.load(i) - y.load(i);
    acc += d * d;
  }
  return std::sqrt(acc / double(n));
}
} // namespace

CheckReport check_expected(const NamedTensors& results,
                           const std::map<std::string, WeightData>& expected, double rtol,
                           double atol, bool train, bool equal_nan, bool check_dtype) {
  CheckReport rep;
  int checked = 0;
  for (const auto& [key, w] : expected) {
    bool is_output = key.rfind("output_", 0) == 0;
    bool is_grad = key.rfind("grad.", 0) == 0;
    if (!is_output && !(is_grad && train)) continue;
    ++checked;
    const Tensor* actual = nullptr;
    for (const auto& [name, t] : results)
      if (name == key) actual = &t;
    if (!actual) {
      rep.ok = false;
      rep.text +=
          key + ": missing: the run produced no such " + (is_grad ? "gradient" : "output") + "\n";
      continue;
    }
    CompareOptions co; // torch.testing.assert_close's criterion
    co.rtol = rtol;
    co.atol = atol;
    co.equal_nan = equal_nan;
    co.check_dtype = check_dtype;
    CompareResult r = compare_tensors(*actual, Tensor::from_weight(w), co);
    if (r.ok) {
      rep.text +=
          key + ": ok " + format_meta(actual->meta()) +
          fmt(" (max abs error %.3g, max rel error %.3g)\n", r.max_abs_error, r.max_rel_error);
      continue;
    }
    rep.ok = false;
    if (r.mismatches == 0) { // a shape or dtype mismatch
      rep.text += key + ": MISMATCH " + r.message + "\n";
      continue;
    }
    // torch.testing's report (over the mismatched elements only), indented under its header.
    size_t body = r.message.find("\n\n");
    rep.text +=
        key + ": MISMATCH " + format_meta(actual->meta()) + ": " + r.message.substr(0, body) + "\n";
    std::istringstream lines(r.message.substr(body + 2));
    for (std::string line; std::getline(lines, line);) rep.text += "  " + line + "\n";
    rep.text += "  At index " + format_index(r.mismatch_abs_index) +
                fmt(": actual %.9g, expected %.9g\n", r.mismatch_actual, r.mismatch_expected);
  }
  if (checked == 0) {
    rep.ok = false;
    rep.text += std::string("no output_<i>") + (train ? " or grad.* " : " ") + "keys to compare\n";
  }
  return rep;
}

CheckReport check_accuracy(const NamedTensors& results, const std::vector<Tensor>& base,
                           const std::vector<Tensor>& fp64) {
  CheckReport rep;
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& [name, res] = results[i];
    if (i >= base.size() || i >= fp64.size()) {
      // Train mode's gradients: the float64 reference is the forward graph's outputs only.
      rep.text += name + ": not checked (the float64 reference covers the outputs only)\n";
      continue;
    }
    if (!is_floating(res.dtype())) {
      CompareResult r = compare_tensors(res, base[i], CompareOptions{0, 0, true, true});
      rep.ok &= r.ok;
      rep.text += name + (r.ok ? ": ok (exact)\n" : ": FAIL " + r.message + "\n");
      continue;
    }
    AccuracyResult a = same_with_fp64_ref(base[i], res, fp64[i]);
    rep.ok &= a.ok;
    rep.text += name + (a.ok ? ": ok" : ": FAIL") +
                fmt(" (RMSE vs float64: %.3g; eager float32's: %.3g)", rmse(res, fp64[i]),
                    rmse(base[i], fp64[i])) +
                (a.allclose ? " allclose to eager float32" : "") +
                (a.message.empty() ? "" : "; " + a.message) + "\n";
  }
  return rep;
}

int write_and_expect(const Options& o, const NamedTensors& results, bool train) {
  if (!o.outputs.empty()) {
    write_named_tensors(o.outputs, results);
    log_message(Component::Driver, Level::Info,
                "outputs: wrote " + std::to_string(results.size()) + " tensors to " + o.outputs);
  }
  if (o.expect.empty()) return 0;
  auto expected = read_safetensors(o.expect);
  CheckReport rep =
      check_expected(results, expected, o.rtol, o.atol, train, o.equal_nan, o.dtype.empty());
  log_message(Component::Driver, Level::Info,
              "expect: compared with " + o.expect + fmt(" (rtol=%g, atol=%g): ", o.rtol, o.atol) +
                  (rep.ok ? "match" : "MISMATCH"));
  std::fputs(rep.text.c_str(), check_report_stream(o, rep.ok));
  if (rep.ok) return 0;
  char tol[96];
  std::snprintf(tol, sizeof tol, "(rtol=%g, atol=%g)", o.rtol, o.atol);
  // TF32 rounds inputs to 10 mantissa bits: a mismatch may be only that (PyTorch's default
  // for convolutions too).
  std::string why;
  if (o.device == DeviceKind::Cuda && o.tf32 != "none" && o.backend == Backend::Inductor)
    why = "; float32 " +
          std::string(o.tf32 == "all"    ? "matmuls and convolutions"
                      : o.tf32 == "conv" ? "convolutions"
                                         : "matmuls") +
          " ran in TF32 (--tf32=" + o.tf32 + "); --tf32=none runs them exactly";
  if (!o.dtype.empty())
    why += "; --dtype=" + o.dtype + " runs matmuls and convolutions in " + o.dtype +
           " (8 or 11 significant bits): compare with a tolerance of its precision (--rtol=2e-2)";
  report_error(o, Error(o.expect, std::string("outputs do not match ") + tol + why));
  return 1;
}

} // namespace fxc
