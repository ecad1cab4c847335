// Reference kernels of the normalisations: layer_norm and native_layer_norm, and inference
// batch_norm (with running statistics) over channel dim 1.
#include "runtime/kernels/kernel_util.h"

namespace fxc::kernel_detail {
namespace {

Tensors layer_norm_impl(const KernelCall& c) {
  const Tensor& x = c.tensor("input");
  const Shape& ns = c.arg("normalized_shape").ints;
  const Tensor& w = c.tensor("weight");
  const Tensor& b = c.tensor("bias");
  double eps = c.arg("eps").f;
  int64_t k = int64_t(ns.size()), axis = x.dim() - k;
  bool ok = axis >= 0 && k > 0;
  for (int64_t i = 0; ok && i < k; ++i) ok = x.size(axis + i) == ns[size_t(i)];
  if (!ok)
    fail("given normalized_shape=" + shape_str(ns) + ", expected input with shape [*, " +
         shape_str(ns).substr(1) + ", but got input of size " + shape_str(x.sizes()));
  int64_t n = checked_numel(ns);
  check_affine(w, n, "weight");
  check_affine(b, n, "bias");
  std::vector<bool> red(size_t(x.dim()), false);
  for (int64_t d = axis; d < x.dim(); ++d) red[size_t(d)] = true;
  ReduceLayout L = reduce_layout(x, red, true);
  DType dt = c.result_dtype(x.dtype());
  Shape stat_shape = L.out_shape;
  std::vector<double> wv = w.defined() ? values(w) : std::vector<double>();
  std::vector<double> bv = b.defined() ? values(b) : std::vector<double>();
  // The normalised dims are the trailing ones, so row i is xv[i * n, (i + 1) * n).
  std::vector<double> xv = values(x), yv(xv.size()), mv(L.outer.size()), rv(L.outer.size());
  for (size_t i = 0; i < L.outer.size(); ++i) {
    const double* row = xv.data() + i * size_t(n);
    double s = 0;
    for (int64_t j = 0; j < n; ++j) s += row[j];
    double mu = s / double(n), var = 0;
    for (int64_t j = 0; j < n; ++j) var += (row[j] - mu) * (row[j] - mu);
    var /= double(n);
    double r = 1.0 / std::sqrt(var + eps);
    for (int64_t j = 0; j < n; ++j) {
      double y = (row[j] - mu) * r;
      if (!wv.empty()) y *= wv[size_t(j)];
      if (!bv.empty()) y += bv[size_t(j)];
      yv[i * size_t(n) + size_t(j)] = y;
    }
    mv[i] = mu;
    rv[i] = r;
  }
  return {make(dt, x.sizes(), yv), make(dt, stat_shape, mv), make(dt, stat_shape, rv)};
}

Tensors k_layer_norm(const KernelCall& c) {
  return {layer_norm_impl(c)[0]};
}
Tensors k_native_layer_norm(const KernelCall& c) {
  return layer_norm_impl(c);
}

// Inference batch norm over channel dim 1 with the running statistics.
Tensor batch_norm_eval(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& rm,
                       const Tensor& rv, double eps, DType dt) {
  if (x.dim() < 2)
    fail("batch_norm expects an input with at least 2 dims, got " + shape_str(x.sizes()));
  if (!rm.defined() || !rv.defined())
    fail("batch_norm in evaluation mode needs running_mean and running_var");
  int64_t C = x.size(1);
  check_affine(w, C, "weight");
  check_affine(b, C, "bias");
  check_affine(rm, C, "running_mean");
  check_affine(rv, C, "running_var");
  std::vector<double> m = values(rm), v = values(rv);
  std::vector<double> wv = w.defined() ? values(w) : std::vector<double>();
  std::vector<double> bv = b.defined() ? values(b) : std::vector<double>();
  Tensor out = Tensor::empty(dt, x.sizes());
  std::vector<int64_t> off = all_offsets(x);
  int64_t inner = 1;
  for (int64_t d = 2; d < x.dim(); ++d) inner *= x.size(d);
  for (size_t i = 0; i < off.size(); ++i) {
    size_t ch = size_t((int64_t(i) / inner) % C);
    double y = (x.load(off[i]) - m[ch]) / std::sqrt(v[ch] + eps);
    if (!wv.empty()) y *= wv[ch];
    if (!bv.empty()) y += bv[ch];
    out.store(int64_t(i), y);
  }
  return out;
}

Tensors k_batch_norm(const KernelCall& c) {
  if (c.arg("training").b)
    fail("batch_norm in training mode is not supported by the reference interpreter");
  const Tensor& x = c.tensor("input");
  return {batch_norm_eval(x, c.tensor("weight"), c.tensor("bias"), c.tensor("running_mean"),
                          c.tensor("running_var"), c.arg("eps").f, c.result_dtype(x.dtype()))};
}

Tensors k_native_batch_norm_no_training(const KernelCall& c) {
  const Tensor& x = c.tensor("input");
  DType dt = c.result_dtype(x.dtype());
  Tensor out = batch_norm_eval(x, c.tensor("weight"), c.tensor("bias"), c.tensor("running_mean"),
                               c.tensor("running_var"), c.arg("eps").f, dt);
  return {out, Tensor::empty(dt, {0}), Tensor::empty(dt, {0})};
}

// Normalises x ([N, C, *]) by statistics over the elements that share stat(n, c): (out, mean,
// rstd), the statistics shaped `stat_shape`, with the per-channel affine weight and bias.
template <class Stat>
Tensors normalize_by(const Tensor& x, int64_t nstats, Stat stat, const Tensor& w, const Tensor& b,
                     double eps, DType dt, DType stat_dt, const Shape& stat_shape) {
  int64_t C = x.size(1), inner = 1;
  for (int64_t d = 2; d < x.dim(); ++d) inner *= x.size(d);
  check_affine(w, C, "weight");
  check_affine(b, C, "bias");
  std::vector<double> xv = values(x), yv(xv.size());
  std::vector<double> wv = w.defined() ? values(w) : std::vector<double>();
  std::vector<double> bv = b.defined() ? values(b) : std::vector<double>();
  std::vector<double> sum(size_t(nstats), 0.0), sq(size_t(nstats), 0.0), cnt(size_t(nstats), 0.0);
  auto where = [&](size_t i) {
    int64_t ch = (int64_t(i) / inner) % C, n = int64_t(i) / (inner * C);
    return std::pair<size_t, size_t>(size_t(stat(n, ch)), size_t(ch));
  };
  for (size_t i = 0; i < xv.size(); ++i) {
    size_t k = where(i).first;
    sum[k] += xv[i];
    cnt[k] += 1;
  }
  for (size_t k = 0; k < sum.size(); ++k) sum[k] = cnt[k] > 0 ? sum[k] / cnt[k] : 0.0;
  for (size_t i = 0; i < xv.size(); ++i) {
    double d = xv[i] - sum[where(i).first];
    sq[where(i).first] += d * d;
  }
  std::vector<double> rstd(static_cast<size_t>(nstats), 0.0);
  for (size_t k = 0; k < rstd.size(); ++k)
    rstd[k] = 1.0 / std::sqrt((cnt[k] > 0 ? sq[k] / cnt[k] : 0.0) + eps);
  for (size_t i = 0; i < xv.size(); ++i) {
    auto [k, ch] = where(i);
    double y = (xv[i] - sum[k]) * rstd[k];
    if (!wv.empty()) y *= wv[ch];
    if (!bv.empty()) y += bv[ch];
    yv[i] = y;
  }
  return {make(dt, x.sizes(), yv), make(stat_dt, stat_shape, sum), make(stat_dt, stat_shape, rstd)};
}

void check_norm_input(const Tensor& x, const char* what) {
  if (x.dim() < 2)
    fail(std::string(what) + " expects an input with at least 2 dimensions, got " +
         shape_str(x.sizes()));
  if (!is_floating(x.dtype()))
    fail(std::string("\"") + what + "\" not implemented for '" + dname(x.dtype()) + "'");
}

Tensors group_norm_impl(const KernelCall& c, int64_t G) {
  const Tensor& x = c.tensor("input");
  check_norm_input(x, "group_norm");
  int64_t N = x.size(0), C = x.size(1);
  if (G <= 0 || C % G != 0)
    fail("Expected number of channels in input to be divisible by num_groups, but got input of "
         "shape " +
         shape_str(x.sizes()) + " and num_groups=" + std::to_string(G));
  int64_t per = C / G;
  DType dt = c.result_dtype(x.dtype());
  return normalize_by(x, N * G, [&](int64_t n, int64_t ch) { return n * G + ch / per; },
                      c.tensor("weight"), c.tensor("bias"), c.arg("eps").f, dt, dt, {N, G});
}

Tensors k_group_norm(const KernelCall& c) {
  return {group_norm_impl(c, c.arg("num_groups").i)[0]};
}

Tensors k_native_group_norm(const KernelCall& c) {
  const Tensor& x = c.tensor("input");
  if (x.dim() >= 2 && (x.size(0) != c.arg("N").i || x.size(1) != c.arg("C").i))
    fail("N and C do not describe the input " + shape_str(x.sizes()));
  return group_norm_impl(c, c.arg("group").i);
}

Tensors k_instance_norm(const KernelCall& c) {
  const Tensor& x = c.tensor("input");
  check_norm_input(x, "instance_norm");
  DType dt = c.result_dtype(x.dtype());
  if (!c.arg("use_input_stats").b)
    return {batch_norm_eval(x, c.tensor("weight"), c.tensor("bias"), c.tensor("running_mean"),
                            c.tensor("running_var"), c.arg("eps").f, dt)};
  int64_t C = x.size(1);
  return {normalize_by(x, x.size(0) * C, [&](int64_t n, int64_t ch) { return n * C + ch; },
                       c.tensor("weight"), c.tensor("bias"), c.arg("eps").f, dt, dt,
                       {x.size(0), C})[0]};
}

// _native_batch_norm_legit.no_stats: statistics of the batch, per channel.
Tensors k_batch_norm_no_stats(const KernelCall& c) {
  const Tensor& x = c.tensor("input");
  check_norm_input(x, "batch_norm");
  DType dt = c.result_dtype(x.dtype());
  DType stat_dt = is_floating(dt) && dtype_size(dt) < 4 ? DType::F32 : dt;
  return normalize_by(x, x.size(1), [](int64_t, int64_t ch) { return ch; }, c.tensor("weight"),
                      c.tensor("bias"), c.arg("eps").f, dt, stat_dt, {x.size(1)});
}

const OpTable<KernelFn>::Row kNormKernels[] = {
    {OpId::_native_batch_norm_legit_no_stats, k_batch_norm_no_stats},
    {OpId::group_norm, k_group_norm},
    {OpId::instance_norm, k_instance_norm},
    {OpId::native_group_norm, k_native_group_norm},
    {OpId::_native_batch_norm_legit_no_training, k_native_batch_norm_no_training},
    {OpId::batch_norm, k_batch_norm},
    {OpId::layer_norm, k_layer_norm},
    {OpId::native_layer_norm, k_native_layer_norm},
};

} // namespace

std::span<const OpTable<KernelFn>::Row> norm_kernels() {
  return kNormKernels;
}

} // namespace fxc::kernel_detail
