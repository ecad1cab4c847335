// Reference kernels of the normalisations: layer_norm and native_layer_norm, rms_norm, and
// batch_norm over channel dim 1, in inference (running statistics) and training (batch
// statistics, running statistics updated in place or returned by the _functional forms).
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

// Batch norm in training mode: (out, save_mean, save_rstd) from the batch statistics per
// channel, and the running statistics updated as PyTorch does (momentum-weighted, the variance
// unbiased), when given: new_stats = {running_mean, running_var}, or empty.
Tensors batch_norm_train(const KernelCall& c, Tensors* new_stats) {
  const Tensor& x = c.tensor("input");
  check_norm_input(x, "batch_norm");
  DType dt = c.result_dtype(x.dtype());
  DType stat_dt = dtype_size(dt) < 4 ? DType::F32 : dt;
  const int64_t C = x.size(1);
  Tensors r = normalize_by(x, C, [](int64_t, int64_t ch) { return ch; }, c.tensor("weight"),
                           c.tensor("bias"), c.arg("eps").f, dt, stat_dt, {C});
  const Tensor& rm = c.tensor("running_mean");
  const Tensor& rv = c.tensor("running_var");
  if (!rm.defined() || !rv.defined()) return r;
  check_affine(rm, C, "running_mean");
  check_affine(rv, C, "running_var");
  const double m = c.arg("momentum").f, eps = c.arg("eps").f;
  const double n = C > 0 ? double(x.numel() / C) : 0.0;
  std::vector<double> mean = values(r[1]), rstd = values(r[2]);
  std::vector<double> nm = values(rm), nv = values(rv);
  for (size_t k = 0; k < size_t(C); ++k) {
    double var = 1.0 / (rstd[k] * rstd[k]) - eps;
    double unbiased = n > 1 ? var * n / (n - 1) : INFINITY;
    nm[k] = (1 - m) * nm[k] + m * mean[k];
    nv[k] = (1 - m) * nv[k] + m * unbiased;
  }
  *new_stats = {make(c.result_dtype(rm.dtype()), rm.sizes(), nm),
                make(c.result_dtype(rv.dtype()), rv.sizes(), nv)};
  return r;
}

// Writes the updated running statistics into running_mean and running_var, as the ops whose
// schema marks them "Tensor(a!)" (and batch_norm in training mode) do.
void write_running_stats(const KernelCall& c, const Tensors& stats) {
  if (stats.empty()) return;
  c.tensor("running_mean").copy_from(stats[0]);
  c.tensor("running_var").copy_from(stats[1]);
}

// The statistics outputs of batch norm in evaluation mode: empty, as PyTorch's CPU kernel
// returns them.
Tensors batch_norm_eval_outputs(const KernelCall& c) {
  const Tensor& x = c.tensor("input");
  DType dt = c.result_dtype(x.dtype());
  DType stat_dt = is_floating(dt) && dtype_size(dt) < 4 ? DType::F32 : dt;
  Tensor out = batch_norm_eval(x, c.tensor("weight"), c.tensor("bias"), c.tensor("running_mean"),
                               c.tensor("running_var"), c.arg("eps").f, dt);
  return {out, Tensor::empty(stat_dt, {0}), Tensor::empty(stat_dt, {0})};
}

Tensors k_batch_norm(const KernelCall& c) {
  const Tensor& x = c.tensor("input");
  if (!c.arg("training").b)
    return {batch_norm_eval(x, c.tensor("weight"), c.tensor("bias"), c.tensor("running_mean"),
                            c.tensor("running_var"), c.arg("eps").f, c.result_dtype(x.dtype()))};
  Tensors stats;
  Tensors r = batch_norm_train(c, &stats);
  write_running_stats(c, stats);
  return {r[0]};
}

// _native_batch_norm_legit and native_batch_norm: training writes the running statistics.
Tensors k_native_batch_norm(const KernelCall& c) {
  if (!c.arg("training").b) return batch_norm_eval_outputs(c);
  Tensors stats;
  Tensors r = batch_norm_train(c, &stats);
  write_running_stats(c, stats);
  return r;
}

// _native_batch_norm_legit_functional: the updated running statistics are outputs 3 and 4.
Tensors k_native_batch_norm_functional(const KernelCall& c) {
  Tensors r, stats;
  if (c.arg("training").b) {
    r = batch_norm_train(c, &stats);
  } else {
    r = batch_norm_eval_outputs(c);
    stats = {c.tensor("running_mean").clone(), c.tensor("running_var").clone()};
  }
  r.insert(r.end(), stats.begin(), stats.end());
  return r;
}

// _batch_norm_with_update: always training; output 3 is the (empty) reserve space.
Tensors k_batch_norm_with_update(const KernelCall& c) {
  Tensors stats;
  Tensors r = batch_norm_train(c, &stats);
  write_running_stats(c, stats);
  r.push_back(Tensor::empty(DType::U8, {0}));
  return r;
}

Tensors k_batch_norm_with_update_functional(const KernelCall& c) {
  Tensors stats;
  Tensors r = batch_norm_train(c, &stats);
  r.push_back(Tensor::empty(DType::U8, {0}));
  r.insert(r.end(), stats.begin(), stats.end());
  return r;
}

// torch.finfo(dtype).eps.
double dtype_epsilon(DType t) {
  switch (t) {
  case DType::F16:
    return 0.0009765625;
  case DType::BF16:
    return 0.0078125;
  case DType::F64:
    return 2.220446049250313e-16;
  default:
    return 1.1920928955078125e-07;
  }
}

// rms_norm: x * rsqrt(mean(x^2) + eps) over the trailing normalized_shape dims, times weight;
// eps defaults to the input dtype's machine epsilon.
Tensors k_rms_norm(const KernelCall& c) {
  const Tensor& x = c.tensor("input");
  const Shape& ns = c.arg("normalized_shape").ints;
  const Tensor& w = c.tensor("weight");
  int64_t k = int64_t(ns.size()), axis = x.dim() - k;
  bool ok = axis >= 0;
  for (int64_t i = 0; ok && i < k; ++i) ok = x.size(axis + i) == ns[size_t(i)];
  if (!ok)
    fail("given normalized_shape=" + shape_str(ns) + ", expected input with shape [*, " +
         (ns.empty() ? std::string("]") : shape_str(ns).substr(1)) + ", but got input of size " +
         shape_str(x.sizes()));
  if (!is_floating(x.dtype())) fail("rms_norm is not implemented for " + dname(x.dtype()));
  int64_t n = checked_numel(ns);
  check_affine(w, n, "weight");
  double eps = c.arg("eps").is_none() ? dtype_epsilon(x.dtype()) : c.arg("eps").f;
  std::vector<double> xv = values(x), yv(xv.size());
  std::vector<double> wv = w.defined() ? values(w) : std::vector<double>();
  for (size_t i = 0; n > 0 && i < xv.size() / size_t(n); ++i) {
    const double* row = xv.data() + i * size_t(n);
    double s = 0;
    for (int64_t j = 0; j < n; ++j) s += row[j] * row[j];
    double r = 1.0 / std::sqrt(s / double(n) + eps);
    for (int64_t j = 0; j < n; ++j)
      yv[i * size_t(n) + size_t(j)] = row[j] * r * (wv.empty() ? 1.0 : wv[size_t(j)]);
  }
  DType dt = w.defined() ? promote_types(x.dtype(), w.dtype()) : x.dtype();
  return {make(c.result_dtype(dt), x.sizes(), yv)};
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
    {OpId::_native_batch_norm_legit, k_native_batch_norm},
    {OpId::native_batch_norm, k_native_batch_norm},
    {OpId::_native_batch_norm_legit_functional, k_native_batch_norm_functional},
    {OpId::_batch_norm_with_update, k_batch_norm_with_update},
    {OpId::_batch_norm_with_update_functional, k_batch_norm_with_update_functional},
    {OpId::rms_norm, k_rms_norm},
};

} // namespace

std::span<const OpTable<KernelFn>::Row> norm_kernels() {
  return kNormKernels;
}

} // namespace fxc::kernel_detail
