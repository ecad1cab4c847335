// NVPTX lowering: row mappings (vector width, block size, persistent rows, a thread per short
// row) and the PTX they give for pointwise, reduction and persistent-reduction kernels (16-byte
// vector accesses, warp shuffles, one read of a resident row, no cooperation for short rows).
#include "aot_testing.h"
#include "codegen/inductor.h"
#include "codegen/llvm_codegen.h"
#include "frontend/diag.h"
#include "passes/fuse.h"
#include "passes/lower.h"
#include "runtime/tensor.h"
#include "skip.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <regex>
#include <sstream>
#include <string>

using namespace fxc;
using namespace fxc::testing;

namespace {

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

/// x: rows x cols of dtype t, plus the op applied along the last dim.
TestGraph row_graph(DType t, int64_t rows, int64_t cols, const std::string& what) {
  TestGraph tg;
  ValueId x = tg.input_values("x", t, {rows, cols}, tg.random_values(rows * cols, -2, 2));
  ValueId y;
  if (what == "softmax")
    y = tg.op("aten._softmax.default", {T(x), I(-1), B(false)});
  else if (what == "sum")
    y = tg.op("aten.sum.dim_IntList", {T(x), Is({-1})});
  else if (what == "layer_norm")
    y = tg.op("aten.layer_norm.default", {T(x), Is({cols})});
  else if (what == "center")
    y = tg.op("aten.sub.Tensor", {T(x), T(tg.op("aten.mean.dim", {T(x), Is({-1}), B(true)}))});
  else
    y = tg.op("aten.mul.Tensor", {T(tg.op("aten.relu.default", {T(x)})), T(x)});
  tg.output(y);
  return tg;
}

/// The one kernel of `tg` and its mapping; `rnumel` gets the kernel's row length.
RowMapping only_mapping(const TestGraph& tg, int64_t* rnumel = nullptr) {
  LoopProgram p = lower(decompose(tg.g));
  Schedule s = fuse(p);
  REQUIRE(s.kernels.size() == 1);
  if (rnumel) *rnumel = s.kernels[0].rnumel;
  return nvptx_row_mapping(p, s.kernels[0]);
}

/// The one kernel of `tg` with the heuristic's mapping but `rows` rows per block.
PtxKernel rows_ptx(const TestGraph& tg, int rows) {
  LoopProgram p = lower(decompose(tg.g));
  Schedule s = fuse(p);
  REQUIRE(s.kernels.size() == 1);
  RowMapping m = nvptx_row_mapping(p, s.kernels[0]);
  CHECK(m.rows == 1);
  m.rows = rows;
  std::vector<PtxKernel> k = generate_ptx(p, {{&s.kernels[0], m}}, "sm_90", kLibdevice);
  REQUIRE(k.size() == 1);
  return k[0];
}

std::string only_ptx(const TestGraph& tg, int* block = nullptr) {
  PtxProgram pp = compile_inductor_ptx(decompose(tg.g), {}, "sm_90", kLibdevice);
  REQUIRE(pp.kernels.size() == 1);
  if (block) *block = pp.kernels[0].block;
  return pp.kernels[0].ptx;
}

} // namespace

TEST_CASE("nvptx: row mappings from the row length and the element size") {
  // Pointwise: one 16-byte vector (4 f32) per thread and row position.
  int64_t rn = 0;
  RowMapping pw = only_mapping(row_graph(DType::F32, 64, 1024, "pointwise"), &rn);
  CHECK(pw.vec == 4);
  CHECK(!pw.persistent);
  CHECK(int64_t(pw.block) * 4 == rn);
  // A one-stage reduction loops over r with vectors.
  RowMapping sum = only_mapping(row_graph(DType::F32, 64, 1024, "sum"));
  CHECK(sum.vec == 4);
  CHECK(sum.block == 256);
  CHECK(!sum.persistent);
  // Softmax walks its row three times: resident in registers, 128 threads x 2 vectors.
  RowMapping sm = only_mapping(row_graph(DType::F32, 512, 1024, "softmax"));
  CHECK(sm.persistent);
  CHECK(sm.vec == 4);
  CHECK(sm.block == 128);
  CHECK(sm.chunks == 2);
  // bf16: eight elements per 16-byte vector.
  RowMapping bf = only_mapping(row_graph(DType::BF16, 512, 1024, "softmax"));
  CHECK(bf.persistent);
  CHECK(bf.vec == 8);
  CHECK(bf.chunks == 1);
  // 4096 f32: 8 vectors per thread still fit; 8192 * 8 do not (a looping reduction instead).
  RowMapping big = only_mapping(row_graph(DType::F32, 512, 4096, "softmax"));
  CHECK(big.persistent);
  CHECK(big.block == 128);
  CHECK(big.chunks == 8);
  // Few rows: more threads per row instead (one vector each).
  RowMapping few = only_mapping(row_graph(DType::F32, 4, 4096, "softmax"));
  CHECK(few.persistent);
  CHECK(few.block == 1024);
  CHECK(few.chunks == 1);
  RowMapping huge = only_mapping(row_graph(DType::F32, 4, 65536, "softmax"));
  CHECK(!huge.persistent);
  CHECK(huge.block == 1024);
  // Rows that vectors do not tile fall back to single elements.
  RowMapping odd = only_mapping(row_graph(DType::F32, 512, 1001, "softmax"));
  CHECK(odd.vec == 1);
  CHECK(odd.persistent);
  CHECK(odd.block == 128);
  CHECK(int64_t(odd.block) * odd.chunks >= 1001);
}

// The PTX of pointwise, looping-reduction, warp, wide and persistent (softmax, bf16, masked
// tail) kernels is checked by test/codegen/ptx-*.test (instruction counts, ptxas).

TEST_CASE("nvptx: pipelined persistent rows") {
  if (!have_libdevice()) return;
  // bf16 softmax, 4 rows per block: the first row's vector is loaded before the row loop, the
  // next row's (when there is one) at the top of each row, through an opaque global address
  // (plain ld.global: ptxas keeps it ahead of the row's barriers). Nothing else changes. (A row
  // per block streams its row instead: a hinted load, an L2 prefetch, the global address.)
  PtxKernel one = rows_ptx(row_graph(DType::BF16, 512, 1024, "softmax"), 1);
  PtxKernel four = rows_ptx(row_graph(DType::BF16, 512, 1024, "softmax"), 4);
  CHECK(one.rows == 1);
  CHECK(four.rows == 4);
  CHECK(four.block == 128);
  CHECK(format_mapping(four.mapping) == "block=128 vec=8 persistent chunks=1 rows=4");
  CHECK(count(one.ptx, "ld.global.nc.L1::no_allocate.L2::256B.v4.u32") == 1);
  CHECK(count(one.ptx, "// begin inline asm") == 3);
  CHECK(count(four.ptx, "ld.global.nc.v4.u32") == 0);
  CHECK(count(four.ptx, "ld.global.v4.u32") == 2);
  CHECK(count(four.ptx, "// begin inline asm") == 1);
  CHECK(count(four.ptx, "cvta.to.global.u64 %") == 1);
  CHECK(count(four.ptx, "st.global.v4.b32") == 1);
  // Two reductions, each with shared slots of its own: the other's barrier separates one
  // row's reads of a slot from the next row's write, so no barrier is added.
  CHECK(count(one.ptx, "bar.sync") == 2);
  CHECK(count(four.ptx, "bar.sync") == 2);
  // One reduction (x - mean): a barrier at the end of each row.
  CHECK(count(rows_ptx(row_graph(DType::F32, 512, 1024, "center"), 1).ptx, "bar.sync") == 1);
  CHECK(count(rows_ptx(row_graph(DType::F32, 512, 1024, "center"), 4).ptx, "bar.sync") == 2);
}

TEST_CASE("nvptx: layer norm's mean and variance as one block reduction (16-bit rows)") {
  if (!have_libdevice()) return;
  // bf16, a persistent row: (sum, sum of squared deviations) pairs, each value a warp
  // butterfly of its own, both published to slots of their own behind one barrier; each
  // thread's deviations as sum(v^2) - sum * mean (8 values a thread: 8 squares, no subtraction
  // of the mean unless the squares overflow: behind a branch of the thread's own, 8 more).
  int block = 0;
  std::string bf = only_ptx(row_graph(DType::BF16, 512, 1024, "layer_norm"), &block);
  CHECK(block == 128);
  CHECK(count(bf, "bar.sync") == 1);
  CHECK(count(bf, "shfl.sync.bfly.b32") == 10);
  CHECK(count(bf, "st.shared.f32") == 2);
  CHECK(count(bf, "ld.shared.v4.f32") == 2);
  CHECK(count(bf, "ld.global.nc.L1::no_allocate.L2::256B.v4.u32") == 1);
  CHECK(count(bf, "0f7F7FFFFF") == 1); // the overflow check against FLT_MAX
  std::smatch sq;
  CHECK(std::regex_search(bf, sq, std::regex(R"(fma\.rn\.f32\s+%f\d+, (%f\d+), \1, )")));
  // The centered path's 8, Chan's merges (5 in the warp, 3 of the 4 warps' pairs).
  CHECK(count(bf, "sub.f32") == 8 + 5 + 3);
  // f32 keeps two passes (faster there on an H200); so does a bf16 row with masked vectors.
  CHECK(count(only_ptx(row_graph(DType::F32, 512, 1024, "layer_norm")), "bar.sync") == 2);
  std::string tail = only_ptx(row_graph(DType::BF16, 512, 1000, "layer_norm"), &block);
  CHECK(block == 128);
  CHECK(count(tail, "bar.sync") == 2);
  // Softmax's max and sum stay two reductions.
  CHECK(count(only_ptx(row_graph(DType::BF16, 512, 1024, "softmax")), "bar.sync") == 2);
  // Several rows per block: the row's one block reduction gets a barrier at its end.
  CHECK(count(rows_ptx(row_graph(DType::BF16, 512, 1024, "layer_norm"), 4).ptx, "bar.sync") == 2);
}

TEST_CASE("nvptx: a thread's sum(v^2) - sum * mean is exact enough for bf16 values only") {
  // The joint reduction's per-thread M2 of loaded bf16 values, as the kernel computes it in f32
  // (8 lanes of 4 vectors each accumulated with fma, the lanes summed as a tree, then
  // fma(-sum, mean, squares); the mean subtracted first where the squares overflow), then
  // Chan's merge of the 128 threads' pairs (in float64 here: the merge is the same for either
  // form). Against M2 in float64 over adversarial rows, where the
  // mean dwarfs the spread, values straddle binades or a few small values sit among large ones:
  // within 2^-17 of M2 for bf16. For f16 values the same arithmetic loses far more (so f16
  // keeps the subtraction of the thread's mean), which shows the simulation can tell.
  auto m2_error = [](const std::vector<float>& row) {
    const int threads = 128, lanes = 8, chunks = 4;
    double s_all = 0, m2_all = 0, n_all = 0, exact_mean = 0;
    for (float v : row) exact_mean += v;
    exact_mean /= double(row.size());
    double exact = 0;
    for (float v : row) exact += (v - exact_mean) * (v - exact_mean);
    for (int t = 0; t < threads; ++t) {
      float sum_l[lanes], sq_l[lanes];
      for (int l = 0; l < lanes; ++l) {
        sum_l[l] = -0.0f;
        sq_l[l] = -0.0f;
        for (int c = 0; c < chunks; ++c) {
          float v = row[size_t(c * threads * lanes + t * lanes + l)];
          sum_l[l] += v;
          sq_l[l] = std::fma(v, v, sq_l[l]);
        }
      }
      for (int w = 1; w < lanes; w *= 2)
        for (int l = 0; l + w < lanes; l += 2 * w) {
          sum_l[l] += sum_l[l + w];
          sq_l[l] += sq_l[l + w];
        }
      float sum = sum_l[0], mean = sum * (1.0f / (lanes * chunks));
      double m2 = std::fma(-sum, mean, sq_l[0]);
      if (!(sq_l[0] <= std::numeric_limits<float>::max())) { // overflow: subtract the mean
        float c = -0.0f;
        for (int i = 0; i < lanes * chunks; ++i) {
          float e = row[size_t((i / lanes) * threads * lanes + t * lanes + i % lanes)] - mean;
          c = std::fma(e, e, c);
        }
        m2 = c;
      }
      double n = lanes * chunks;
      if (n_all > 0) {
        double delta = double(sum) / n - s_all / n_all;
        m2_all += m2 + delta * delta * n * n_all / (n + n_all);
      } else {
        m2_all = m2;
      }
      s_all += sum;
      n_all += n;
    }
    return std::fabs(m2_all - exact) / exact;
  };
  uint64_t state = 42;
  auto uniform = [&](double lo, double hi) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * double(state >> 11) / double(1ull << 53);
  };
  auto bf16 = [](double v) { return bf16_to_float(float_to_bf16(float(v))); };
  auto f16 = [](double v) { return half_to_float(float_to_half(float(v))); };
  std::vector<std::pair<std::string, std::vector<float>>> rows;
  auto add = [&](const std::string& name, auto round, auto gen) {
    std::vector<float> row(4096);
    for (size_t i = 0; i < row.size(); ++i) row[i] = round(gen(i));
    rows.emplace_back(name, row);
  };
  add("4096 + U(-128, 128)", bf16, [&](size_t) { return 4096 + uniform(-128, 128); });
  add("2^50 (1 + U(-2^-6, 2^-6))", bf16,
      [&](size_t) { return std::ldexp(1 + uniform(-1.0 / 64, 1.0 / 64), 50); });
  add("1 +- 2^-8 (straddles a binade)", bf16,
      [&](size_t) { return uniform(0, 1) < 0.5 ? 1 - 1.0 / 256 : 1 + 1.0 / 128; });
  add("1000 with small values among them", bf16, [&](size_t i) {
    return i % 97 == 0 ? 1000.0 / 8 : i % 101 == 0 ? 0.001 : i % 89 == 0 ? 0.0 : 1000.0;
  });
  add("2^68 (1 + U(-2^-6, 2^-6)): squares overflow, M2 does not", bf16,
      [&](size_t) { return std::ldexp(1 + uniform(-1.0 / 64, 1.0 / 64), 68); });
  add("2^k spread over 30 binades", bf16,
      [&](size_t) { return std::ldexp(uniform(1, 2), int(uniform(-15, 15))); });
  add("N(0, 1)-like", bf16, [&](size_t) { return uniform(-1.7, 1.7); });
  for (auto& [name, row] : rows) {
    INFO(name);
    CHECK(m2_error(row) <= std::ldexp(1.0, -17));
  }
  std::vector<float> half(4096);
  for (float& v : half) v = f16(2048 + uniform(-8, 8));
  CHECK(m2_error(half) > std::ldexp(1.0, -10));
}

TEST_CASE("nvptx: the erf of 16-bit results is within 2^-18 of erf") {
  // kHalfErf evaluated as the kernels do (f32 Horner with fma), with 1/Q exact and off by an
  // ulp either way (rcp.approx): relative error at most 2^-18 over a dense sweep of the normal
  // floats up to 16 (every 509th; exhaustively, the largest is 2^-18.58 at x = 2.796).
  const HalfErf& e = kHalfErf;
  auto horner = [](const float* c, float s) {
    float p = c[HalfErf::kTerms - 1];
    for (int i = HalfErf::kTerms - 2; i >= 0; --i) p = std::fma(p, s, c[i]);
    return p;
  };
  double worst = 0;
  float worst_x = 0;
  int64_t n = 0;
  for (uint32_t u = 0x00800000u; u <= 0x41800000u; u += 509) {
    float x;
    std::memcpy(&x, &u, sizeof x);
    for (float sx : {x, -x}) {
      float c = std::min(std::max(sx, -e.clamp), e.clamp);
      float s = c * c;
      float q = 1.0f / horner(e.q, s);
      double exact = std::erf(double(sx));
      for (float r : {std::nextafter(q, 0.0f), q, std::nextafter(q, 2.0f)}) {
        double rel = std::fabs(double(c * horner(e.p, s) * r) - exact) / std::fabs(exact);
        if (rel > worst) worst = rel, worst_x = sx;
      }
      ++n;
    }
  }
  CAPTURE(worst_x);
  CHECK(n > 4000000);
  CHECK(worst <= std::ldexp(1.0, -18));
  CHECK(worst > std::ldexp(1.0, -20)); // the sweep reaches the fit's extremes
  // In the PTX of a bf16 erf: the clamp keeps NaN (min/max.NaN), one rcp.approx, no libdevice.
  TestGraph tg;
  ValueId x = tg.input_values("x", DType::BF16, {512, 1024}, tg.random_values(512 * 1024, -4, 4));
  tg.output(tg.op("aten.erf.default", {T(x)}));
  std::string ptx = only_ptx(tg);
  CHECK(count(ptx, "min.NaN.f32") == 8);
  CHECK(count(ptx, "max.NaN.f32") == 8);
  CHECK(count(ptx, "rcp.approx.ftz.f32") == 8);
  CHECK(count(ptx, "__nv_erff") == 0);
}

TEST_CASE("nvptx: the gelu of 16-bit results is y Phi(y) with Phi within 2^-19 of the normal CDF") {
  // kHalfPhi evaluated as the kernels do (f32 Horner with fma, 2^ and 1/ exact and off by an ulp
  // either way: ex2.approx.ftz and rcp.approx.ftz) against (1 + erf(y / sqrt 2)) / 2 in float64:
  // over a dense sweep of the normal floats up to 16 of either sign, and beyond, the absolute
  // error is at most 2^-19 (2^-19.28 at y = 0.914; the clamped rational it replaced: 2^-19.6,
  // as poor in relative terms in the far negative tail), relative 2^-18.5 for y >= 0.
  const HalfPhi& e = kHalfPhi;
  auto phis = [&](float y) {
    float t = y * y;
    float p = e.p[HalfPhi::kTerms - 1];
    for (int i = HalfPhi::kTerms - 2; i >= 0; --i) p = std::fma(p, t, e.p[i]);
    float z = float(std::exp2(double(y * p)));
    std::vector<double> r;
    for (float zz : {std::nextafter(z, 0.0f), z, std::nextafter(z, INFINITY)}) {
      float d = zz + 1.0f;
      float q = 1.0f / d;
      for (float qq : {std::nextafter(q, 0.0f), q, std::nextafter(q, 2.0f)}) r.push_back(qq);
    }
    return r;
  };
  double worst = 0, worst_rel = 0;
  float worst_y = 0;
  int64_t n = 0;
  std::vector<float> ys;
  for (uint32_t u = 0x00800000u; u <= 0x41800000u; u += 509) {
    float y0;
    std::memcpy(&y0, &u, sizeof y0);
    ys.push_back(y0);
  }
  for (float y0 : {20.0f, 100.0f, 1e4f, 1e20f, 3e38f, INFINITY}) ys.push_back(y0);
  for (float y0 : ys)
    for (float y : {y0, -y0}) {
      double exact = 0.5 * std::erfc(-double(y) * M_SQRT1_2);
      for (double phi : phis(y)) {
        double err = std::fabs(phi - exact);
        if (err > worst) worst = err, worst_y = y;
        if (y >= 0) worst_rel = std::max(worst_rel, err / exact);
      }
      ++n;
    }
  CAPTURE(worst_y);
  CHECK(n > 4000000);
  CHECK(worst <= std::ldexp(1.0, -19));
  CHECK(worst_rel <= std::ldexp(1.0, -19) * std::sqrt(2.0));
  CHECK(worst > std::ldexp(1.0, -21)); // the sweep reaches the fit's extremes
  // The exponent falls monotonically for y > 0 (Phi rises to 1 and stays there).
  float last = 0;
  for (float y = 0.01f; y < 1e4f; y *= 1.01f) {
    float t = y * y, p = e.p[HalfPhi::kTerms - 1];
    for (int i = HalfPhi::kTerms - 2; i >= 0; --i) p = std::fma(p, t, e.p[i]);
    CHECK(y * p < last);
    last = y * p;
  }
  // In the PTX of a bf16 gelu: no clamp, one ex2.approx.ftz and one rcp.approx.ftz a value, no
  // libdevice erf, no 1/sqrt 2 and no 1/2.
  TestGraph tg;
  ValueId x = tg.input_values("x", DType::BF16, {512, 1024}, tg.random_values(512 * 1024, -4, 4));
  tg.output(tg.op("aten.gelu.default", {T(x)}));
  std::string ptx = only_ptx(tg);
  CHECK(count(ptx, "min.NaN.f32") == 0);
  CHECK(count(ptx, "max.NaN.f32") == 0);
  CHECK(count(ptx, "ex2.approx.ftz.f32") == 8);
  CHECK(count(ptx, "rcp.approx.ftz.f32") == 8);
  CHECK(count(ptx, "0f3F3504F3") == 0); // 1/sqrt 2
  CHECK(count(ptx, "0f3F000000") == 0); // 1/2
  CHECK(count(ptx, "__nv_erff") == 0);
  // f32 keeps libdevice's erff.
  TestGraph tf;
  ValueId xf = tf.input_values("x", DType::F32, {512, 1024}, tf.random_values(512 * 1024, -4, 4));
  tf.output(tf.op("aten.gelu.default", {T(xf)}));
  std::string f32 = only_ptx(tf);
  CHECK(count(f32, "rcp.approx.ftz.f32") == 0);
  CHECK(count(f32, "0f3F3504F3") > 0);
}

TEST_CASE("nvptx: 16-bit rows fold a per-row subtrahend into one fma") {
  // Softmax's exp(v - max) is ex2.approx.ftz(fma(v, log2 e, -max log2 e)) and layer norm's
  // (x - mean) rstd is fma(x, rstd, -mean rstd) in bf16; f32 keeps the subtractions.
  std::string sm = only_ptx(row_graph(DType::BF16, 512, 1024, "softmax"));
  CHECK(count(sm, "ex2.approx.ftz.f32") == 8);
  CHECK(count(sm, "sub.f32") == 0);
  CHECK(count(sm, ", 0f3FB8AA3B, ") == 8); // fma(v, log2 e, ...)
  CHECK(count(sm, "0fBFB8AA3B;") == 1);    // -max log2 e, once
  // The products x rstd: fma with rstd (rsqrt.approx's result) as the second operand, 8 per
  // thread in bf16, none in f32 ((x - mean) * rstd: mul).
  auto x_rstd = [](const std::string& ptx) {
    std::smatch m;
    if (!std::regex_search(ptx, m, std::regex(R"(rsqrt\.approx\.f32\s+(%f\d+),)"))) return -1;
    std::regex use("fma\\.rn\\.f32\\s+%f\\d+, %f\\d+, " + m[1].str() + ", ");
    return int(
        std::distance(std::sregex_iterator(ptx.begin(), ptx.end(), use), std::sregex_iterator()));
  };
  CHECK(x_rstd(only_ptx(row_graph(DType::BF16, 512, 1024, "layer_norm"))) == 8);
  CHECK(x_rstd(only_ptx(row_graph(DType::F32, 512, 1024, "layer_norm"))) == 0);
  CHECK(count(only_ptx(row_graph(DType::F32, 512, 1024, "softmax")), "sub.f32") >= 8);
}

TEST_CASE("nvptx: many short rows get a thread each") {
  // convnet's pooling kernel has 1M rows of 4: a thread per row, 256 rows per block.
  for (const char* what : {"sum", "softmax", "pointwise"}) {
    CAPTURE(what);
    int64_t rn = 0;
    RowMapping m = only_mapping(row_graph(DType::F32, 1048576, 4, what), &rn);
    CHECK(rn == 4);
    CHECK(m.block == 0);
    CHECK(m.rows == 256);
    CHECK(!m.persistent);
  }
  // Rows of 32 still qualify; 64 elements get a block per row again.
  CHECK(only_mapping(row_graph(DType::F32, 65536, 32, "sum")).block == 0);
  RowMapping longer = only_mapping(row_graph(DType::F32, 65536, 64, "sum"));
  CHECK(longer.block == 32);
  CHECK(longer.rows == 1);
  // Too few rows to give every multiprocessor a 256-thread block: a block per row.
  RowMapping few = only_mapping(row_graph(DType::F32, 4096, 4, "sum"));
  CHECK(few.block == 32);
  CHECK(few.rows == 1);
}

TEST_CASE("nvptx: rows without reductions are packed where a block per row would idle threads") {
  // 64 f32 (16 vectors, fewer than a warp): 16 rows of 16 threads in a 256-thread block.
  RowMapping s = only_mapping(row_graph(DType::F32, 4096, 64, "pointwise"));
  CHECK(s.packed);
  CHECK(s.block == 16);
  CHECK(s.rows == 16);
  CHECK(format_mapping(s) == "block=16 vec=4 rows=16 packed");
  // 768 f32 (192 vectors, no power of two): a row of 192 threads, not 256 with 64 idle.
  RowMapping m = only_mapping(row_graph(DType::F32, 4096, 768, "pointwise"));
  CHECK(m.packed);
  CHECK(m.block == 192);
  CHECK(m.rows == 1);
  // 12 f32 (3 vectors): 85 rows in 255 threads.
  RowMapping t = only_mapping(row_graph(DType::F32, 4096, 12, "pointwise"));
  CHECK(t.packed);
  CHECK(t.block * t.rows == 255);
  // A power of two of at least a warp keeps a block per row; reductions are never packed.
  CHECK_FALSE(only_mapping(row_graph(DType::F32, 64, 1024, "pointwise")).packed);
  CHECK_FALSE(only_mapping(row_graph(DType::F32, 4096, 768, "sum")).packed);
  CHECK_FALSE(only_mapping(row_graph(DType::F32, 4096, 768, "softmax")).packed);
  // --max-autotune also times other packed block sizes and the unpacked looping form.
  LoopProgram p = lower(decompose(row_graph(DType::F32, 4096, 64, "pointwise").g));
  Schedule sch = fuse(p);
  REQUIRE(sch.kernels.size() == 1);
  std::vector<RowMapping> c = nvptx_mapping_candidates(p, sch.kernels[0]);
  REQUIRE(!c.empty());
  CHECK(c[0] == s);
  bool unpacked = false, other_packed = false;
  for (const RowMapping& x : c) {
    unpacked = unpacked || !x.packed;
    other_packed = other_packed || (x.packed && x.rows != s.rows);
  }
  CHECK(unpacked);
  CHECK(other_packed);
}

TEST_CASE("nvptx: PTX of the packed form") {
  if (!have_libdevice()) return;
  PtxProgram pp = compile_inductor_ptx(decompose(row_graph(DType::F32, 4001, 64, "pointwise").g),
                                       {}, "sm_90", kLibdevice);
  REQUIRE(pp.kernels.size() == 1);
  const PtxKernelInfo& k = pp.kernels[0];
  CHECK(k.block == 256);
  CHECK(k.rows == 16);
  CHECK(k.grid == (4001 + 15) / 16); // the last block's surplus rows return at once
  CHECK(count(k.ptx, ".maxntid 256, 1, 1") == 1);
  // No cooperation between threads; a row is ctaid * 16 + tid / 16 (no %ntid), a thread's
  // vector tid % 16; one 16-byte load and store each, no loop.
  CHECK(count(k.ptx, "bar.sync") == 0);
  CHECK(count(k.ptx, "shfl.sync") == 0);
  CHECK(count(k.ptx, "%ntid.x") == 0);
  CHECK(count(k.ptx, "ld.global.nc.v4.f32") == 1);
  CHECK(count(k.ptx, "st.global.v4.f32") == 1);
  CHECK(count(k.ptx, "bra") == 1);
}

TEST_CASE("nvptx: a causal mask's masked vectors are not loaded") {
  if (!have_libdevice()) return;
  for (DType t : {DType::F32, DType::BF16}) {
    CAPTURE(dtype_name(t));
    PtxProgram pp = compile_inductor_ptx(decompose(causal_softmax_graph(t, 4, 512, false).g), {},
                                         "sm_90", kLibdevice);
    REQUIRE(pp.kernels.size() == 1);
    // Each vector of the row is loaded only where some lane lies on or below the diagonal.
    CHECK(count(pp.kernels[0].ll, "guard.load") >= 1);
    CHECK(count(pp.kernels[0].ll, "guarded = phi") >= 1);
    // x read outside the where() too: every vector is loaded.
    PtxProgram all = compile_inductor_ptx(decompose(causal_softmax_graph(t, 4, 512, true).g), {},
                                          "sm_90", kLibdevice);
    REQUIRE(all.kernels.size() == 1);
    CHECK(count(all.kernels[0].ll, "guard.load") == 0);
  }
}

TEST_CASE("nvptx: PTX of the short-row form") {
  if (!have_libdevice()) return;
  for (const char* what : {"sum", "softmax"}) {
    CAPTURE(what);
    PtxProgram pp = compile_inductor_ptx(decompose(row_graph(DType::F32, 1048576, 4, what).g), {},
                                         "sm_90", kLibdevice);
    REQUIRE(pp.kernels.size() == 1);
    const PtxKernelInfo& k = pp.kernels[0];
    CHECK(k.block == 256);
    CHECK(k.rows == 256);
    CHECK(k.grid == 1048576 / 256);
    // No cooperation between threads: no shuffles, no barriers, no shared memory.
    CHECK(count(k.ptx, "shfl.sync") == 0);
    CHECK(count(k.ptx, "bar.sync") == 0);
    CHECK(count(k.ptx, ".shared") == 0);
    // The row is ctaid * ntid + tid, checked against xnumel (the last parameter).
    CHECK(count(k.ptx, "%ctaid.x") == 1);
    CHECK(count(k.ptx, "%ntid.x") == 1);
    CHECK(count(k.ptx, "%tid.x") == 1);
    CHECK(count(k.ptx, "setp.ge.s64") >= 1);
    // One branch (past the last row): no loop over rows, and the 4-element r loops unrolled.
    CHECK(count(k.ptx, "bra") == 1);
  }
  // A grid that does not divide: the last block's surplus threads find no row.
  PtxProgram odd = compile_inductor_ptx(decompose(row_graph(DType::F32, 40000, 3, "sum").g), {},
                                        "sm_90", kLibdevice);
  REQUIRE(odd.kernels.size() == 1);
  CHECK(odd.kernels[0].rows == 256);
  CHECK(odd.kernels[0].grid == (40000 + 255) / 256);
}

TEST_CASE("nvptx: one module of several kernels; unknown architectures and link errors throw") {
  std::vector<std::string> known = nvptx_processors();
  auto at = [&](const std::string& a) {
    return std::find(known.begin(), known.end(), a) - known.begin();
  };
  REQUIRE(at("sm_90") < int64_t(known.size()));
  CHECK(at("sm_80") < at("sm_90"));
  CHECK(at("sm_90") < at("sm_90a"));
  CHECK(at("banana") == int64_t(known.size()));
  if (!have_libdevice()) return;
  LoopProgram p = lower(decompose(row_graph(DType::F32, 64, 1024, "softmax").g));
  Schedule s = fuse(p);
  REQUIRE(s.kernels.size() == 1);
  // Checked before any kernel compiles (LLVM would only warn, from every worker thread).
  CHECK_THROWS_WITH_AS(generate_ptx(p, s, "banana", kLibdevice),
                       doctest::Contains("unknown CUDA architecture 'banana'"), Error);
  PtxKernel k = generate_ptx(p, s, "sm_90", kLibdevice).at(0);
  REQUIRE(count(k.ll, "__nv_expf") >= 1);
  // The same kernel twice, the second renamed: one module, libdevice's expf in it once.
  std::string ptx = link_ptx_kernels({{k.name, k.ll, ""}, {k.name, k.ll, k.name + "_again"}},
                                     "sm_90", kLibdevice, true);
  CHECK(count(ptx, ".version") == 1);
  CHECK(count(ptx, ".visible .entry " + k.name + "(") == 1);
  CHECK(count(ptx, ".visible .entry " + k.name + "_again(") == 1);
  CHECK(count(ptx, "func_retval0) __nv_expf(") <= 1);
  std::string ll = link_ptx_kernels({{k.name, k.ll, ""}, {k.name, k.ll, k.name + "_again"}},
                                    "sm_90", kLibdevice, false);
  CHECK(count(ll, "define ") == 2);
  CHECK(count(ll, "declare float @__nv_expf") == 1);
  // Twice under one name: LLVM's linker reports it through the context's diagnostics, an
  // fxc::Error (its default handler would print and exit the process).
  CHECK_THROWS_WITH_AS(
      link_ptx_kernels({{k.name, k.ll, ""}, {k.name, k.ll, ""}}, "sm_90", kLibdevice, true),
      doctest::Contains("symbol multiply defined"), Error);
}

TEST_CASE("nvptx: a kernel of more parameter space than PTX 7.8 allows is PTX 8.1") {
  // ptxas rejects a kernel taking over 0x1100 bytes of parameters in PTX 7.8 ("uses too much
  // parameter space"), as EfficientNet-B0's train graph has in a cat of 1152 inputs; PTX 8.1
  // allows 32764 bytes on sm_70 and later. Other kernels stay 7.8.
  TestGraph tg;
  std::vector<ValueId> parts;
  for (int i = 0; i < 700; ++i)
    parts.push_back(
        tg.input_values("x" + std::to_string(i), DType::F32, {1, 4}, tg.random_values(4, -1, 1)));
  tg.output(tg.op("aten.cat.default", {{"", Arg::of_tensors(parts)}, I(0)}));
  PtxProgram pp = compile_inductor_ptx(decompose(tg.g), {}, "sm_90", kLibdevice);
  REQUIRE(!pp.kernels.empty());
  bool big = false;
  for (const PtxKernelInfo& k : pp.kernels)
    if (k.ptx.find(".version 8.1") != std::string::npos) big = true;
  CHECK(big);
  CHECK(only_ptx(row_graph(DType::F32, 64, 1024, "pointwise")).find(".version 7.8") !=
        std::string::npos);
}
