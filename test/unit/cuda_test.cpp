// Unit tests for the CUDA runtime: the no-driver error, the caching allocator, matmul and conv
// problem checks (everywhere); PTX modules, launches, cuBLASLt and cuDNN against host references
// (on a GPU: test/gpu/run.sh sets FXC_REQUIRE_CUDA=1, which turns a missing GPU into a failure).
#include "runtime/cublaslt.h"
#include "runtime/cuda_alloc.h"
#include "runtime/cuda_driver.h"
#include "runtime/cuda_tensor.h"
#include "runtime/cudnn.h"
#include "runtime/nvjitlink.h"
#include "runtime/tensor.h"
#include "skip.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

using namespace fxc;
using namespace fxc::cuda;
using fxc::testing::have_cuda;
using fxc::testing::have_dependency;

namespace {

// PTX of a vector add c[i] = a[i] + b[i] for i < n, made by
// `llc-19 -march=nvptx64 -mcpu=sm_90 -O2 test/gpu/vadd.ll` (comments dropped).
const char* kVaddPtx = R"(
.version 7.8
.target sm_90
.address_size 64

.visible .entry vadd(
	.param .u64 vadd_param_0,
	.param .u64 vadd_param_1,
	.param .u64 vadd_param_2,
	.param .u32 vadd_param_3
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<6>;
	.reg .f32 	%f<4>;
	.reg .b64 	%rd<8>;

	mov.u32 	%r1, %tid.x;
	mov.u32 	%r2, %ctaid.x;
	ld.param.u32 	%r3, [vadd_param_3];
	mov.u32 	%r4, %ntid.x;
	mad.lo.s32 	%r5, %r2, %r4, %r1;
	setp.ge.s32 	%p1, %r5, %r3;
	@%p1 bra 	$L__BB0_2;
	ld.param.u64 	%rd4, [vadd_param_0];
	ld.param.u64 	%rd5, [vadd_param_1];
	ld.param.u64 	%rd6, [vadd_param_2];
	mul.wide.s32 	%rd7, %r5, 4;
	add.s64 	%rd1, %rd4, %rd7;
	add.s64 	%rd2, %rd5, %rd7;
	add.s64 	%rd3, %rd6, %rd7;
	ld.global.f32 	%f1, [%rd1];
	ld.global.f32 	%f2, [%rd2];
	add.rn.f32 	%f3, %f1, %f2;
	st.global.f32 	[%rd3], %f3;
$L__BB0_2:
	ret;
}
)";

// A fake device for the allocator: hands out 256-aligned addresses up to `capacity` bytes.
struct FakeMemory : DeviceMemory {
  size_t capacity = size_t(1) << 40;
  size_t used = 0;
  DevicePtr next = 0x10000;
  std::map<DevicePtr, size_t> live;
  int allocs = 0, releases = 0;
  DevicePtr allocate(size_t bytes) override {
    if (used + bytes > capacity) throw CudaError("fake: out of memory");
    DevicePtr p = next;
    next += (bytes + 255) / 256 * 256;
    live[p] = bytes;
    used += bytes;
    ++allocs;
    return p;
  }
  void release(DevicePtr p) override {
    auto it = live.find(p);
    REQUIRE(it != live.end());
    used -= it->second;
    live.erase(it);
    ++releases;
  }
};

// A device buffer from the caching allocator, freed on scope exit.
struct Buffer {
  CachingAllocator& alloc;
  DevicePtr ptr;
  Buffer(CachingAllocator& a, size_t bytes) : alloc(a), ptr(a.allocate(bytes)) {}
  ~Buffer() { alloc.free(ptr); }
};

std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1, float hi = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// ‖out − ref‖ / ‖ref‖; infinity when out holds a NaN.
double rel_error(const std::vector<double>& out, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (std::isnan(out[i])) return INFINITY;
    num += (out[i] - ref[i]) * (out[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / den);
}

// Values as stored in `dt` (rounded), and back to double.
std::vector<uint8_t> encode(const std::vector<float>& v, DType dt) {
  std::vector<uint8_t> bytes(v.size() * dtype_size(dt));
  for (size_t i = 0; i < v.size(); ++i) {
    if (dt == DType::F32) {
      std::memcpy(&bytes[i * 4], &v[i], 4);
      continue;
    }
    uint16_t h = dt == DType::BF16 ? float_to_bf16(v[i]) : float_to_half(v[i]);
    std::memcpy(&bytes[i * 2], &h, 2);
  }
  return bytes;
}
std::vector<double> decode(const std::vector<uint8_t>& bytes, DType dt) {
  size_t es = dtype_size(dt);
  std::vector<double> v(bytes.size() / es);
  for (size_t i = 0; i < v.size(); ++i) {
    if (dt == DType::F32) {
      float f;
      std::memcpy(&f, &bytes[i * 4], 4);
      v[i] = f;
      continue;
    }
    uint16_t h;
    std::memcpy(&h, &bytes[i * 2], 2);
    v[i] = dt == DType::BF16 ? bf16_to_float(h) : half_to_float(h);
  }
  return v;
}

double gelu_tanh(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

// The host reference of a normalized MatmulProblem over decoded (rounded) operands; D holds
// beta's input.
std::vector<double> reference_matmul(const MatmulProblem& p, const std::vector<double>& a,
                                     const std::vector<double>& b, const std::vector<double>& bias,
                                     std::vector<double> d, bool erf_gelu = false) {
  for (int64_t t = 0; t < p.batch; ++t)
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) {
        double acc = 0;
        for (int64_t l = 0; l < p.k; ++l) {
          double av = a[t * p.stride_a + (p.trans_a ? l * p.lda + i : i * p.lda + l)];
          double bv = b[t * p.stride_b + (p.trans_b ? j * p.ldb + l : l * p.ldb + j)];
          acc += av * bv;
        }
        double& out = d[t * p.stride_d + i * p.ldd + j];
        double v = p.alpha * acc + p.beta * out;
        if (p.epilogue != Epilogue::None) v += bias[j];
        if (p.epilogue == Epilogue::ReluBias) v = std::max(v, 0.0);
        if (p.epilogue == Epilogue::GeluBias)
          v = erf_gelu ? 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))) : gelu_tanh(v);
        out = v;
      }
  return d;
}

// Runs `p` through cuBLASLt on random data and returns ‖out − ref‖ / ‖ref‖ over every element
// of D (rows' padding included, which must keep its initial values). `erf_error`, when given,
// receives the error against the exact (erf) GELU instead of the tanh approximation.
double run_matmul(const MatmulProblem& problem, uint32_t seed, double* erf_error = nullptr) {
  Context& ctx = Context::get();
  MatmulProblem p = normalize(problem);
  int64_t a_len = (p.batch - 1) * p.stride_a + (p.trans_a ? p.k : p.m) * p.lda;
  int64_t b_len = (p.batch - 1) * p.stride_b + (p.trans_b ? p.n : p.k) * p.ldb;
  int64_t d_len = (p.batch - 1) * p.stride_d + p.m * p.ldd;
  std::vector<uint8_t> a = encode(random_floats(a_len, seed), p.dtype);
  std::vector<uint8_t> b = encode(random_floats(b_len, seed + 1), p.dtype);
  std::vector<uint8_t> bias = encode(random_floats(p.n, seed + 2), p.dtype);
  std::vector<uint8_t> d0 = encode(random_floats(d_len, seed + 3), p.dtype);
  CachingAllocator& alloc = device_allocator();
  Buffer da(alloc, a.size()), db(alloc, b.size()), dbias(alloc, bias.size()), dd(alloc, d0.size());
  ctx.copy_to_device(da.ptr, a.data(), a.size());
  ctx.copy_to_device(db.ptr, b.data(), b.size());
  ctx.copy_to_device(dbias.ptr, bias.data(), bias.size());
  ctx.copy_to_device(dd.ptr, d0.data(), d0.size());
  bool with_bias = p.epilogue != Epilogue::None;
  CublasLt::get().matmul(problem, da.ptr, db.ptr, with_bias ? dbias.ptr : 0, dd.ptr);
  std::vector<uint8_t> out(d0.size());
  ctx.copy_to_host(out.data(), dd.ptr, out.size());
  std::vector<double> ref = reference_matmul(p, decode(a, p.dtype), decode(b, p.dtype),
                                             decode(bias, p.dtype), decode(d0, p.dtype));
  std::vector<double> got = decode(out, p.dtype);
  if (erf_error)
    *erf_error = rel_error(got, reference_matmul(p, decode(a, p.dtype), decode(b, p.dtype),
                                                 decode(bias, p.dtype), decode(d0, p.dtype), true));
  if (p.epilogue == Epilogue::ReluBias)
    for (size_t i = 0; i < ref.size(); ++i)
      if (ref[i] == 0.0 && got[i] != 0.0) return INFINITY; // relu writes exact zeros
  return rel_error(got, ref);
}

} // namespace

TEST_CASE("cuda: without a driver or device every entry point gives one clean error") {
  std::string why = Context::unavailable_reason();
  if (why.empty()) {
    const DeviceInfo& info = Context::get().info();
    MESSAGE("CUDA device: " << info.name << " " << info.arch() << ", " << info.multiprocessors
                            << " SMs, driver " << info.driver_version);
    CHECK(!info.name.empty());
    CHECK(info.cc_major >= 5);
    CHECK(info.multiprocessors > 0);
    CHECK(info.total_memory > 0);
    CHECK(info.driver_version >= 12000);
    CHECK(info.max_threads_per_block >= 1024);
    CHECK(info.arch().rfind("sm_", 0) == 0);
    return;
  }
  CHECK_FALSE(fxc::testing::env_is("FXC_REQUIRE_CUDA", "1"));
  CHECK(why.rfind("no CUDA driver/device: ", 0) == 0);
  CHECK_THROWS_WITH_AS(Context::get(), why.c_str(), CudaError);
  // The libraries report the driver's absence first, not their own.
  CHECK_THROWS_WITH_AS(CublasLt::get(), why.c_str(), CudaError);
  CHECK_THROWS_WITH_AS(Cudnn::get(), why.c_str(), CudaError);
  CHECK(CublasLt::unavailable_reason() == why);
  CHECK(Cudnn::unavailable_reason() == why);
}

TEST_CASE("cuda: the caching allocator rounds sizes into buckets") {
  CHECK(CachingAllocator::round_size(0) == 512);
  CHECK(CachingAllocator::round_size(1) == 512);
  CHECK(CachingAllocator::round_size(512) == 512);
  CHECK(CachingAllocator::round_size(513) == 1024);
  CHECK(CachingAllocator::round_size((1 << 20) - 1) == 1 << 20);
  CHECK(CachingAllocator::round_size(1 << 20) == 2 << 20);
  CHECK(CachingAllocator::round_size((2 << 20) + 1) == 4 << 20);
  CHECK(CachingAllocator::round_size(5 << 20) == 6 << 20);
  FakeMemory mem;
  CachingAllocator alloc(mem);
  CHECK_THROWS_WITH_AS(alloc.allocate(CachingAllocator::kMaxBytes + 1),
                       doctest::Contains("is too large"), CudaError);
  CHECK(mem.allocs == 0);
}

TEST_CASE("cuda: the caching allocator reuses freed blocks of the same bucket") {
  FakeMemory mem;
  {
    CachingAllocator alloc(mem);
    DevicePtr a = alloc.allocate(1000);
    CHECK(alloc.block_size(a) == 1024);
    alloc.free(a);
    DevicePtr b = alloc.allocate(900); // same 1024-byte bucket
    CHECK(b == a);
    DevicePtr c = alloc.allocate(1000); // a is live: a new block
    CHECK(c != a);
    AllocatorStats s = alloc.stats();
    CHECK(s.requests == 3);
    CHECK(s.cache_hits == 1);
    CHECK(s.device_allocs == 2);
    CHECK(s.bytes_in_use == 2048);
    CHECK(s.bytes_cached == 0);

    // A cached block at most a quarter larger than the request is taken, a larger one is not.
    DevicePtr big = alloc.allocate(2560);
    alloc.free(big);
    DevicePtr fits = alloc.allocate(2048); // 2560 <= 2048 + 512
    CHECK(fits == big);
    CHECK(alloc.block_size(fits) == 2560);
    alloc.free(fits);
    DevicePtr too_small = alloc.allocate(1536); // 2560 > 1536 + 384
    CHECK(too_small != big);
    s = alloc.stats();
    CHECK(s.cache_hits == 2);
    CHECK(s.bytes_cached == 2560);
    CHECK(s.bytes_in_use == 2048 + 1536);
    CHECK(s.peak_bytes_in_use == 2048 + 2560);

    // Large blocks are 2 MiB granules.
    DevicePtr l = alloc.allocate(5 << 20);
    CHECK(alloc.block_size(l) == 6 << 20);
    alloc.free(l);
    CHECK(alloc.allocate((5 << 20) + 7) == l);

    alloc.free(b);
    alloc.free(c);
    alloc.empty_cache();
    s = alloc.stats();
    CHECK(s.bytes_cached == 0);
    CHECK(s.device_frees == 3);  // b, c and `big`
    CHECK(mem.live.size() == 2); // too_small and l are still live
  }
  CHECK(mem.live.empty()); // the destructor returns live and cached blocks
  CHECK(mem.releases == mem.allocs);
}

TEST_CASE("cuda: the caching allocator empties its cache and retries when out of memory") {
  FakeMemory mem;
  mem.capacity = 4 << 20;
  CachingAllocator alloc(mem);
  DevicePtr a = alloc.allocate(2 << 20);
  DevicePtr b = alloc.allocate(2 << 20);
  alloc.free(a);
  alloc.free(b);
  DevicePtr c = alloc.allocate(4 << 20); // needs the cached 4 MiB back
  AllocatorStats s = alloc.stats();
  CHECK(s.oom_retries == 1);
  CHECK(s.device_frees == 2);
  CHECK(s.bytes_cached == 0);
  CHECK(s.bytes_in_use == 4 << 20);
  // Nothing cached to give back: the backend's error reaches the caller.
  CHECK_THROWS_WITH_AS(alloc.allocate(512), "fake: out of memory", CudaError);
  alloc.free(c);
}

TEST_CASE("cuda: matmul problems are checked and mapped to column-major cuBLASLt operands") {
  MatmulProblem p;
  p.m = 4, p.n = 5, p.k = 6;
  MatmulProblem q = normalize(p);
  CHECK(q.lda == 6);
  CHECK(q.ldb == 5);
  CHECK(q.ldd == 5);
  ColumnMajorGemm g = column_major(q);
  // Dᵀ [5, 4] = Bᵀ [5, 6] · Aᵀ [6, 4]: B's row-major [6, 5] is column-major [5, 6].
  CHECK(!g.trans_first);
  CHECK(g.first_rows == 5);
  CHECK(g.first_cols == 6);
  CHECK(g.ld_first == 5);
  CHECK(!g.trans_second);
  CHECK(g.second_rows == 6);
  CHECK(g.second_cols == 4);
  CHECK(g.ld_second == 6);
  CHECK(g.d_rows == 5);
  CHECK(g.d_cols == 4);
  CHECK(g.ld_d == 5);

  p.trans_a = p.trans_b = true; // A stored [6, 4], B stored [5, 6]
  p.batch = 3;
  q = normalize(p);
  CHECK(q.lda == 4);
  CHECK(q.ldb == 6);
  CHECK(q.stride_d == 20); // packed batches of D
  g = column_major(q);
  CHECK(g.trans_first);
  CHECK(g.first_rows == 6);
  CHECK(g.first_cols == 5);
  CHECK(g.trans_second);
  CHECK(g.second_rows == 4);
  CHECK(g.second_cols == 6);

  MatmulProblem bf = p;
  bf.dtype = DType::BF16;
  bf.allow_tf32 = true;
  CHECK_FALSE(normalize(bf).allow_tf32); // TF32 is a float32 mode

  auto fails = [](MatmulProblem x, const char* msg) {
    CHECK_THROWS_WITH_AS(normalize(x), doctest::Contains(msg), CudaError);
  };
  MatmulProblem x = p;
  x.dtype = DType::F64;
  fails(x, "unsupported dtype f64");
  x = p;
  x.k = 0;
  fails(x, "k = 0 is outside");
  x = p;
  x.lda = 3;
  fails(x, "lda = 3 is less than the row length 4");
  x = p;
  x.stride_d = 19;
  fails(x, "batches of D overlap");
  x = p;
  x.stride_a = -1;
  fails(x, "negative batch stride");
  x = p;
  x.ldd = int64_t(1) << 62;
  fails(x, "D's extent overflows");
}

namespace {

TensorMeta meta(std::vector<int64_t> sizes, std::vector<int64_t> strides, DType dt = DType::F32) {
  TensorMeta m;
  m.dtype = dt;
  m.sizes = std::move(sizes);
  m.strides = std::move(strides);
  return m;
}

// Element `idx` of a tensor laid out by `m` in `storage`.
double at(const std::vector<double>& storage, const TensorMeta& m, std::vector<int64_t> idx) {
  int64_t off = 0;
  for (size_t i = 0; i < idx.size(); ++i) off += idx[i] * m.strides[i];
  return storage[off];
}

// Storage elements a layout reaches (largest offset + 1).
size_t extent(const TensorMeta& m) {
  int64_t e = 1;
  for (size_t i = 0; i < m.sizes.size(); ++i) e += (m.sizes[i] - 1) * m.strides[i];
  return size_t(e);
}

// The product of strided `a` and `b` computed through their strides, against the one
// reference_matmul computes from matmul_problem()'s trans flags, row and batch strides.
void check_problem_semantics(const TensorMeta& a, const TensorMeta& b, const TensorMeta& d) {
  std::optional<MatmulProblem> p = matmul_problem(a, b, d);
  REQUIRE(p.has_value());
  MatmulProblem q = normalize(*p);
  auto values = [](size_t n, double base) {
    std::vector<double> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = base + 0.5 * double(i % 17) - 0.03 * double(i);
    return v;
  };
  std::vector<double> as = values(extent(a), 1), bs = values(extent(b), -2);
  std::vector<double> got = reference_matmul(q, as, bs, {}, std::vector<double>(extent(d), 0.0));
  bool batched = a.dim() == 3;
  int64_t nb = batched ? a.sizes[0] : 1;
  int wrong = 0;
  for (int64_t t = 0; t < nb; ++t)
    for (int64_t i = 0; i < q.m; ++i)
      for (int64_t j = 0; j < q.n; ++j) {
        double acc = 0;
        for (int64_t l = 0; l < q.k; ++l)
          acc += batched ? at(as, a, {t, i, l}) * at(bs, b, {t, l, j})
                         : at(as, a, {i, l}) * at(bs, b, {l, j});
        wrong += (batched ? at(got, d, {t, i, j}) : at(got, d, {i, j})) != acc;
      }
  CHECK(wrong == 0);
}

} // namespace

TEST_CASE("cuda: matmul problems come from operand layouts without copies") {
  std::optional<MatmulProblem> p =
      matmul_problem(meta({4, 6}, {6, 1}), meta({6, 5}, {5, 1}), meta({4, 5}, {5, 1}));
  REQUIRE(p.has_value());
  CHECK(!p->trans_a);
  CHECK(!p->trans_b);
  CHECK(p->lda == 6);
  CHECK(p->ldb == 5);
  CHECK(p->ldd == 5);
  CHECK(p->batch == 1);
  // x @ w.t() (a linear layer): w [5, 6] viewed as [6, 5] with strides [1, 6].
  p = matmul_problem(meta({4, 6}, {1, 4}), meta({6, 5}, {1, 6}), meta({4, 5}, {5, 1}));
  REQUIRE(p.has_value());
  CHECK(p->trans_a);
  CHECK(p->lda == 4);
  CHECK(p->trans_b);
  CHECK(p->ldb == 6);
  // A batch of products with an expanded (stride 0) right operand.
  p = matmul_problem(meta({3, 4, 6}, {24, 6, 1}), meta({3, 6, 5}, {0, 5, 1}),
                     meta({3, 4, 5}, {20, 5, 1}));
  REQUIRE(p.has_value());
  CHECK(p->batch == 3);
  CHECK(p->stride_a == 24);
  CHECK(p->stride_b == 0);
  CHECK(p->stride_d == 20);
  // Neither stride is 1, or D is transposed: the caller copies.
  CHECK_FALSE(matmul_problem(meta({4, 6}, {12, 2}), meta({6, 5}, {5, 1}), meta({4, 5}, {5, 1})));
  CHECK_FALSE(matmul_problem(meta({4, 6}, {6, 1}), meta({6, 5}, {5, 1}), meta({4, 5}, {1, 4})));
  CHECK_FALSE(matmul_problem(meta({4, 6}, {0, 1}), meta({6, 5}, {5, 1}), meta({4, 5}, {5, 1})));
  CHECK_THROWS_WITH_AS(
      matmul_problem(meta({4, 6}, {6, 1}), meta({7, 5}, {5, 1}), meta({4, 5}, {5, 1})),
      "matmul: shapes do not form a product: f32[4, 6] @ f32[7, 5] -> f32[4, 5]", CudaError);
  CHECK_THROWS_WITH_AS(
      matmul_problem(meta({4, 6}, {6, 1}), meta({6, 5}, {5, 1}, DType::BF16), meta({4, 5}, {5, 1})),
      doctest::Contains("operands of different dtypes"), CudaError);

  // The problem computes what the strides say, for layouts of every kind.
  check_problem_semantics(meta({4, 6}, {8, 1}), meta({6, 5}, {1, 7}), meta({4, 5}, {9, 1}));
  check_problem_semantics(meta({1, 6}, {99, 3}), meta({6, 1}, {2, 99}), meta({1, 1}, {5, 7}));
  check_problem_semantics(meta({3, 4, 6}, {24, 1, 4}), meta({3, 6, 5}, {0, 1, 6}),
                          meta({3, 4, 5}, {25, 5, 1}));
  check_problem_semantics(meta({1, 4, 6}, {7, 6, 1}), meta({1, 6, 5}, {3, 5, 1}),
                          meta({1, 4, 5}, {0, 5, 1}));
}

TEST_CASE("cuda: conv2d output sizes follow PyTorch's formula and reject bad shapes") {
  Conv2dProblem p;
  p.n = 2, p.c = 4, p.h = 7, p.w = 9, p.k = 6, p.r = 3, p.s = 2;
  p.stride_h = 2, p.pad_h = 1, p.dilation_w = 2, p.groups = 2;
  // out_h = (7 + 2 - 2 - 1) / 2 + 1 = 4; out_w = (9 - 2 - 1) / 1 + 1 = 7
  CHECK(conv2d_output_sizes(p) == std::array<int64_t, 4>{2, 6, 4, 7});
  Conv2dProblem x = p;
  x.groups = 4;
  CHECK_THROWS_WITH_AS(conv2d_output_sizes(x), doctest::Contains("do not divide into 4 groups"),
                       CudaError);
  x = p;
  x.r = 10;
  CHECK_THROWS_WITH_AS(conv2d_output_sizes(x), doctest::Contains("larger than the padded input"),
                       CudaError);
  x = p;
  x.stride_w = 0;
  CHECK_THROWS_WITH_AS(conv2d_output_sizes(x), doctest::Contains("stride = 0"), CudaError);
  x = p;
  x.n = 1 << 20, x.c = 1 << 12;
  CHECK_THROWS_WITH_AS(conv2d_output_sizes(x), doctest::Contains("2^31 or more elements"),
                       CudaError);
}

TEST_CASE("cuda: nvJitLink compiles PTX to a cubin without a GPU") {
  std::string why = nvjitlink_unavailable_reason();
  CHECK_THROWS_WITH_AS(ptx_to_cubin(kVaddPtx, "sm90", "vadd.ptx"),
                       "nvJitLink: 'sm90' is not a CUDA architecture (sm_90, sm_90a, ...)",
                       CudaError);
  if (!have_dependency("nvJitLink", why)) return;
  std::string cubin = ptx_to_cubin(kVaddPtx, "sm_90", "vadd.ptx");
  REQUIRE(cubin.size() > 64);
  CHECK(cubin.compare(0, 4,
                      "\x7f"
                      "ELF") == 0);
  CHECK(cubin.find("vadd") != std::string::npos); // the kernel's symbol
  std::string bad = kVaddPtx;
  bad.replace(bad.find("add.rn.f32"), 10, "frobnicate");
  CHECK_THROWS_WITH_AS(ptx_to_cubin(bad, "sm_90", "bad.ptx"), doctest::Contains("frobnicate"),
                       CudaError);
  CHECK_THROWS_WITH_AS(ptx_to_cubin(bad, "sm_90", "bad.ptx"),
                       doctest::Contains("of 'bad.ptx' failed with code 4"), CudaError);
  CHECK_THROWS_WITH_AS(ptx_to_cubin(std::string("a\0b", 3), "sm_90", "nul.ptx"),
                       "nvJitLink: 'nul.ptx': PTX text contains a NUL byte", CudaError);
}

TEST_CASE("cuda: conv2d problems come from contiguous NCHW operands") {
  TensorMeta x = meta({2, 4, 7, 9}, contiguous_strides({2, 4, 7, 9}));
  TensorMeta w = meta({6, 2, 3, 2}, contiguous_strides({6, 2, 3, 2}));
  std::optional<Conv2dProblem> p = conv2d_problem(x, w, {2, 1}, {1, 0}, {1, 2}, 2);
  REQUIRE(p.has_value());
  CHECK(p->n == 2);
  CHECK(p->c == 4);
  CHECK(p->k == 6);
  CHECK(p->r == 3);
  CHECK(p->s == 2);
  CHECK(p->stride_h == 2);
  CHECK(p->pad_h == 1);
  CHECK(p->dilation_w == 2);
  CHECK(p->groups == 2);
  CHECK(conv2d_output_sizes(*p) == std::array<int64_t, 4>{2, 6, 4, 7});
  TensorMeta channels_last = meta({2, 4, 7, 9}, {252, 1, 36, 4});
  CHECK_FALSE(conv2d_problem(channels_last, w, {1, 1}, {0, 0}, {1, 1}, 2));
  CHECK_THROWS_WITH_AS(conv2d_problem(x, w, {1, 1}, {0, 0}, {1, 1}, 1),
                       "conv2d: weight f32[6, 2, 3, 2] with 1 groups does not take the 4 "
                       "channels of f32[2, 4, 7, 9]",
                       CudaError);
  TensorMeta xb = x;
  xb.dtype = DType::BF16;
  CHECK_THROWS_WITH_AS(conv2d_problem(xb, w, {1, 1}, {0, 0}, {1, 1}, 2),
                       doctest::Contains("of one dtype"), CudaError);
  TensorMeta wb = w;
  wb.dtype = DType::BF16;
  REQUIRE(conv2d_problem(xb, wb, {1, 1}, {0, 0}, {1, 1}, 2));
  CHECK(conv2d_problem(xb, wb, {1, 1}, {0, 0}, {1, 1}, 2)->dtype == DType::BF16);
  TensorMeta xd = x, wd = w;
  xd.dtype = wd.dtype = DType::F64;
  CHECK_THROWS_WITH_AS(conv2d_problem(xd, wd, {1, 1}, {0, 0}, {1, 1}, 2),
                       doctest::Contains("expected 4-D f32, f16 or bf16"), CudaError);
  CHECK_THROWS_WITH_AS(conv2d_problem(x, w, {0, 1}, {0, 0}, {1, 1}, 2),
                       doctest::Contains("stride = 0"), CudaError);
}

TEST_CASE("cuda gpu: a PTX vector add loads, launches and computes a + b" *
          doctest::test_suite("gpu")) {
  if (!have_cuda()) return;
  Context& ctx = Context::get();
  std::unique_ptr<Module> mod = ctx.load_module(kVaddPtx, "vadd.ptx");
  MESSAGE("JIT info log: " << mod->info_log());
  void* fn = mod->function("vadd");
  const int n = 1000003; // not a multiple of the block
  std::vector<float> a = random_floats(n, 1), b = random_floats(n, 2);
  CachingAllocator& alloc = device_allocator();
  Buffer da(alloc, n * 4), db(alloc, n * 4), dc(alloc, n * 4 + 4);
  ctx.copy_to_device(da.ptr, a.data(), n * 4);
  ctx.copy_to_device(db.ptr, b.data(), n * 4);
  ctx.fill_bytes(dc.ptr, 0xff, n * 4 + 4); // NaN everywhere, one sentinel past the end
  int n_arg = n;
  void* args[] = {&da.ptr, &db.ptr, &dc.ptr, &n_arg};
  unsigned block = 256;
  ctx.launch(fn, {unsigned((n + block - 1) / block)}, {block}, 0, args, "vadd");
  ctx.synchronize();
  std::vector<float> c(n + 1);
  ctx.copy_to_host(c.data(), dc.ptr, (n + 1) * 4);
  int wrong = 0;
  for (int i = 0; i < n; ++i) wrong += c[i] != a[i] + b[i];
  CHECK(wrong == 0);
  CHECK(std::isnan(c[n])); // the guard i < n held
}

TEST_CASE("cuda gpu: cubin images load like PTX" * doctest::test_suite("gpu")) {
  if (!have_cuda()) return;
  const char* path = std::getenv("FXC_TEST_VADD_CUBIN");
  if (!path && !have_cuda("FXC_TEST_VADD_CUBIN is not set (test/gpu/run.sh sets it)")) return;
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  Context& ctx = Context::get();
  std::unique_ptr<Module> mod = ctx.load_module(ss.str(), "vadd.cubin");
  void* fn = mod->function("vadd");
  std::vector<float> a = random_floats(300, 3), b = random_floats(300, 4), c(300);
  CachingAllocator& alloc = device_allocator();
  Buffer da(alloc, 1200), db(alloc, 1200), dc(alloc, 1200);
  ctx.copy_to_device(da.ptr, a.data(), 1200);
  ctx.copy_to_device(db.ptr, b.data(), 1200);
  ctx.launch_kernel(fn, {3}, {128}, 0, "vadd", da.ptr, db.ptr, dc.ptr, int32_t(300));
  ctx.copy_to_host(c.data(), dc.ptr, 1200);
  for (int i = 0; i < 300; ++i) CHECK(c[i] == a[i] + b[i]);
}

TEST_CASE("cuda gpu: a cubin made by nvJitLink loads and computes a + b" *
          doctest::test_suite("gpu")) {
  if (!have_cuda() || !have_dependency("nvJitLink", nvjitlink_unavailable_reason())) return;
  Context& ctx = Context::get();
  std::string cubin = ptx_to_cubin(kVaddPtx, ctx.info().arch(), "vadd.ptx");
  std::unique_ptr<Module> mod = ctx.load_module(cubin, "vadd.cubin");
  CHECK(mod->info_log().find("Compiling entry function") == std::string::npos); // no JIT
  void* fn = mod->function("vadd");
  const int n = 4097;
  std::vector<float> a = random_floats(n, 5), b = random_floats(n, 6), c(n);
  CachingAllocator& alloc = device_allocator();
  Buffer da(alloc, n * 4), db(alloc, n * 4), dc(alloc, n * 4);
  ctx.copy_to_device(da.ptr, a.data(), n * 4);
  ctx.copy_to_device(db.ptr, b.data(), n * 4);
  ctx.fill_bytes(dc.ptr, 0xff, n * 4);
  ctx.launch_kernel(fn, {(n + 255) / 256}, {256}, 0, "vadd", da.ptr, db.ptr, dc.ptr, int32_t(n));
  ctx.copy_to_host(c.data(), dc.ptr, n * 4);
  int wrong = 0;
  for (int i = 0; i < n; ++i) wrong += c[i] != a[i] + b[i];
  CHECK(wrong == 0);
}

TEST_CASE("cuda gpu: bad modules, unknown kernels and refused launches give checked errors" *
          doctest::test_suite("gpu")) {
  if (!have_cuda()) return;
  Context& ctx = Context::get();
  std::string bad_ptx = std::string(kVaddPtx);
  bad_ptx.replace(bad_ptx.find("add.rn.f32"), 10, "frobnicate");
  try {
    ctx.load_module(bad_ptx, "bad.ptx");
    FAIL_CHECK("bad PTX loaded");
  } catch (const CudaError& e) {
    std::string msg = e.what();
    MESSAGE(msg);
    CHECK(msg.find("loading module 'bad.ptx' failed: CUDA_ERROR_INVALID_PTX") != std::string::npos);
    CHECK(msg.find("JIT log:") != std::string::npos);
    CHECK(msg.find("frobnicate") != std::string::npos); // ptxas names the bad instruction
  }
  CHECK_THROWS_WITH_AS(ctx.load_module(std::string("x\0y", 3), "nul.ptx"),
                       "module 'nul.ptx': PTX text contains a NUL byte", CudaError);
  std::unique_ptr<Module> mod = ctx.load_module(kVaddPtx, "vadd.ptx");
  CHECK_THROWS_WITH_AS(mod->function("nope"), "module 'vadd.ptx' has no kernel 'nope'", CudaError);
  void* fn = mod->function("vadd");
  CachingAllocator& alloc = device_allocator();
  Buffer d(alloc, 4096);
  int n = 1024;
  void* args[] = {&d.ptr, &d.ptr, &d.ptr, &n};
  CHECK_THROWS_WITH_AS(ctx.launch(fn, {1}, {4096}, 0, args, "vadd"),
                       doctest::Contains("launching 'vadd' (grid 1x1x1, block 4096x1x1, 0 shared "
                                         "bytes) failed: CUDA_ERROR_INVALID_VALUE"),
                       CudaError);
  // The context survives a refused launch.
  std::vector<float> ones(n, 1.0f), out(n);
  ctx.copy_to_device(d.ptr, ones.data(), n * 4);
  ctx.launch(fn, {4}, {256}, 0, args, "vadd");
  ctx.copy_to_host(out.data(), d.ptr, n * 4);
  CHECK(out[0] == 2.0f);
  CHECK(out[n - 1] == 2.0f);
}

TEST_CASE("cuda gpu: events time queued work and device memory is reused through the cache" *
          doctest::test_suite("gpu")) {
  if (!have_cuda()) return;
  Context& ctx = Context::get();
  DriverMemory mem(ctx);
  CachingAllocator alloc(mem);
  auto [free0, total] = ctx.mem_info();
  CHECK(free0 <= total);
  CHECK(total > 0);
  DevicePtr p = alloc.allocate(64 << 20);
  CHECK(p % 256 == 0);
  std::unique_ptr<Event> start = ctx.create_event(), end = ctx.create_event();
  start->record();
  ctx.fill_bytes(p, 0x3c, 64 << 20);
  end->record();
  CHECK(end->elapsed_ms_since(*start) >= 0.0f);
  std::vector<uint8_t> tail(16);
  ctx.copy_to_host(tail.data(), p + (64 << 20) - 16, 16);
  CHECK(tail == std::vector<uint8_t>(16, 0x3c));
  alloc.free(p);
  CHECK(alloc.allocate(63 << 20) == p); // same 64 MiB bucket
  AllocatorStats s = alloc.stats();
  CHECK(s.device_allocs == 1);
  CHECK(s.cache_hits == 1);
  alloc.free(p);
  alloc.empty_cache();
  CHECK(alloc.stats().device_frees == 1);
  // The driver's reading moves with the allocation (other processes may also allocate).
  MESSAGE("free device memory: " << free0 << " of " << total << " bytes");
}

TEST_CASE("cuda gpu: host tensors, strided views included, round-trip through device memory" *
          doctest::test_suite("gpu")) {
  if (!have_cuda()) return;
  Context& ctx = Context::get();
  std::vector<double> vals(12);
  for (int i = 0; i < 12; ++i) vals[i] = 0.25 * i - 1;
  Tensor t = Tensor::from_values(DType::F32, {3, 4}, vals).as_strided({4, 3}, {1, 4}, 0);
  CHECK(device_bytes(t) == 48);
  Buffer d(device_allocator(), device_bytes(t));
  upload(ctx, t, d.ptr);
  Tensor back = download(ctx, d.ptr, DType::F32, {4, 3});
  CHECK(back.is_contiguous());
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) CHECK(back.data<float>()[i * 3 + j] == float(vals[j * 4 + i]));
  Tensor h = Tensor::from_values(DType::BF16, {2, 5},
                                 std::vector<double>(vals.begin(), vals.begin() + 10));
  Buffer dh(device_allocator(), device_bytes(h));
  upload(ctx, h, dh.ptr);
  Tensor hb = download(ctx, dh.ptr, DType::BF16, {2, 5});
  CHECK(std::memcmp(hb.raw_data(), h.raw_data(), 20) == 0);
}

TEST_CASE("cuda gpu: cuBLASLt matmuls match a float64 host reference" *
          doctest::test_suite("gpu")) {
  if (!have_cuda(CublasLt::unavailable_reason())) return;
  MESSAGE("cuBLASLt version " << CublasLt::get().version());
  struct Case {
    const char* what;
    MatmulProblem p;
    double tol;
  };
  std::vector<Case> cases;
  auto add = [&](const char* what, DType dt, int64_t m, int64_t n, int64_t k, Epilogue e,
                 double tol) {
    MatmulProblem p;
    p.dtype = dt, p.m = m, p.n = n, p.k = k, p.epilogue = e;
    cases.push_back({what, p, tol});
    return &cases.back().p;
  };
  add("f32 mm", DType::F32, 37, 53, 29, Epilogue::None, 1e-6);
  add("f32 addmm", DType::F32, 64, 48, 80, Epilogue::Bias, 1e-6);
  add("f32 addmm relu", DType::F32, 33, 65, 17, Epilogue::ReluBias, 1e-6);
  add("f32 addmm gelu(tanh)", DType::F32, 40, 24, 56, Epilogue::GeluBias, 1e-5);
  add("bf16 addmm", DType::BF16, 64, 128, 96, Epilogue::Bias, 1e-2);
  add("f16 addmm relu", DType::F16, 48, 64, 32, Epilogue::ReluBias, 2e-3);
  add("bf16 gelu", DType::BF16, 32, 64, 64, Epilogue::GeluBias, 1e-2);
  MatmulProblem* t =
      add("f32 bmm, transposed operands", DType::F32, 19, 23, 31, Epilogue::None, 1e-6);
  t->trans_a = t->trans_b = true, t->batch = 4;
  t = add("f32 bmm, broadcast B, padded rows", DType::F32, 21, 22, 20, Epilogue::Bias, 1e-6);
  t->batch = 3, t->ldd = 30, t->lda = 25, t->stride_a = 21 * 25, t->stride_b = 0;
  t = add("f32 alpha/beta", DType::F32, 16, 16, 16, Epilogue::None, 1e-6);
  t->alpha = 0.5f, t->beta = 1.0f;
  t = add("bf16 bmm", DType::BF16, 32, 32, 64, Epilogue::None, 1e-2);
  t->batch = 5;
  uint32_t seed = 100;
  for (const Case& c : cases) {
    double erf_err = 0;
    double err = run_matmul(c.p, seed += 10, &erf_err);
    INFO(std::string(c.what) << ": relative error " << err);
    CHECK(err < c.tol);
    // PyTorch's addmm+gelu epilogue is gelu(approximate='tanh'); cuBLASLt's must match it
    // better than it matches the exact GELU.
    if (c.p.epilogue == Epilogue::GeluBias && c.p.dtype == DType::F32) {
      MESSAGE(std::string(c.what) << ": error against tanh GELU " << err << ", against erf GELU "
                                  << erf_err);
      CHECK(err < erf_err);
    }
  }

  // TF32 only when asked: float32 stays exact-ish, TF32 rounds the inputs to 10 mantissa bits.
  MatmulProblem big;
  big.m = big.n = 512, big.k = 1024;
  double f32_err = run_matmul(big, 7);
  big.allow_tf32 = true;
  double tf32_err = run_matmul(big, 7);
  MESSAGE("512x512x1024 relative error: f32 " << f32_err << ", tf32 " << tf32_err);
  CHECK(f32_err < 1e-6);
  CHECK(tf32_err < 5e-3);
  CHECK(tf32_err > 10 * f32_err);

  MatmulProblem p;
  p.m = p.n = p.k = 8;
  p.epilogue = Epilogue::Bias;
  Buffer d(device_allocator(), 256 * 4);
  CHECK_THROWS_WITH_AS(CublasLt::get().matmul(p, d.ptr, d.ptr, 0, d.ptr),
                       "matmul: the epilogue needs a bias", CudaError);
}

namespace {

/// Calls tap(xi, wi, yi) for every input, weight and output element that conv2d(x, w) multiplies
/// and accumulates together (flat indices into NCHW x, KCRS w and NKHW y): the float64 host
/// references of the forward and both gradients.
template <typename Tap> void for_each_conv2d_tap(const Conv2dProblem& p, Tap&& tap) {
  std::array<int64_t, 4> o = conv2d_output_sizes(p);
  int64_t cg = p.c / p.groups, kg = p.k / p.groups;
  for (int64_t n = 0; n < o[0]; ++n)
    for (int64_t k = 0; k < p.k; ++k)
      for (int64_t oh = 0; oh < o[2]; ++oh)
        for (int64_t ow = 0; ow < o[3]; ++ow) {
          size_t yi = size_t(((n * p.k + k) * o[2] + oh) * o[3] + ow);
          int64_t grp = k / kg;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t r = 0; r < p.r; ++r)
              for (int64_t s = 0; s < p.s; ++s) {
                int64_t ih = oh * p.stride_h - p.pad_h + r * p.dilation_h;
                int64_t iw = ow * p.stride_w - p.pad_w + s * p.dilation_w;
                if (ih < 0 || ih >= p.h || iw < 0 || iw >= p.w) continue;
                tap(size_t(((n * p.c + grp * cg + c) * p.h + ih) * p.w + iw),
                    size_t(((k * cg + c) * p.r + r) * p.s + s), yi);
              }
        }
}

} // namespace

TEST_CASE("cuda gpu: cuDNN conv2d matches a float64 host reference" * doctest::test_suite("gpu")) {
  if (!have_cuda(Cudnn::unavailable_reason())) return;
  MESSAGE("cuDNN version " << Cudnn::get().version());
  Context& ctx = Context::get();
  auto run = [&](const Conv2dProblem& p, bool with_bias, uint32_t seed) {
    std::array<int64_t, 4> o = conv2d_output_sizes(p);
    int64_t cg = p.c / p.groups;
    std::vector<float> x = random_floats(p.n * p.c * p.h * p.w, seed);
    std::vector<float> w = random_floats(p.k * cg * p.r * p.s, seed + 1);
    std::vector<float> bias = random_floats(p.k, seed + 2);
    size_t ylen = size_t(o[0] * o[1] * o[2] * o[3]);
    CachingAllocator& alloc = device_allocator();
    Buffer dx(alloc, x.size() * 4), dw(alloc, w.size() * 4), db(alloc, bias.size() * 4),
        dy(alloc, ylen * 4);
    ctx.copy_to_device(dx.ptr, x.data(), x.size() * 4);
    ctx.copy_to_device(dw.ptr, w.data(), w.size() * 4);
    ctx.copy_to_device(db.ptr, bias.data(), bias.size() * 4);
    ctx.fill_bytes(dy.ptr, 0xff, ylen * 4);
    Cudnn::get().conv2d_forward(p, dx.ptr, dw.ptr, with_bias ? db.ptr : 0, dy.ptr);
    std::vector<float> y(ylen);
    ctx.copy_to_host(y.data(), dy.ptr, ylen * 4);
    std::vector<double> got(y.begin(), y.end()), ref(ylen);
    int64_t plane = o[2] * o[3];
    for (size_t yi = 0; yi < ylen; ++yi)
      ref[yi] = with_bias ? bias[size_t(int64_t(yi) / plane % p.k)] : 0.0;
    for_each_conv2d_tap(p,
                        [&](size_t xi, size_t wi, size_t yi) { ref[yi] += double(x[xi]) * w[wi]; });
    return rel_error(got, ref);
  };
  Conv2dProblem p;
  p.n = 2, p.c = 4, p.h = 11, p.w = 13, p.k = 6, p.r = 3, p.s = 3;
  p.stride_h = 2, p.pad_h = 1, p.pad_w = 2, p.dilation_w = 2, p.groups = 2;
  double e1 = run(p, true, 11);
  CHECK(e1 < 1e-6);
  Conv2dProblem q;
  q.n = 3, q.c = 16, q.h = 28, q.w = 28, q.k = 32, q.r = 5, q.s = 5, q.pad_h = q.pad_w = 2;
  double e2 = run(q, false, 21);
  CHECK(e2 < 1e-6);
  MESSAGE("conv2d relative errors: grouped+bias " << e1 << ", 16->32 5x5 " << e2);
}

TEST_CASE("cuda gpu: cuDNN conv2d gradients match a float64 host reference" *
          doctest::test_suite("gpu")) {
  if (!have_cuda(Cudnn::unavailable_reason())) return;
  Context& ctx = Context::get();
  // dx and dw of conv2d(x, w) for the output gradient dy, against direct float64 sums.
  auto run = [&](const Conv2dProblem& p, uint32_t seed) {
    std::array<int64_t, 4> o = conv2d_output_sizes(p);
    int64_t cg = p.c / p.groups;
    std::vector<float> x = random_floats(p.n * p.c * p.h * p.w, seed);
    std::vector<float> w = random_floats(p.k * cg * p.r * p.s, seed + 1);
    std::vector<float> gy = random_floats(o[0] * o[1] * o[2] * o[3], seed + 2);
    CachingAllocator& alloc = device_allocator();
    Buffer bx(alloc, x.size() * 4), bw(alloc, w.size() * 4), by(alloc, gy.size() * 4),
        bdx(alloc, x.size() * 4), bdw(alloc, w.size() * 4);
    ctx.copy_to_device(bx.ptr, x.data(), x.size() * 4);
    ctx.copy_to_device(bw.ptr, w.data(), w.size() * 4);
    ctx.copy_to_device(by.ptr, gy.data(), gy.size() * 4);
    ctx.fill_bytes(bdx.ptr, 0xff, x.size() * 4); // NaNs: every element must be written
    ctx.fill_bytes(bdw.ptr, 0xff, w.size() * 4);
    Cudnn::get().conv2d_backward_data(p, by.ptr, bw.ptr, bdx.ptr);
    Cudnn::get().conv2d_backward_filter(p, bx.ptr, by.ptr, bdw.ptr);
    std::vector<float> dx(x.size()), dw(w.size());
    ctx.copy_to_host(dx.data(), bdx.ptr, dx.size() * 4);
    ctx.copy_to_host(dw.data(), bdw.ptr, dw.size() * 4);
    std::vector<double> ref_dx(x.size(), 0.0), ref_dw(w.size(), 0.0);
    for_each_conv2d_tap(p, [&](size_t xi, size_t wi, size_t yi) {
      ref_dx[xi] += double(gy[yi]) * w[wi];
      ref_dw[wi] += double(gy[yi]) * x[xi];
    });
    std::vector<double> got_dx(dx.begin(), dx.end()), got_dw(dw.begin(), dw.end());
    return std::pair<double, double>{rel_error(got_dx, ref_dx), rel_error(got_dw, ref_dw)};
  };
  Conv2dProblem p; // grouped, strided, padded, dilated
  p.n = 2, p.c = 4, p.h = 11, p.w = 13, p.k = 6, p.r = 3, p.s = 3;
  p.stride_h = 2, p.pad_h = 1, p.pad_w = 2, p.dilation_w = 2, p.groups = 2;
  auto [dx1, dw1] = run(p, 31);
  CHECK(dx1 < 1e-5);
  CHECK(dw1 < 1e-5);
  Conv2dProblem q; // a patch embedding: kernel = stride
  q.n = 3, q.c = 3, q.h = 32, q.w = 32, q.k = 8, q.r = 16, q.s = 16;
  q.stride_h = q.stride_w = 16;
  auto [dx2, dw2] = run(q, 41);
  CHECK(dx2 < 1e-5);
  CHECK(dw2 < 1e-5);
  MESSAGE("conv2d gradient relative errors: grouped dx "
          << dx1 << " dw " << dw1 << ", patch embedding dx " << dx2 << " dw " << dw2);
}

TEST_CASE("cuda gpu: cuDNN fused attention matches a float64 host reference" *
          doctest::test_suite("gpu")) {
  if (!have_cuda(Cudnn::unavailable_reason())) return;
  Context& ctx = Context::get();
  // q and o [b, s_q, h, d] in memory (BSHD, as attention layers lay them out), k and v
  // [b, h_kv, s_kv, d] contiguous; o = softmax(scale · q·kᵀ + bias, causal) · v in float64 from
  // the same rounded inputs.
  auto run = [&](AttentionProblem p, uint32_t seed) {
    const int64_t b = p.b, h = p.h, hk = p.h_kv, sq = p.s_q, skv = p.s_kv, d = p.d, dv = p.d_v;
    p.q_strides = {sq * h * d, d, h * d, 1};
    p.k_strides = {hk * skv * d, skv * d, d, 1};
    p.v_strides = {hk * skv * dv, skv * dv, dv, 1};
    p.o_strides = {sq * h * dv, dv, h * dv, 1};
    std::vector<uint8_t> q = encode(random_floats(size_t(b * sq * h * d), seed), p.dtype);
    std::vector<uint8_t> k = encode(random_floats(size_t(b * hk * skv * d), seed + 1), p.dtype);
    std::vector<uint8_t> v = encode(random_floats(size_t(b * hk * skv * dv), seed + 2), p.dtype);
    std::vector<float> bias_f = random_floats(size_t(p.bias_b * p.bias_h * sq * skv), seed + 3);
    for (size_t i = 0; i < bias_f.size(); i += 7) bias_f[i] = -INFINITY; // masked out
    for (int64_t i = 0; i < p.bias_b * p.bias_h * sq; ++i) bias_f[size_t(i * skv)] = 0; // key 0
    std::vector<uint8_t> bias = encode(bias_f, p.dtype);
    std::vector<double> qd = decode(q, p.dtype), kd = decode(k, p.dtype), vd = decode(v, p.dtype),
                        bd = decode(bias, p.dtype);
    size_t olen = size_t(b * sq * h * dv), es = dtype_size(p.dtype);
    CachingAllocator& alloc = device_allocator();
    Buffer bq(alloc, q.size()), bk(alloc, k.size()), bv(alloc, v.size()), bb(alloc, bias.size()),
        bo(alloc, olen * es);
    ctx.copy_to_device(bq.ptr, q.data(), q.size());
    ctx.copy_to_device(bk.ptr, k.data(), k.size());
    ctx.copy_to_device(bv.ptr, v.data(), v.size());
    ctx.copy_to_device(bb.ptr, bias.data(), bias.size());
    ctx.fill_bytes(bo.ptr, 0xff, olen * es);
    Cudnn::get().attention_forward(p, bq.ptr, bk.ptr, bv.ptr, p.has_bias ? bb.ptr : 0, bo.ptr);
    std::vector<uint8_t> o(olen * es);
    ctx.copy_to_host(o.data(), bo.ptr, o.size());
    std::vector<double> got = decode(o, p.dtype), ref(olen);
    for (int64_t bi = 0; bi < b; ++bi)
      for (int64_t hi = 0; hi < h; ++hi) {
        int64_t kh = hi / (h / hk);
        for (int64_t i = 0; i < sq; ++i) {
          std::vector<double> s(static_cast<size_t>(skv));
          double mx = -INFINITY;
          for (int64_t j = 0; j < skv; ++j) {
            double acc = 0;
            for (int64_t c = 0; c < d; ++c)
              acc += qd[size_t(((bi * sq + i) * h + hi) * d + c)] *
                     kd[size_t(((bi * hk + kh) * skv + j) * d + c)];
            acc *= p.scale;
            if (p.has_bias)
              acc += bd[size_t(
                  (((p.bias_b > 1 ? bi : 0) * p.bias_h + (p.bias_h > 1 ? hi : 0)) * sq + i) * skv +
                  j)];
            if (p.causal && j > i) acc = -INFINITY;
            s[size_t(j)] = acc;
            mx = std::max(mx, acc);
          }
          double z = 0;
          for (double& x : s) z += (x = std::exp(x - mx));
          for (int64_t c = 0; c < dv; ++c) {
            double acc = 0;
            for (int64_t j = 0; j < skv; ++j)
              acc += s[size_t(j)] / z * vd[size_t(((bi * hk + kh) * skv + j) * dv + c)];
            ref[size_t(((bi * sq + i) * h + hi) * dv + c)] = acc;
          }
        }
      }
    return rel_error(got, ref);
  };
  AttentionProblem p;
  p.dtype = DType::BF16;
  p.b = 2, p.h = 4, p.h_kv = 2, p.s_q = 33, p.s_kv = 40, p.d = 64, p.d_v = 64, p.scale = 0.125;
  p.causal = true;
  double causal = run(p, 5);
  CHECK(causal < 2e-2);
  p.causal = false;
  p.has_bias = true, p.bias_b = 2, p.bias_h = 1;
  p.dtype = DType::F16, p.d = 128, p.d_v = 128;
  double biased = run(p, 9);
  CHECK(biased < 1e-2);
  MESSAGE("fused attention relative errors: bf16 causal GQA " << causal << ", f16 bias " << biased);
  // The same problem again reuses its plan.
  CHECK_NOTHROW(run(p, 9));
  AttentionProblem bad = p;
  bad.dtype = DType::F32;
  CHECK(!attention_problem_error(bad).empty());
}

TEST_CASE("cuda: fused attention ignores the strides of size-1 dims") {
  // A decode step: one query, its q a view whose size-1 sequence dim kept a stride of 1 (any
  // stride describes it). The check is on the canonical strides.
  AttentionProblem p;
  p.b = 2, p.h = 4, p.h_kv = 4, p.s_q = 1, p.s_kv = 32, p.d = 64, p.d_v = 64;
  p.q_strides = {256, 64, 1, 1};
  p.k_strides = {4 * 32 * 64, 32 * 64, 64, 1};
  p.v_strides = p.k_strides;
  p.o_strides = {256, 64, 3, 1};
  CHECK(!attention_problem_error(p).empty());
  AttentionProblem c = with_canonical_unit_strides(p);
  CHECK(attention_problem_error(c) == "");
  CHECK(c.q_strides == std::array<int64_t, 4>{256, 64, 512, 1});
  CHECK(c.o_strides == std::array<int64_t, 4>{256, 64, 512, 1});
  CHECK(c.k_strides == p.k_strides); // no size-1 dim: unchanged
}
