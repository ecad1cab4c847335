// Matching core ATen's attention (bmm, softmax, bmm) back into scaled_dot_product_attention.
#include "passes/attention_match.h"

#include "frontend/builder.h"
#include "passes/decompose.h"
#include "passes/graph_utils.h"

#include <cmath>
#include <map>
#include <optional>

namespace fxc {
namespace {

struct Match {
  ValueId q = kNoValue, k = kNoValue, v = kNoValue, mask = kNoValue;
  double scale = 1;
};

class Matcher {
public:
  explicit Matcher(const Graph& g) : g_(g) {}

  /// The node producing `v`, or null for an input.
  const Node* producer(ValueId v) const {
    if (v < 0) return nullptr;
    int32_t p = g_.values[size_t(v)].producer;
    return p < 0 ? nullptr : &g_.nodes[size_t(p)];
  }
  const TensorMeta& meta(ValueId v) const { return g_.values[size_t(v)].meta; }

  /// `v` with dtype casts (_to_copy with a dtype only) stripped.
  ValueId uncast(ValueId v) const {
    for (const Node* n = producer(v); n && n->target == "aten._to_copy.default"; n = producer(v))
      v = arg_tensor(*n, "self");
    return v;
  }

  static ValueId arg_tensor(const Node& n, const char* name) {
    int i = n.schema ? n.schema->index_of(name) : -1;
    if (i < 0 || size_t(i) >= n.args.size() || n.args[size_t(i)].kind != Arg::Kind::Tensor)
      return kNoValue;
    return n.args[size_t(i)].tensor;
  }
  static const Arg* arg(const Node& n, const char* name) {
    int i = n.schema ? n.schema->index_of(name) : -1;
    return i < 0 || size_t(i) >= n.args.size() ? nullptr : &n.args[size_t(i)];
  }
  static bool is_view(const Node& n) {
    return n.target == "aten.view.default" || n.target == "aten._unsafe_view.default" ||
           n.target == "aten.reshape.default";
  }

  /// The 4-D value a bmm operand [B·H, M, N] was flattened from: view(clone(expand(x))) with the
  /// expand a no-op and the clone optional (casts allowed around each).
  ValueId unflatten(ValueId operand) const {
    const Node* vw = producer(uncast(operand));
    if (!vw || !is_view(*vw)) return kNoValue;
    ValueId x = uncast(arg_tensor(*vw, "self"));
    const Node* n = producer(x);
    if (n && n->target == "aten.clone.default") {
      x = uncast(arg_tensor(*n, "self"));
      n = producer(x);
    }
    if (n && n->target == "aten.expand.default") {
      ValueId base = uncast(arg_tensor(*n, "self"));
      if (base == kNoValue || meta(base).sizes != meta(x).sizes) return kNoValue;
      x = base;
    }
    if (x == kNoValue || meta(x).dim() != 4) return kNoValue;
    const std::vector<int64_t>& s = meta(x).sizes;
    const std::vector<int64_t>& f = meta(operand).sizes;
    if (f.size() != 3 || f[0] != s[0] * s[1] || f[1] != s[2] || f[2] != s[3]) return kNoValue;
    return x;
  }

  /// x = mul(y, c) (or div(y, c)) with a scalar c: y, and c (1/c) multiplied into *scale.
  ValueId strip_scale(ValueId x, double* scale) const {
    const Node* n = producer(x);
    if (!n) return x;
    bool mul = n->target == "aten.mul.Scalar", div = n->target == "aten.div.Scalar";
    if (!mul && !div) return x;
    const Arg* c = arg(*n, "other");
    if (!c || c->kind == Arg::Kind::Tensor || c->is_none()) return x;
    double v = c->scalar();
    if (div && v == 0) return x;
    *scale *= mul ? v : 1 / v;
    return uncast(arg_tensor(*n, "self"));
  }

  /// x = permute(y, [0, 1, 3, 2]): y; else kNoValue.
  ValueId untranspose(ValueId x) const {
    const Node* n = producer(x);
    if (!n || n->target != "aten.permute.default") return kNoValue;
    const Arg* d = arg(*n, "dims");
    if (!d || d->ints != std::vector<int64_t>{0, 1, 3, 2}) return kNoValue;
    return uncast(arg_tensor(*n, "self"));
  }

  /// The attention whose output is `out` (the view after the second bmm), if it is one.
  std::optional<Match> match(const Node& out_view) const {
    if (!is_view(out_view) || out_view.outputs.size() != 1) return std::nullopt;
    const TensorMeta& om = meta(out_view.outputs[0]);
    if (om.dim() != 4) return std::nullopt;
    const Node* bmm2 = producer(uncast(arg_tensor(out_view, "self")));
    if (!bmm2 || bmm2->target != "aten.bmm.default") return std::nullopt;
    Match m;
    m.v = unflatten(arg_tensor(*bmm2, "mat2"));
    ValueId p = unflatten(arg_tensor(*bmm2, "self"));
    if (m.v == kNoValue || p == kNoValue) return std::nullopt;
    // PyTorch's _safe_softmax: where(row all -inf, 0, softmax).
    const Node* sm = producer(p);
    if (sm && sm->target == "aten.where.self") {
      const Node* zeros = producer(arg_tensor(*sm, "self"));
      ValueId inner = uncast(arg_tensor(*sm, "other"));
      if (!zeros ||
          (zeros->target != "aten.full_like.default" && zeros->target != "aten.zeros_like.default"))
        return std::nullopt;
      if (zeros->target == "aten.full_like.default") {
        const Arg* fill = arg(*zeros, "fill_value");
        if (!fill || fill->kind == Arg::Kind::Tensor || fill->scalar() != 0) return std::nullopt;
      }
      sm = producer(inner);
    }
    if (!sm || sm->target != "aten._softmax.default") return std::nullopt;
    const Arg* dim = arg(*sm, "dim");
    if (!dim || (dim->i != -1 && dim->i != 3)) return std::nullopt;
    ValueId s = uncast(arg_tensor(*sm, "self"));
    // The mask, added to the scores.
    const Node* add = producer(s);
    if (add && add->target == "aten.add.Tensor") {
      const Arg* alpha = arg(*add, "alpha");
      if (alpha && !alpha->is_none() && alpha->scalar() != 1) return std::nullopt;
      ValueId a = uncast(arg_tensor(*add, "self")), b = arg_tensor(*add, "other");
      if (a == kNoValue || b == kNoValue) return std::nullopt;
      m.mask = b;
      s = a;
    }
    double scale = 1;
    s = uncast(strip_scale(s, &scale));
    const Node* vw = producer(s);
    if (!vw || !is_view(*vw)) return std::nullopt;
    const Node* bmm1 = producer(uncast(arg_tensor(*vw, "self")));
    if (!bmm1 || bmm1->target != "aten.bmm.default") return std::nullopt;
    ValueId qs = unflatten(arg_tensor(*bmm1, "self"));
    ValueId kt = unflatten(arg_tensor(*bmm1, "mat2"));
    if (qs == kNoValue || kt == kNoValue) return std::nullopt;
    m.q = strip_scale(qs, &scale);
    // kᵀ scaled after the transpose, or k scaled before it.
    ValueId k = untranspose(strip_scale(kt, &scale));
    if (k == kNoValue) return std::nullopt;
    m.k = strip_scale(k, &scale);
    if (!std::isfinite(scale) || scale == 0) return std::nullopt;
    m.scale = scale;
    // Shapes: q [B, H, Sq, D], k [B, H, Skv, D], v [B, H, Skv, Dv], out [B, H, Sq, Dv]; q, k
    // and v are taken in the output's dtype (cast where the graph had them wider: --dtype's
    // conversion casts after the scaling), the mask one cuDNN takes.
    TensorMeta qm = meta(m.q), km = meta(m.k), vm = meta(m.v);
    for (TensorMeta* t : {&qm, &km, &vm}) {
      if (!is_floating(t->dtype) || t->dim() != 4) return std::nullopt;
      t->dtype = om.dtype;
    }
    if (om.sizes != std::vector<int64_t>{qm.sizes[0], qm.sizes[1], qm.sizes[2], vm.sizes[3]})
      return std::nullopt;
    if (!cudnn_attention_shapes(qm, km, vm, m.mask == kNoValue ? nullptr : &meta(m.mask), false))
      return std::nullopt;
    return m;
  }

private:
  const Graph& g_;
};

} // namespace

Graph match_attention(const Graph& g, int* matched) {
  Matcher mt(g);
  std::map<size_t, Match> found; // by the index of the output view node
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (std::optional<Match> m = mt.match(g.nodes[i])) found.emplace(i, *m);
  if (matched) *matched = int(found.size());
  if (found.empty()) return g;
  Graph out = g;
  out.nodes.clear();
  out.nodes.reserve(g.nodes.size());
  std::vector<ValueId> remap(g.values.size());
  for (size_t v = 0; v < remap.size(); ++v) remap[v] = ValueId(v);
  auto mapped = [&](ValueId v) { return v == kNoValue ? v : remap[size_t(v)]; };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    auto it = found.find(i);
    if (it != found.end()) {
      const Match& m = it->second;
      const Node& old = g.nodes[i];
      const DType t = g.values[size_t(old.outputs[0])].meta.dtype;
      // q, k, v (and a float mask) in the output's dtype, as scaled_dot_product_attention takes.
      auto as_dtype = [&](ValueId v) {
        v = mapped(v);
        if (out.values[size_t(v)].meta.dtype == t) return v;
        return add_node1(out, "aten._to_copy.default",
                         {{"", Arg::of_tensor(v)}, {"dtype", Arg::of_dtype(t)}},
                         out.values[size_t(v)].name + "_" + std::string(dtype_name(t)));
      };
      std::vector<CallArg> call = {{"", Arg::of_tensor(as_dtype(m.q))},
                                   {"", Arg::of_tensor(as_dtype(m.k))},
                                   {"", Arg::of_tensor(as_dtype(m.v))}};
      if (m.mask != kNoValue)
        call.push_back(
            {"attn_mask", Arg::of_tensor(g.values[size_t(m.mask)].meta.dtype == DType::Bool
                                             ? mapped(m.mask)
                                             : as_dtype(m.mask))});
      call.push_back({"scale", Arg::of_float(m.scale)});
      ValueId r = add_node1(out, "aten.scaled_dot_product_attention.default", std::move(call),
                            old.name + "_attention");
      out.nodes.back().stack_trace = old.stack_trace;
      out.nodes.back().nn_module_stack = old.nn_module_stack;
      remap[size_t(old.outputs[0])] = r;
      continue;
    }
    Node n = g.nodes[i];
    for (Arg& a : n.args) {
      if (a.kind == Arg::Kind::Tensor) a.tensor = mapped(a.tensor);
      if (a.kind == Arg::Kind::Tensors)
        for (ValueId& v : a.tensors) v = mapped(v);
    }
    const int32_t index = int32_t(out.nodes.size());
    for (ValueId v : n.outputs) out.values[size_t(v)].producer = index;
    out.nodes.push_back(std::move(n));
  }
  for (ValueId& v : out.outputs) v = mapped(v);
  return eliminate_dead_code(out).graph;
}

} // namespace fxc
