// Reference kernels of the random ops (rand, randn, randint, their _like forms, bernoulli,
// native_dropout, randperm, the in-place distributions) and of native_dropout_backward. Every value
// is a pure function of (seed, node, element index) through Philox4x32-10 (frontend/philox.h), the
// function the inductor lowerings (passes/lower/random.cpp) compute, so eager and inductor agree
// bit for bit.
#include "runtime/kernels/kernel_util.h"

#include "frontend/philox.h"

#include <algorithm>
#include <numeric>

namespace fxc::kernel_detail {
namespace {

/// The blocks of node c.node: element i draws philox::draw(seed, stream, i).
struct Draw {
  uint64_t seed, stream;
  explicit Draw(const KernelCall& c)
      : seed(philox::generator_seed()), stream(philox::node_stream(c.node.name)) {}
  philox::Block operator()(int64_t i) const { return philox::draw(seed, stream, uint64_t(i)); }
};

DType opt_dtype(const KernelCall& c, DType fallback) {
  const Arg& dt = c.arg("dtype");
  return dt.is_none() ? fallback : dt.dtype();
}

/// uniform (rand) or normal (randn) samples of the graph's dtype `gdt` into a tensor of the
/// result dtype.
Tensor floats(const KernelCall& c, DType gdt, const Shape& sizes, bool normal) {
  if (!is_floating(gdt))
    fail(std::string(normal ? "randn" : "rand") + " is not implemented for " + dname(gdt) +
         " (a floating dtype is required)");
  Draw d(c);
  Tensor out = Tensor::empty(c.result_dtype(gdt), sizes);
  for (int64_t i = 0, n = out.numel(); i < n; ++i) {
    philox::Block b = d(i);
    out.store(i, normal ? philox::normal(b) : philox::uniform(b, gdt));
  }
  return out;
}

Tensors k_rand(const KernelCall& c) {
  return {floats(c, opt_dtype(c, DType::F32), c.arg("size").ints, false)};
}
Tensors k_randn(const KernelCall& c) {
  return {floats(c, opt_dtype(c, DType::F32), c.arg("size").ints, true)};
}
Tensors k_rand_like(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  return {floats(c, opt_dtype(c, x.dtype()), x.sizes(), false)};
}
Tensors k_randn_like(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  return {floats(c, opt_dtype(c, x.dtype()), x.sizes(), true)};
}

/// randint, randint.low: low + bits63 mod (high - low).
Tensors k_randint(const KernelCall& c) {
  int li = c.node.schema->index_of("low");
  int64_t low = li >= 0 ? c.arg("low").i : 0, high = c.arg("high").i;
  if (low >= high)
    fail("random_ expects 'from' to be less than 'to', but got from=" + std::to_string(low) +
         " >= to=" + std::to_string(high));
  DType t = c.result_dtype(opt_dtype(c, DType::I64));
  uint64_t range = uint64_t(high) - uint64_t(low);
  Draw d(c);
  Tensor out = Tensor::empty(t, c.arg("size").ints);
  for (int64_t i = 0, n = out.numel(); i < n; ++i) {
    int64_t v = int64_t(uint64_t(low) + uint64_t(philox::bits63(d(i))) % range);
    if (is_floating(t))
      out.store(i, double(v));
    else
      out.store_int(i, v);
  }
  return {out};
}

/// keep = u < q, u the 24-bit uniform of element i.
bool below(const philox::Block& b, double q) {
  return philox::uniform(b, DType::F32) < q;
}

/// bernoulli.p (p a float) and bernoulli (p the elements of self): 1 where u < p.
Tensors k_bernoulli(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  int pi = c.node.schema->index_of("p");
  double p = pi >= 0 ? c.arg("p").f : 0;
  if (pi >= 0 && !(p >= 0 && p <= 1))
    fail("bernoulli_ expects p to be in [0, 1], but got p=" + std::to_string(p));
  std::vector<double> ps;
  if (pi < 0) {
    if (!is_floating(x.dtype()))
      fail("bernoulli is not implemented for " + dname(x.dtype()) +
           " (the probabilities must be floating)");
    ps = values(x);
    for (double v : ps)
      if (!(v >= 0 && v <= 1))
        fail("bernoulli expects all elements of p to be in [0, 1], but got " + std::to_string(v));
  }
  Draw d(c);
  Tensor out = Tensor::empty(c.result_dtype(x.dtype()), x.sizes());
  for (int64_t i = 0, n = out.numel(); i < n; ++i)
    out.store(i, below(d(i), pi >= 0 ? p : ps[size_t(i)]) ? 1.0 : 0.0);
  return {out};
}

/// The factor kept elements are multiplied by, as the op's dtype holds it (float for the 16-bit
/// floats, PyTorch's opmath).
double dropout_scale(double p, DType t) {
  double s = p == 1 ? 0.0 : 1.0 / (1.0 - p);
  return t == DType::F64 ? s : double(float(s));
}

/// native_dropout: mask = u < 1 - p, output = input * mask * 1/(1-p) (train, or train None);
/// in eval mode the input itself and an all-true mask.
Tensors k_native_dropout(const KernelCall& c) {
  const Tensor& x = c.tensor("input");
  double p = c.arg("p").f;
  const Arg& train = c.arg("train");
  if (!(p >= 0 && p <= 1))
    fail("dropout probability has to be between 0 and 1, but got " + std::to_string(p));
  Tensor mask = Tensor::empty(DType::Bool, x.sizes());
  if (!train.is_none() && !train.b) {
    for (int64_t i = 0, n = mask.numel(); i < n; ++i) mask.store_int(i, 1);
    return {x.clone(), mask};
  }
  if (!is_floating(x.dtype()))
    fail("native_dropout is not implemented for " + dname(x.dtype()) + " inputs");
  double s = dropout_scale(p, x.dtype());
  std::vector<double> v = values(x);
  Draw d(c);
  for (size_t i = 0; i < v.size(); ++i) {
    bool keep = below(d(int64_t(i)), 1.0 - p);
    mask.store_int(int64_t(i), keep);
    v[i] = keep ? v[i] * s : 0.0;
  }
  return {make(x.dtype(), x.sizes(), v), mask};
}

/// dropout: the input in eval mode or for p = 0, else native_dropout's output (the same draws).
Tensors k_dropout(const KernelCall& c) {
  double p = c.arg("p").f;
  if (!(p >= 0 && p <= 1))
    fail("dropout probability has to be between 0 and 1, but got " + std::to_string(p));
  if (!c.arg("train").b || p == 0) return {c.tensor("input")};
  return {k_native_dropout(c)[0]};
}

/// native_dropout_backward: grad_output * mask * scale.
Tensors k_native_dropout_backward(const KernelCall& c) {
  const Tensor& g = c.tensor("grad_output");
  const Tensor& m = c.tensor("mask");
  if (m.dtype() != DType::Bool)
    fail("native_dropout_backward: mask must be bool, got " + dname(m.dtype()));
  if (g.dtype() == DType::Bool)
    fail("native_dropout_backward is not implemented for " + dname(g.dtype()) + " gradients");
  DType t = c.result_dtype(is_floating(g.dtype()) ? g.dtype() : DType::F32);
  double s = c.arg("scale").f;
  s = t == DType::F64 ? s : double(float(s));
  const double extra[1] = {s};
  return {elementwise(
      {g.to(t), m.to(t)}, t, t,
      [](const double* v, const double* e) { return v[1] != 0 ? v[0] * e[0] : 0.0; }, nullptr,
      extra)};
}

/// randperm: 0..n-1 stably sorted by the keys bits63(block(i)).
Tensors k_randperm(const KernelCall& c) {
  int64_t n = c.arg("n").i;
  if (n < 0) fail("n must be non-negative, got " + std::to_string(n));
  DType t = c.result_dtype(opt_dtype(c, DType::I64));
  Draw d(c);
  std::vector<int64_t> key(size_t(n), 0), idx(size_t(n), 0);
  for (int64_t i = 0; i < n; ++i) key[size_t(i)] = philox::bits63(d(i));
  std::iota(idx.begin(), idx.end(), int64_t(0));
  std::stable_sort(idx.begin(), idx.end(),
                   [&](int64_t a, int64_t b) { return key[size_t(a)] < key[size_t(b)]; });
  Tensor out = Tensor::empty(t, {n});
  for (int64_t i = 0; i < n; ++i) {
    if (is_floating(t))
      out.store(i, double(idx[size_t(i)]));
    else
      out.store_int(i, idx[size_t(i)]);
  }
  return {out};
}

/// An in-place distribution (uniform_, normal_, exponential_, cauchy_, geometric_, log_normal_):
/// its functional op (`functional`: uniform, normal_functional, ...) on the same arguments and
/// under the same node name, written into self. The functional op is a decomposition over a
/// rand_like or randn_like node named after this node, as decompose() names it where it
/// functionalizes the write, so eager and inductor draw the same stream (docs/random.md).
template <const char* functional> Tensors k_random_(const KernelCall& c) {
  Node n = c.node;
  n.target = functional;
  n.schema = find_schema(functional);
  assert(n.schema && n.schema->args.size() == c.node.schema->args.size() &&
         "an in-place distribution takes its functional op's arguments");
  return write_back(c.tensor("self"), run_kernel({n, c.tensors, c.lists, c.float64})[0]);
}
constexpr char kCauchy[] = "aten.cauchy.default", kExponential[] = "aten.exponential.default",
               kGeometric[] = "aten.geometric.default", kLogNormal[] = "aten.log_normal.default",
               kNormal[] = "aten.normal_functional.default", kUniform[] = "aten.uniform.default";

const OpTable<KernelFn>::Row kRandomKernels[] = {
    {OpId::bernoulli, k_bernoulli},
    {OpId::bernoulli_p, k_bernoulli},
    {OpId::cauchy_, k_random_<kCauchy>},
    {OpId::dropout, k_dropout},
    {OpId::exponential_, k_random_<kExponential>},
    {OpId::geometric_, k_random_<kGeometric>},
    {OpId::log_normal_, k_random_<kLogNormal>},
    {OpId::native_dropout, k_native_dropout},
    {OpId::native_dropout_backward, k_native_dropout_backward},
    {OpId::normal_, k_random_<kNormal>},
    {OpId::rand, k_rand},
    {OpId::rand_like, k_rand_like},
    {OpId::randint, k_randint},
    {OpId::randint_low, k_randint},
    {OpId::randn, k_randn},
    {OpId::randn_like, k_randn_like},
    {OpId::randperm, k_randperm},
    {OpId::uniform_, k_random_<kUniform>},
};

} // namespace

std::span<const OpTable<KernelFn>::Row> random_kernels() {
  return kRandomKernels;
}

} // namespace fxc::kernel_detail
