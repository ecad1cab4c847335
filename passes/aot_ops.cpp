// Typed wrappers over add_node and node-by-node graph copies for the AOT passes.
#include "passes/aot_ops.h"

#include "frontend/schema.h"
#include "frontend/tensor_rules.h"

#include <algorithm>
#include <cassert>
#include <stdexcept>

namespace fxc {

std::string op_base_name(std::string_view target) {
  std::string_view t = target;
  if (t.substr(0, 5) == "aten.") t.remove_prefix(5);
  size_t dot = t.find('.');
  return std::string(t.substr(0, dot));
}

int64_t value_bytes(const TensorMeta& m) {
  return m.numel() * int64_t(dtype_size(m.dtype));
}

std::string Emit::hint(std::string_view target) const {
  if (prefix_.empty()) return {};
  return prefix_ + "_" + op_base_name(target);
}

std::vector<ValueId> Emit::call(std::string_view target, std::vector<CallArg> args) {
  return add_node(g_, target, std::move(args), hint(target), names_);
}

ValueId Emit::op(std::string_view target, std::vector<CallArg> args) {
  return add_node1(g_, target, std::move(args), hint(target), names_);
}

ValueId Emit::add(ValueId a, ValueId b) {
  return op("aten.add.Tensor", {t(a), t(b)});
}
ValueId Emit::sub(ValueId a, ValueId b) {
  return op("aten.sub.Tensor", {t(a), t(b)});
}
ValueId Emit::mul(ValueId a, ValueId b) {
  return op("aten.mul.Tensor", {t(a), t(b)});
}
ValueId Emit::div(ValueId a, ValueId b) {
  return op("aten.div.Tensor", {t(a), t(b)});
}
ValueId Emit::add_s(ValueId a, double s) {
  return op("aten.add.Scalar", {t(a), f(s)});
}
ValueId Emit::mul_s(ValueId a, double s) {
  return op("aten.mul.Scalar", {t(a), f(s)});
}
ValueId Emit::div_s(ValueId a, double s) {
  return op("aten.div.Scalar", {t(a), f(s)});
}
ValueId Emit::rsub_s(double s, ValueId a) {
  return add_s(unary("neg", a), s);
}
ValueId Emit::pow_s(ValueId a, double e) {
  return op("aten.pow.Tensor_Scalar", {t(a), f(e)});
}

ValueId Emit::unary(std::string_view name, ValueId a) {
  return op("aten." + std::string(name) + ".default", {t(a)});
}

ValueId Emit::cmp_s(std::string_view name, ValueId a, double s) {
  return op("aten." + std::string(name) + ".Scalar", {t(a), f(s)});
}

ValueId Emit::cmp(std::string_view name, ValueId a, ValueId b) {
  return op("aten." + std::string(name) + ".Tensor", {t(a), t(b)});
}

ValueId Emit::where(ValueId c, ValueId a, ValueId b) {
  return op("aten.where.self", {t(c), t(a), t(b)});
}

ValueId Emit::where_s(ValueId c, ValueId a, double other) {
  return op("aten.where.ScalarOther", {t(c), t(a), f(other)});
}

ValueId Emit::cast(ValueId a, DType ty) {
  if (dtype(a) == ty) return a;
  return op("aten._to_copy.default", {t(a), kw("dtype", Arg::of_dtype(ty))});
}

namespace {
std::vector<int64_t> all_dims(int64_t rank) {
  std::vector<int64_t> d;
  for (int64_t i = 0; i < rank; ++i) d.push_back(i);
  return d;
}
} // namespace

ValueId Emit::sum(ValueId a, std::vector<int64_t> dims, bool keepdim) {
  if (dim(a) == 0) return a;
  if (dims.empty()) dims = all_dims(dim(a));
  return op("aten.sum.dim_IntList", {t(a), ints(std::move(dims)), b(keepdim)});
}

ValueId Emit::mean(ValueId a, std::vector<int64_t> dims, bool keepdim) {
  if (dim(a) == 0) return a;
  if (dims.empty()) dims = all_dims(dim(a));
  return op("aten.mean.dim", {t(a), ints(std::move(dims)), b(keepdim)});
}

ValueId Emit::amax(ValueId a, std::vector<int64_t> dims, bool keepdim) {
  if (dim(a) == 0) return a;
  if (dims.empty()) dims = all_dims(dim(a));
  return op("aten.amax.default", {t(a), ints(std::move(dims)), b(keepdim)});
}

ValueId Emit::sum_to(ValueId a, const std::vector<int64_t>& target) {
  std::vector<int64_t> as = sizes(a);
  if (as == target) return a;
  if (as.size() < target.size()) // a derivative rule's defect, never the user's graph
    throw std::logic_error("sum_to: a gradient of " + std::to_string(as.size()) +
                           " dims for an input of " + std::to_string(target.size()));
  size_t lead = as.size() - target.size();
  std::vector<int64_t> dims;
  for (size_t d = 0; d < lead; ++d) dims.push_back(int64_t(d));
  for (size_t d = 0; d < target.size(); ++d)
    if (target[d] == 1 && as[lead + d] != 1) dims.push_back(int64_t(lead + d));
  ValueId r = dims.empty() ? a : sum(a, dims, true);
  return sizes(r) == target ? r : reshape(r, target);
}

ValueId Emit::view(ValueId a, std::vector<int64_t> s) {
  return op("aten.view.default", {t(a), ints(std::move(s))});
}

ValueId Emit::reshape(ValueId a, std::vector<int64_t> s) {
  if (sizes(a) == s) return a;
  if (!meta(a).is_contiguous())
    a = op("aten.clone.default",
           {t(a), kw("memory_format", Arg::of_memory_format(MemoryFormat::Contiguous))});
  return view(a, std::move(s));
}

ValueId Emit::permute(ValueId a, std::vector<int64_t> dims) {
  // permute(permute(x, p), q) is permute(x, p[q]); x itself when that is the identity.
  int32_t p = g_.values[a].producer;
  if (p >= 0 && g_.nodes[p].target == "aten.permute.default") {
    const Node& inner = g_.nodes[p];
    const std::vector<int64_t>& first = inner.args[1].ints;
    int64_t rank = int64_t(first.size());
    bool identity = true;
    std::vector<int64_t> composed;
    for (size_t k = 0; k < dims.size(); ++k) {
      int64_t q = wrap_dim(dims[k], rank);
      int64_t f = wrap_dim(first[size_t(q)], rank);
      composed.push_back(f);
      identity = identity && f == int64_t(k);
    }
    ValueId base = inner.args[0].tensor;
    if (identity) return base;
    return op("aten.permute.default", {t(base), ints(std::move(composed))});
  }
  return op("aten.permute.default", {t(a), ints(std::move(dims))});
}

ValueId Emit::transpose(ValueId a, int64_t d0, int64_t d1) {
  std::vector<int64_t> p = all_dims(dim(a));
  std::swap(p[d0], p[d1]);
  return permute(a, p);
}

ValueId Emit::expand(ValueId a, std::vector<int64_t> s) {
  if (sizes(a) == s) return a;
  return op("aten.expand.default", {t(a), ints(std::move(s))});
}

ValueId Emit::unsqueeze(ValueId a, int64_t d) {
  return op("aten.unsqueeze.default", {t(a), i(d)});
}

ValueId Emit::slice(ValueId a, int64_t d, int64_t start, int64_t end, int64_t step) {
  return op("aten.slice.Tensor", {t(a), i(d), i(start), i(end), i(step)});
}

ValueId Emit::slice_scatter(ValueId base, ValueId src, int64_t d, int64_t start, int64_t end,
                            int64_t step) {
  return op("aten.slice_scatter.default", {t(base), t(src), i(d), i(start), i(end), i(step)});
}

ValueId Emit::cat(std::vector<ValueId> xs, int64_t d) {
  return op("aten.cat.default", {{"", Arg::of_tensors(std::move(xs))}, i(d)});
}

ValueId Emit::arange(int64_t start, int64_t end, int64_t step, const Device& device) {
  std::vector<CallArg> call = {i(start), i(end), i(step), kw("dtype", Arg::of_dtype(DType::I64))};
  if (device != Device{}) call.push_back(kw("device", Arg::of_device(device)));
  return op("aten.arange.start_step", std::move(call));
}

ValueId Emit::zeros(std::vector<int64_t> s, const TensorMeta& like) {
  std::vector<CallArg> call = {ints(std::move(s)), kw("dtype", Arg::of_dtype(like.dtype))};
  if (like.device != Device{}) call.push_back(kw("device", Arg::of_device(like.device)));
  return op("aten.zeros.default", std::move(call));
}

ValueId Emit::restride(ValueId a, const TensorMeta& want) {
  TensorMeta have = meta(a);
  if (have.sizes != want.sizes || have.strides == want.strides ||
      want.strides.size() != want.sizes.size())
    return a;
  std::vector<int64_t> perm = all_dims(int64_t(want.sizes.size()));
  std::stable_sort(perm.begin(), perm.end(), [&](int64_t x, int64_t y) {
    return want.strides[size_t(x)] > want.strides[size_t(y)];
  });
  std::vector<int64_t> phys, inv(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) {
    phys.push_back(want.sizes[size_t(perm[k])]);
    inv[size_t(perm[k])] = int64_t(k);
  }
  std::vector<int64_t> dense = contiguous_strides(phys);
  for (size_t k = 0; k < perm.size(); ++k)
    if (phys[k] != 1 && dense[k] != want.strides[size_t(perm[k])]) return a;
  ValueId c = op(
      "aten.clone.default",
      {t(permute(a, perm)), kw("memory_format", Arg::of_memory_format(MemoryFormat::Contiguous))});
  return permute(c, inv);
}

ValueId Emit::pad_dim(ValueId a, int64_t d, int64_t lo, int64_t hi) {
  int64_t n = sizes(a)[d];
  if (lo < 0 || hi < 0) {
    a = slice(a, d, lo < 0 ? -lo : 0, hi < 0 ? n + hi : n);
    lo = std::max<int64_t>(lo, 0);
    hi = std::max<int64_t>(hi, 0);
  }
  if (lo == 0 && hi == 0) return a;
  int64_t r = dim(a);
  std::vector<int64_t> pad(size_t(2 * (r - d)), 0);
  pad[size_t(2 * (r - 1 - d))] = lo;
  pad[size_t(2 * (r - 1 - d) + 1)] = hi;
  return op("aten.constant_pad_nd.default", {t(a), ints(pad)});
}

ValueId Emit::mm(ValueId a, ValueId b) {
  return op("aten.mm.default", {t(a), t(b)});
}
ValueId Emit::bmm(ValueId a, ValueId b) {
  return op("aten.bmm.default", {t(a), t(b)});
}

std::string fresh_value_name(const Graph& g, std::string_view hint, NameCache* names) {
  return names ? names->take(hint) : unique_name(g, hint);
}

ValueMap copy_inputs(const Graph& src, Graph& dst, const std::vector<bool>& keep_input,
                     NameCache* names) {
  dst.source = src.source;
  dst.name = src.name;
  ValueMap map(src.values.size(), kNoValue);
  for (size_t k = 0; k < src.inputs.size(); ++k) {
    if (!keep_input.empty() && !keep_input[k]) continue;
    const GraphInput& in = src.inputs[k];
    const Value& v = src.values[in.value];
    ValueId nv = dst.add_value(fresh_value_name(dst, v.name, names), v.meta);
    GraphInput copy = in;
    copy.value = nv;
    dst.inputs.push_back(copy);
    map[in.value] = nv;
    if (in.kind != InputKind::UserInput) {
      auto w = src.weights.find(in.fqn);
      if (w != src.weights.end()) dst.weights.insert(*w);
    }
  }
  return map;
}

std::vector<Arg> remap_args(const Node& n, const ValueMap& map) {
  std::vector<Arg> args = n.args;
  for (Arg& a : args) {
    if (a.kind == Arg::Kind::Tensor && a.tensor != kNoValue) {
      assert(map[a.tensor] != kNoValue && "remap_args: input value not mapped");
      a.tensor = map[a.tensor];
    }
    if (a.kind == Arg::Kind::Tensors)
      for (ValueId& v : a.tensors) {
        if (v == kNoValue) continue;
        assert(map[v] != kNoValue && "remap_args: input value not mapped");
        v = map[v];
      }
  }
  return args;
}

void copy_node(const Graph& src, const Node& n, Graph& dst, ValueMap& map, NameCache* names) {
  Node m = n;
  m.args = remap_args(n, map);
  m.name = fresh_value_name(dst, n.name, names);
  m.outputs.clear();
  int32_t idx = int32_t(dst.nodes.size());
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    const Value& v = src.values[n.outputs[k]];
    std::string name = v.name == n.name ? m.name : fresh_value_name(dst, v.name, names);
    ValueId nv = dst.add_value(name, v.meta);
    dst.values[nv].producer = idx;
    dst.values[nv].output_index = int32_t(k);
    m.outputs.push_back(nv);
    map[n.outputs[k]] = nv;
  }
  dst.nodes.push_back(std::move(m));
}

} // namespace fxc
