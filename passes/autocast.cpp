// Autocast: PyTorch's op lists as one table, and the pass that inserts their casts.
#include "passes/autocast.h"

#include "frontend/builder.h"
#include "frontend/diag.h"
#include "frontend/meta.h"
#include "frontend/ops.h"
#include "frontend/schema.h"

#include <cassert>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace fxc {

namespace {

struct PolicyRow {
  OpId op;
  CastPolicy policy;
};

constexpr CastPolicy kLow = CastPolicy::LowerPrecision;
constexpr CastPolicy kF32 = CastPolicy::Fp32;
constexpr CastPolicy kPromote = CastPolicy::Promote;

// PyTorch's lists (aten/src/ATen/autocast_mode.h: AT_FORALL_LOWER_PRECISION_FP, AT_FORALL_FP32,
// AT_FORALL_FP32_SET_OPT_DTYPE, AT_FORALL_PROMOTE) in fxc's op names, with the core ATen forms
// the exported ops decompose into beside them. docs/autocast.md lists them with their sources.
constexpr PolicyRow kPolicies[] = {
    // Lower precision: matrix products, convolutions, attention.
    {OpId::convolution, kLow},
    {OpId::conv1d, kLow},
    {OpId::conv2d, kLow},
    {OpId::conv3d, kLow},
    {OpId::conv1d_padding, kLow},
    {OpId::conv2d_padding, kLow},
    {OpId::conv3d_padding, kLow},
    {OpId::conv_transpose1d, kLow},
    {OpId::conv_transpose2d_input, kLow},
    {OpId::conv_transpose3d_input, kLow},
    {OpId::prelu, kLow},
    {OpId::_prelu_kernel, kLow},
    {OpId::addmm, kLow},
    {OpId::addmv, kLow},
    {OpId::addr, kLow},
    {OpId::matmul, kLow},
    {OpId::einsum, kLow},
    {OpId::mm, kLow},
    {OpId::mv, kLow},
    {OpId::linalg_vecdot, kLow},
    {OpId::linear, kLow},
    {OpId::addbmm, kLow},
    {OpId::baddbmm, kLow},
    {OpId::bmm, kLow},
    {OpId::linalg_multi_dot, kLow},
    {OpId::scaled_dot_product_attention, kLow},
    // Float32: pointwise functions that lose range or precision in 8 mantissa bits.
    {OpId::acos, kF32},
    {OpId::asin, kF32},
    {OpId::cosh, kF32},
    {OpId::erfinv, kF32},
    {OpId::exp, kF32},
    {OpId::expm1, kF32},
    {OpId::log, kF32},
    {OpId::log10, kF32},
    {OpId::log2, kF32},
    {OpId::log1p, kF32},
    {OpId::reciprocal, kF32},
    {OpId::rsqrt, kF32},
    {OpId::sinh, kF32},
    {OpId::tan, kF32},
    {OpId::pow_Tensor_Scalar, kF32},
    {OpId::pow_Tensor_Tensor, kF32},
    {OpId::pow_Scalar, kF32},
    {OpId::softplus, kF32},
    // Float32: norms (batch norm and RMSNorm are fxc's additions, see the header).
    {OpId::layer_norm, kF32},
    {OpId::native_layer_norm, kF32},
    {OpId::group_norm, kF32},
    {OpId::native_group_norm, kF32},
    {OpId::batch_norm, kF32},
    {OpId::native_batch_norm, kF32},
    {OpId::_native_batch_norm_legit, kF32},
    {OpId::_native_batch_norm_legit_no_stats, kF32},
    {OpId::_native_batch_norm_legit_functional, kF32},
    {OpId::_native_batch_norm_legit_no_training, kF32},
    {OpId::_batch_norm_with_update, kF32},
    {OpId::_batch_norm_with_update_functional, kF32},
    {OpId::instance_norm, kF32},
    {OpId::rms_norm, kF32},
    {OpId::cosine_similarity, kF32},
    {OpId::renorm, kF32},
    {OpId::dist, kF32},
    {OpId::pdist, kF32},
    {OpId::_pdist_forward, kF32},
    {OpId::cdist, kF32},
    {OpId::_cdist_forward, kF32},
    {OpId::logsumexp, kF32},
    // Float32: losses (binary_cross_entropy as on the CPU; CUDA autocast refuses it).
    {OpId::poisson_nll_loss, kF32},
    {OpId::cosine_embedding_loss, kF32},
    {OpId::nll_loss, kF32},
    {OpId::nll_loss_nd, kF32},
    {OpId::nll_loss_forward, kF32},
    {OpId::nll_loss2d_forward, kF32},
    {OpId::cross_entropy_loss, kF32},
    {OpId::hinge_embedding_loss, kF32},
    {OpId::kl_div, kF32},
    {OpId::l1_loss, kF32},
    {OpId::smooth_l1_loss, kF32},
    {OpId::huber_loss, kF32},
    {OpId::mse_loss, kF32},
    {OpId::margin_ranking_loss, kF32},
    {OpId::multilabel_margin_loss, kF32},
    {OpId::multilabel_margin_loss_forward, kF32},
    {OpId::soft_margin_loss, kF32},
    {OpId::triplet_margin_loss, kF32},
    {OpId::multi_margin_loss, kF32},
    {OpId::binary_cross_entropy, kF32},
    {OpId::binary_cross_entropy_with_logits, kF32},
    // Float32: resampling.
    {OpId::upsample_nearest1d_vec, kF32},
    {OpId::_upsample_nearest_exact1d, kF32},
    {OpId::_upsample_nearest_exact1d_vec, kF32},
    {OpId::upsample_nearest2d, kF32},
    {OpId::upsample_nearest2d_vec, kF32},
    {OpId::_upsample_nearest_exact2d, kF32},
    {OpId::_upsample_nearest_exact2d_vec, kF32},
    {OpId::_upsample_nearest_exact3d, kF32},
    {OpId::_upsample_nearest_exact3d_vec, kF32},
    {OpId::upsample_linear1d, kF32},
    {OpId::upsample_linear1d_vec, kF32},
    {OpId::upsample_bilinear2d, kF32},
    {OpId::upsample_bilinear2d_vec, kF32},
    {OpId::_upsample_bilinear2d_aa, kF32},
    {OpId::_upsample_bilinear2d_aa_vec, kF32},
    {OpId::upsample_trilinear3d, kF32},
    {OpId::upsample_trilinear3d_vec, kF32},
    {OpId::upsample_bicubic2d, kF32},
    {OpId::upsample_bicubic2d_vec, kF32},
    // Float32 unless the call names a dtype (PyTorch's fp32_set_opt_dtype): softmax, sums,
    // products, scans, vector and matrix norms.
    {OpId::softmax_int, kF32},
    {OpId::_softmax, kF32},
    {OpId::_safe_softmax, kF32},
    {OpId::log_softmax_int, kF32},
    {OpId::_log_softmax, kF32},
    {OpId::prod, kF32},
    {OpId::prod_dim_int, kF32},
    {OpId::cumprod, kF32},
    {OpId::cumsum, kF32},
    {OpId::sum, kF32},
    {OpId::sum_dim_IntList, kF32},
    {OpId::linalg_vector_norm, kF32},
    {OpId::linalg_matrix_norm, kF32},
    {OpId::linalg_matrix_norm_str_ord, kF32},
    {OpId::linalg_norm, kF32},
    // Promote: the widest floating input.
    {OpId::addcdiv, kPromote},
    {OpId::addcmul, kPromote},
    {OpId::atan2, kPromote},
    {OpId::bilinear, kPromote},
    {OpId::cross, kPromote},
    {OpId::dot, kPromote},
    {OpId::vdot, kPromote},
    {OpId::grid_sampler, kPromote},
    {OpId::index_put, kPromote},
    {OpId::tensordot, kPromote},
    {OpId::scatter_add, kPromote},
};

const std::map<OpId, CastPolicy>& policy_table() {
  static const std::map<OpId, CastPolicy> table = [] {
    std::map<OpId, CastPolicy> t;
    for (const PolicyRow& r : kPolicies) {
      bool fresh = t.emplace(r.op, r.policy).second;
      assert(fresh && "an op is listed twice in the autocast table");
      (void)fresh;
    }
    return t;
  }();
  return table;
}

// Whether autocast casts a tensor of this dtype at all: floating, and not f64 (PyTorch's
// is_eligible).
bool eligible(DType t) {
  return is_floating(t) && t != DType::F64;
}

// A float32 graph: an f32 input or weight; without any floating input, an f32 intermediate.
bool is_f32_graph(const Graph& g) {
  bool floating_input = false;
  for (const GraphInput& in : g.inputs) {
    DType t = g.values[size_t(in.value)].meta.dtype;
    if (t == DType::F32) return true;
    floating_input = floating_input || is_floating(t);
  }
  if (floating_input) return false;
  for (const Node& n : g.nodes)
    for (ValueId v : n.outputs)
      if (g.values[size_t(v)].meta.dtype == DType::F32) return true;
  return false;
}

// The arguments a cast may replace: tensors the op reads, not those it writes into.
bool castable(const Node& n, size_t k) {
  const ArgSchema& a = n.schema->args[k];
  if (a.mutated) return false;
  return !(k == 0 && n.schema->is_inplace);
}

// Applies `fn` to every tensor argument autocast may cast.
template <typename Fn> void for_each_castable(Node& n, Fn fn) {
  for (size_t k = 0; k < n.args.size(); ++k) {
    if (!castable(n, k)) continue;
    Arg& a = n.args[k];
    if (a.kind == Arg::Kind::Tensor && a.tensor != kNoValue) fn(a.tensor);
    if (a.kind == Arg::Kind::Tensors)
      for (ValueId& v : a.tensors)
        if (v != kNoValue) fn(v);
  }
}

class Autocaster {
public:
  /// Builds into `out`, a copy of `src` whose nodes are being re-added in order.
  Autocaster(Graph& out, const Graph& src, DType low, AutocastStats& stats)
      : g_(out), low_(low), stats_(stats), names_(src) {}

  // Casts the inputs of a copy of `n` by its policy; returns whether any was cast.
  bool cast_inputs(Node& n) {
    CastPolicy p = autocast_policy(n.target);
    if (p == CastPolicy::None || !n.schema) return false;
    // fp32_set_opt_dtype: a dtype the call names is kept, and so are the inputs.
    if (int k = n.schema->index_of("dtype");
        p == CastPolicy::Fp32 && k >= 0 && !n.args[size_t(k)].is_none())
      return false;
    std::optional<DType> widest;
    if (p == CastPolicy::Promote)
      for_each_castable(n, [&](ValueId& v) {
        DType t = dtype(v);
        if (eligible(t)) widest = widest ? promote_types(*widest, t) : t;
      });
    bool cast = false;
    for_each_castable(n, [&](ValueId& v) {
      DType t = dtype(v);
      if (!eligible(t)) return;
      DType want = p == CastPolicy::LowerPrecision ? low_
                   : p == CastPolicy::Fp32         ? DType::F32
                                                   : *widest;
      if (p == CastPolicy::Fp32 && t == DType::F32) return;
      if (t == want) return;
      v = cast_to(v, want, n);
      cast = true;
    });
    if (p == CastPolicy::LowerPrecision && any_input_is(n, low_)) ++stats_.lower_ops;
    if (p == CastPolicy::Fp32 && any_input_is(n, DType::F32)) ++stats_.fp32_ops;
    return cast;
  }

  DType dtype(ValueId v) const { return g_.values[size_t(v)].meta.dtype; }

private:
  bool any_input_is(const Node& n, DType t) const {
    for (ValueId v : n.tensor_inputs())
      if (dtype(v) == t) return true;
    return false;
  }

  // One _to_copy per value and dtype, placed before its first consumer, whose source location
  // it takes.
  ValueId cast_to(ValueId v, DType t, const Node& consumer) {
    auto key = std::make_pair(v, t);
    if (auto it = casts_.find(key); it != casts_.end()) return it->second;
    if (ValueId through = cast_through_view(v, t, consumer); through != kNoValue) {
      casts_.emplace(key, through);
      return through;
    }
    const Value& src = g_.values[size_t(v)];
    std::string hint = src.name + "_" + std::string(dtype_name(t));
    ValueId c = add_node1(g_, "aten._to_copy.default",
                          {{"", Arg::of_tensor(v)}, {"dtype", Arg::of_dtype(t)}}, hint, &names_);
    like(c, v, consumer);
    (t == low_ ? stats_.casts_to_lower : stats_.casts_to_f32)++;
    casts_.emplace(key, c);
    return c;
  }

  // A view of a tensor (expand, permute, reshape, slice, ...) is cast as its base, then viewed
  // again: the cast then copies the base's elements, not the view's. core ATen's form of a
  // batched input times a weight, bmm(x, expand(W)), would otherwise cast a batch of copies of
  // W (ViT-B/16 at batch 8: 2.2 ms per projection) and hide the shared matrix from the lowering.
  // kNoValue when v is not such a view.
  ValueId cast_through_view(ValueId v, DType t, const Node& consumer) {
    const int32_t p = g_.values[size_t(v)].producer;
    if (p < 0) return kNoValue;
    const Node view = g_.nodes[size_t(p)]; // a copy: adding nodes moves g_.nodes
    if (!view.schema || !target_has_tag(view.target, OpTag::View) || view.outputs.size() != 1 ||
        view.target.find("as_strided") != std::string::npos)
      return kNoValue;
    // aten.to(..., dtype) aliases its input when nothing changes, but it names a dtype: viewed
    // again over the cast base it would cast back (llama's rotary embedding: `to(expand(inv_freq),
    // float32) @ ...`).
    if (view.schema->index_of("dtype") >= 0) return kNoValue;
    const int self = view.schema->index_of("self");
    if (self < 0 || view.args[size_t(self)].kind != Arg::Kind::Tensor) return kNoValue;
    for (ValueId in : view.tensor_inputs())
      if (in != view.args[size_t(self)].tensor) return kNoValue; // one tensor input: its base
    const ValueId base = view.args[size_t(self)].tensor;
    if (!eligible(dtype(base))) return kNoValue;
    const ValueId cbase = cast_to(base, t, consumer);
    std::vector<CallArg> call;
    for (size_t k = 0; k < view.args.size(); ++k)
      call.push_back(
          {view.schema->args[k].name, int(k) == self ? Arg::of_tensor(cbase) : view.args[k]});
    const Value& orig = g_.values[size_t(v)];
    std::string hint = orig.name + "_" + std::string(dtype_name(t));
    ValueId c = add_node1(g_, view.target, std::move(call), hint, &names_);
    like(c, v, view);
    return c;
  }

  // The node just added, whose output `c` stands for `v` in another dtype: a dynamic graph's
  // symbolic sizes of `v`, and `src`'s source location.
  void like(ValueId c, ValueId v, const Node& src) {
    TensorMeta& m = g_.values[size_t(c)].meta;
    const TensorMeta& from = g_.values[size_t(v)].meta;
    m.sym_sizes = from.sym_sizes;
    if (m.strides == from.strides) m.sym_strides = from.sym_strides;
    g_.nodes.back().stack_trace = src.stack_trace;
    g_.nodes.back().nn_module_stack = src.nn_module_stack;
  }

  Graph& g_;
  DType low_;
  AutocastStats& stats_;
  NameCache names_;
  std::map<std::pair<ValueId, DType>, ValueId> casts_;
};

} // namespace

CastPolicy autocast_policy(std::string_view target) {
  std::optional<OpId> id = find_op(target);
  if (!id) return CastPolicy::None;
  const auto& table = policy_table();
  auto it = table.find(*id);
  return it == table.end() ? CastPolicy::None : it->second;
}

std::string AutocastStats::summary(DType dtype) const {
  std::string d(dtype_name(dtype));
  if (!converted) return "autocast to " + d + ": not a float32 graph, left as it is";
  return "autocast to " + d + ": " + std::to_string(casts()) + " casts inserted (" +
         std::to_string(casts_to_lower) + " to " + d + ", " + std::to_string(casts_to_f32) +
         " to f32); " + std::to_string(lower_ops) + " ops run in " + d + ", " +
         std::to_string(fp32_ops) + " in f32";
}

Graph autocast(const Graph& g, DType dtype, AutocastStats* stats) {
  assert((dtype == DType::BF16 || dtype == DType::F16) && "autocast lowers to bf16 or f16");
  AutocastStats local;
  AutocastStats& st = stats ? *stats : local;
  st = AutocastStats{};
  if (!is_f32_graph(g)) return g;
  st.converted = true;
  Graph out = g;
  out.nodes.clear();
  out.nodes.reserve(g.nodes.size());
  Autocaster ac(out, g, dtype, st);
  for (const Node& old : g.nodes) {
    Node n = old;
    // A metadata assertion states the dtype the export traced; under the conversion its input
    // may have another (llama's rotary embedding asserts f32 on what is now a bf16 product).
    if (n.target == "aten._assert_tensor_metadata.default" && n.schema) {
      const int k = n.schema->index_of("dtype"), a = n.schema->index_of("a");
      if (k >= 0 && a >= 0 && !n.args[size_t(k)].is_none() &&
          n.args[size_t(a)].kind == Arg::Kind::Tensor) {
        const ValueId in = n.args[size_t(a)].tensor;
        if (ac.dtype(in) != g.values[size_t(in)].meta.dtype)
          n.args[size_t(k)] = Arg::of_dtype(ac.dtype(in));
      }
    }
    // Inside a disabled torch.autocast region ops run in the dtypes they are given.
    bool changed = !g.autocast_disabled.count(n.name) && ac.cast_inputs(n);
    for (ValueId v : n.tensor_inputs())
      changed = changed || ac.dtype(v) != g.values[size_t(v)].meta.dtype;
    if (changed) { // the node's output dtypes follow its new inputs; shapes stay
      MetaFn fn = find_meta(n.target);
      if (!fn) throw Error(g.source, "no meta function for this op", n.name, n.target);
      std::vector<TensorMeta> metas = fn(out, n);
      assert(metas.size() == n.outputs.size() && "meta function disagrees with the node");
      for (size_t i = 0; i < metas.size(); ++i)
        out.values[size_t(n.outputs[i])].meta.dtype = metas[i].dtype;
    }
    const int32_t index = int32_t(out.nodes.size());
    for (ValueId v : n.outputs) out.values[size_t(v)].producer = index;
    out.nodes.push_back(std::move(n));
  }
  return out;
}

} // namespace fxc
