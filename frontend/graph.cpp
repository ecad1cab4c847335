// The graph IR: small helpers on values, nodes and graphs.
#include "frontend/graph.h"

#include "frontend/schema.h"

#include <cassert>

namespace fxc {

std::string device_name(const Device& d) {
  std::string s = d.kind == Device::CUDA ? "cuda" : "cpu";
  if (d.index >= 0) s += ":" + std::to_string(d.index);
  return s;
}

int64_t TensorMeta::numel() const {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

bool is_contiguous_layout(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  assert(sizes.size() == strides.size() && "one stride per dim");
  int64_t expected = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    if (sizes[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

bool TensorMeta::is_contiguous() const {
  return is_contiguous_layout(sizes, strides);
}

bool TensorMeta::operator==(const TensorMeta& o) const {
  return dtype == o.dtype && sizes == o.sizes && strides == o.strides &&
         storage_offset == o.storage_offset && device == o.device;
}

namespace {
std::string join(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(v[i]);
  }
  return s;
}
} // namespace

// "4, 256", or with the symbols of a dynamic tensor "s77, 256".
static std::string join_dims(const std::vector<int64_t>& v, const std::vector<SymExpr>& sym) {
  if (sym.size() != v.size()) return join(v);
  std::string s;
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + (sym[i].empty() ? std::to_string(v[i]) : format_sym(sym[i]));
  return s;
}

std::string format_meta(const TensorMeta& m) {
  return std::string(dtype_name(m.dtype)) + "[" + join_dims(m.sizes, m.sym_sizes) + "]";
}

std::string format_meta_with_strides(const TensorMeta& m) {
  std::string s = format_meta(m);
  if (!m.is_contiguous()) s += "{" + join_dims(m.strides, m.sym_strides) + "}";
  if (m.storage_offset) s += "+" + std::to_string(m.storage_offset);
  return s;
}

bool Arg::operator==(const Arg& o) const {
  if (kind != o.kind) return false;
  switch (kind) {
  case Kind::None:
    return true;
  case Kind::Int:
    return i == o.i && syms == o.syms;
  case Kind::DType:
  case Kind::MemoryFormat:
  case Kind::Layout:
    return i == o.i;
  case Kind::Float:
    return f == o.f || (f != f && o.f != o.f);
  case Kind::Bool:
    return b == o.b;
  case Kind::String:
    return s == o.s;
  case Kind::Ints:
    return ints == o.ints && syms == o.syms;
  case Kind::Floats:
    return floats == o.floats;
  case Kind::Bools:
    return bools == o.bools;
  case Kind::Tensor:
    return tensor == o.tensor;
  case Kind::Tensors:
    return tensors == o.tensors;
  case Kind::Device:
    return device == o.device;
  }
  return false;
}

const Arg& Node::arg(std::string_view name) const {
  assert(schema && "node without schema");
  int i = schema->index_of(name);
  assert(i >= 0 && size_t(i) < args.size() && "no such argument");
  return args[i];
}

std::vector<ValueId> Node::tensor_inputs() const {
  std::vector<ValueId> out;
  for (const Arg& a : args) {
    if (a.kind == Arg::Kind::Tensor) out.push_back(a.tensor);
    if (a.kind == Arg::Kind::Tensors)
      for (ValueId v : a.tensors)
        if (v != kNoValue) out.push_back(v);
  }
  return out;
}

std::string_view input_kind_name(InputKind k) {
  switch (k) {
  case InputKind::Parameter:
    return "parameter";
  case InputKind::Buffer:
    return "buffer";
  case InputKind::Constant:
    return "constant";
  case InputKind::UserInput:
    return "user_input";
  }
  return "?";
}

ValueId Graph::add_value(std::string name, TensorMeta meta) {
  values.push_back(Value{std::move(name), std::move(meta), -1, 0});
  return ValueId(values.size() - 1);
}

ValueId Graph::find_value(std::string_view name) const {
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].name == name) return ValueId(i);
  return kNoValue;
}

std::vector<int> Graph::use_counts() const {
  std::vector<int> uses(values.size(), 0);
  for (const Node& n : nodes)
    for (ValueId v : n.tensor_inputs()) ++uses[v];
  for (ValueId v : outputs) ++uses[v];
  return uses;
}

std::string normalize_target(std::string_view t) {
  std::string s(t);
  if (s.rfind("torch.ops.", 0) == 0) s = s.substr(10);
  size_t cc = s.find("::");
  if (cc != std::string::npos) s = s.substr(0, cc) + "." + s.substr(cc + 2);
  // "aten.relu" without an overload means the default overload.
  // So does "mylib.op" (a custom op written "mylib::op").
  size_t dot = s.find('.');
  if (dot != std::string::npos && dot > 0 && s.find('.', dot + 1) == std::string::npos)
    s += ".default";
  return s;
}

} // namespace fxc
