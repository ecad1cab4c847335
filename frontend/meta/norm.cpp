// Meta functions of the normalisations: layer_norm and native_layer_norm, rms_norm, batch_norm and
// _native_batch_norm_legit_no_training (inference, with running statistics), the training forms
// (_native_batch_norm_legit, native_batch_norm, _batch_norm_with_update, their _functional
// forms), with the checks PyTorch makes on the affine and statistics tensors.
#include "frontend/meta/meta_util.h"

namespace fxc::meta_detail {
namespace {

// ---------------------------------------------------------------------------------------------
// Normalisation.

Metas native_layer_norm(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("input");
  const Sizes& ns = c.ints("normalized_shape");
  if (ns.empty()) c.fail("expected normalized_shape to have at least one element, got []");
  for (const char* w : {"weight", "bias"})
    if (const TensorMeta* t = c.opt_tensor(w); t && t->sizes != ns)
      c.fail(std::string("expected ") + w + " of the same shape as normalized_shape " + join(ns) +
             ", but " + w + " is " + format_meta(*t));
  const int64_t axis = x.dim() - int64_t(ns.size());
  if (axis < 0 || !std::equal(ns.begin(), ns.end(), x.sizes.begin() + axis))
    c.fail("given normalized_shape=" + join(ns) + ", expected input with shape [*, " +
           join(ns).substr(1) + ", but input is " + format_meta(x));
  Sizes stat(x.sizes.begin(), x.sizes.begin() + axis);
  stat.resize(x.sizes.size(), 1);
  // The decomposition keeps statistics in the input dtype on the CPU, in float32 elsewhere.
  DType stat_dt = x.device.kind == Device::CPU || !is_floating(x.dtype) || x.dtype == DType::F64
                      ? x.dtype
                      : DType::F32;
  // The CPU and CUDA kernels normalise input.contiguous() into a contiguous output.
  TensorMeta out = make(x.dtype, x.sizes, x.device);
  return {out, make(stat_dt, stat, x.device), make(stat_dt, stat, x.device)};
}

Metas layer_norm(const Graph& g, const Node& n) {
  Metas r = native_layer_norm(g, n);
  return {r[0]};
}

// Checks shared by batch_norm and _native_batch_norm_legit_no_training; returns the output.
Metas batch_norm_impl(const Ctx& c, bool training) {
  const TensorMeta& x = c.tensor("input");
  if (x.dim() < 2)
    c.fail("batch_norm expects an input with at least 2 dimensions, got " + format_meta(x));
  const int64_t C = x.sizes[1];
  for (const char* w : {"weight", "bias", "running_mean", "running_var"}) {
    const TensorMeta* t = c.opt_tensor(w);
    if (t && (t->dim() != 1 || t->sizes[0] != C))
      c.fail(std::string(w) + " should contain " + std::to_string(C) + " elements, but " + w +
             " is " + format_meta(*t));
  }
  if (!training && (!c.opt_tensor("running_mean") || !c.opt_tensor("running_var")))
    c.fail("running_mean and running_var must be defined in evaluation mode");
  // empty_like(input, input.suggest_memory_format())
  TensorMeta out = make_format(
      x.dtype, x.sizes, x.device,
      suggests_channels_last(x) ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous, nullptr);
  DType stat_dt = is_floating(x.dtype) && dtype_size(x.dtype) < 4 ? DType::F32 : x.dtype;
  Sizes stat = training || x.device.kind != Device::CPU ? Sizes{C} : Sizes{0};
  return {out, make(stat_dt, stat, x.device), make(stat_dt, stat, x.device)};
}

Metas batch_norm(const Graph& g, const Node& n) {
  Ctx c(g, n);
  return {batch_norm_impl(c, c.bool_("training"))[0]};
}

Metas batch_norm_no_training(const Graph& g, const Node& n) {
  Ctx c(g, n);
  return batch_norm_impl(c, false);
}

// native_group_norm's checks: C divisible by the groups, affine tensors of C elements.
void group_norm_checks(const Ctx& c, const TensorMeta& x, int64_t C, int64_t G) {
  if (x.dim() < 2)
    c.fail("Expected at least 2 dimensions for input tensor but received " +
           std::to_string(x.dim()));
  if (G <= 0 || C % G != 0)
    c.fail("Expected number of channels in input to be divisible by num_groups, but got input of "
           "shape " +
           join(x.sizes) + " and num_groups=" + std::to_string(G));
  for (const char* w : {"weight", "bias"})
    if (const TensorMeta* t = c.opt_tensor(w); t && (t->dim() != 1 || t->sizes[0] != C))
      c.fail(std::string("Expected ") + w +
             " to be a vector of size equal to the number of "
             "channels in input, but got " +
             w + " of shape " + join(t->sizes) + " and input of shape " + join(x.sizes));
  if (!is_floating(x.dtype)) not_implemented(c, "group_norm", x.dtype);
}

Metas group_norm(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("input");
  group_norm_checks(c, x, x.dim() >= 2 ? x.sizes[1] : 0, c.int_("num_groups"));
  return {make(x.dtype, x.sizes, x.device)};
}

// (out, mean [N, G], rstd [N, G]); N, C and HxW must describe the input.
Metas native_group_norm(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("input");
  int64_t N = c.int_("N"), C = c.int_("C"), HxW = c.int_("HxW"), G = c.int_("group");
  group_norm_checks(c, x, C, G);
  if (x.sizes[0] != N || x.sizes[1] != C || x.numel() != N * C * HxW)
    c.fail("N, C and HxW (" + std::to_string(N) + ", " + std::to_string(C) + ", " +
           std::to_string(HxW) + ") do not describe the input " + format_meta(x));
  TensorMeta stat = make(x.dtype, {N, G}, x.device);
  return {make(x.dtype, x.sizes, x.device), stat, stat};
}

// The optional per-channel tensors named, when given, hold C elements.
void check_channel_vectors(const Ctx& c, int64_t C, std::initializer_list<const char*> names) {
  for (const char* w : names)
    if (const TensorMeta* t = c.opt_tensor(w); t && (t->dim() != 1 || t->sizes[0] != C))
      c.fail(std::string(w) + " should contain " + std::to_string(C) + " elements, but " + w +
             " is " + format_meta(*t));
}

// instance_norm: the input's sizes; running statistics of C elements when given.
Metas instance_norm(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("input");
  if (x.dim() < 2)
    c.fail("instance_norm expects an input with at least 2 dimensions, got " + format_meta(x));
  const int64_t C = x.sizes[1];
  check_channel_vectors(c, C, {"weight", "bias", "running_mean", "running_var"});
  if (!c.bool_("use_input_stats") && (!c.has("running_mean") || !c.has("running_var")))
    c.fail("Expected running_mean and running_var to be defined when use_input_stats is false");
  if (!is_floating(x.dtype)) not_implemented(c, "instance_norm", x.dtype);
  return {make(x.dtype, x.sizes, x.device)};
}

// _native_batch_norm_legit.no_stats: batch statistics; (out, mean [C], rstd [C]).
Metas batch_norm_no_stats(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("input");
  if (x.dim() < 2)
    c.fail("batch_norm expects an input with at least 2 dimensions, got " + format_meta(x));
  const int64_t C = x.sizes[1];
  check_channel_vectors(c, C, {"weight", "bias"});
  if (!is_floating(x.dtype)) not_implemented(c, "batch_norm", x.dtype);
  DType stat_dt = dtype_size(x.dtype) < 4 ? DType::F32 : x.dtype;
  return {make(x.dtype, x.sizes, x.device), make(stat_dt, {C}, x.device),
          make(stat_dt, {C}, x.device)};
}

// Batch norm with batch statistics in training mode and running statistics otherwise:
// _native_batch_norm_legit, native_batch_norm (the `training` argument), _batch_norm_with_update
// (always training), and their _functional forms, which return the updated running statistics
// as extra outputs instead of writing them. (out, save_mean, save_rstd[, reserve][, new
// running_mean, new running_var]).
template <bool Functional, bool WithUpdate> Metas batch_norm_train(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("input");
  const bool training = WithUpdate || c.bool_("training");
  Metas r = batch_norm_impl(c, training);
  if (!is_floating(x.dtype)) not_implemented(c, "batch_norm", x.dtype);
  if (WithUpdate) r.push_back(make(DType::U8, {0}, x.device));
  if (Functional)
    for (const char* s : {"running_mean", "running_var"}) {
      const TensorMeta& t = c.tensor(s);
      r.push_back(make(t.dtype, t.sizes, t.device));
    }
  return r;
}

// rms_norm: x / sqrt(mean(x^2 over normalized_shape) + eps) * weight; the input's sizes, the
// dtype promoted with the weight's.
Metas rms_norm(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("input");
  const Sizes& ns = c.ints("normalized_shape");
  const int64_t axis = x.dim() - int64_t(ns.size());
  if (axis < 0 || !std::equal(ns.begin(), ns.end(), x.sizes.begin() + axis))
    c.fail("given normalized_shape=" + join(ns) + ", expected input with shape [*, " +
           (ns.empty() ? std::string("]") : join(ns).substr(1)) + ", but input is " +
           format_meta(x));
  if (!is_floating(x.dtype)) not_implemented(c, "rms_norm", x.dtype);
  DType dt = x.dtype;
  if (const TensorMeta* w = c.opt_tensor("weight")) {
    if (w->sizes != ns)
      c.fail("expected weight of the same shape as normalized_shape " + join(ns) +
             ", but weight is " + format_meta(*w));
    dt = promote_types(dt, w->dtype);
  }
  return {make(dt, x.sizes, x.device)};
}

const OpTable<MetaFn>::Row kNormMeta[] = {
    {OpId::_native_batch_norm_legit_no_stats, guarded<batch_norm_no_stats>},
    {OpId::group_norm, guarded<group_norm>},
    {OpId::instance_norm, guarded<instance_norm>},
    {OpId::native_group_norm, guarded<native_group_norm>},
    {OpId::_native_batch_norm_legit_no_training, guarded<batch_norm_no_training>},
    {OpId::batch_norm, guarded<batch_norm>},
    {OpId::layer_norm, guarded<layer_norm>},
    {OpId::native_layer_norm, guarded<native_layer_norm>},
    {OpId::_native_batch_norm_legit, guarded<batch_norm_train<false, false>>},
    {OpId::_native_batch_norm_legit_functional, guarded<batch_norm_train<true, false>>},
    {OpId::native_batch_norm, guarded<batch_norm_train<false, false>>},
    {OpId::_batch_norm_with_update, guarded<batch_norm_train<false, true>>},
    {OpId::_batch_norm_with_update_functional, guarded<batch_norm_train<true, true>>},
    {OpId::rms_norm, guarded<rms_norm>},
};

} // namespace

std::span<const OpTable<MetaFn>::Row> norm_meta() {
  return kNormMeta;
}

} // namespace fxc::meta_detail
