// Custom ops registered by plugins: checking descriptors, the registry, and the plugin's view
// of a call (arguments, shape function results).
#include "frontend/custom_ops.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

namespace fxc {

namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<CustomOp>, std::less<>> by_target;
};

Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

bool valid_identifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Each return must be a plain (possibly named) Tensor: "Tensor", "(Tensor, Tensor)", "Tensor out".
bool plain_tensor_returns(std::string_view rets, size_t* count) {
  rets = trim(rets);
  if (!rets.empty() && rets.front() == '(') {
    if (rets.back() != ')') return false;
    rets = rets.substr(1, rets.size() - 2);
  }
  *count = 0;
  while (true) {
    size_t comma = rets.find(',');
    std::string_view r = trim(rets.substr(0, comma));
    if (r != "Tensor" && r.rfind("Tensor ", 0) != 0) return false;
    ++*count;
    if (comma == std::string_view::npos) return true;
    rets = rets.substr(comma + 1);
  }
}

const char* kind_of(ArgType t) {
  switch (t) {
  case ArgType::Tensor:
    return nullptr;
  case ArgType::Int:
  case ArgType::SymInt:
  case ArgType::Float:
  case ArgType::Bool:
  case ArgType::Scalar:
    return "scalar";
  default:
    return "unsupported";
  }
}

constexpr std::pair<DType, int32_t> kDTypes[] = {
    {DType::Bool, FXC_DTYPE_BOOL}, {DType::U8, FXC_DTYPE_U8},     {DType::I8, FXC_DTYPE_I8},
    {DType::I16, FXC_DTYPE_I16},   {DType::I32, FXC_DTYPE_I32},   {DType::I64, FXC_DTYPE_I64},
    {DType::F16, FXC_DTYPE_F16},   {DType::BF16, FXC_DTYPE_BF16}, {DType::F32, FXC_DTYPE_F32},
    {DType::F64, FXC_DTYPE_F64},
};

} // namespace

int32_t to_plugin_dtype(DType t) {
  for (auto [d, c] : kDTypes)
    if (d == t) return c;
  return -1;
}

bool from_plugin_dtype(int32_t code, DType* out) {
  for (auto [d, c] : kDTypes)
    if (c == code) {
      *out = d;
      return true;
    }
  return false;
}

bool make_custom_op(const fxc_op_desc& desc, const std::string& library, CustomOp* out,
                    std::string* error) {
  if (desc.api_version != FXC_PLUGIN_API_VERSION) {
    *error = "an op descriptor has plugin API version " + std::to_string(desc.api_version) +
             "; this fxc supports version " + std::to_string(FXC_PLUGIN_API_VERSION) +
             " (rebuild the plugin against this fxc's include/fxc/plugin.h)";
    return false;
  }
  if (!desc.name) {
    *error = "an op descriptor has no name";
    return false;
  }
  std::string name(desc.name, strnlen(desc.name, 256));
  auto fail = [&](const std::string& msg) {
    *error = "op '" + name + "': " + msg;
    return false;
  };
  size_t cc = name.find("::");
  if (cc == std::string::npos || !valid_identifier(name.substr(0, cc)) ||
      !valid_identifier(name.substr(cc + 2)))
    return fail("the name must be 'namespace::op' (letters, digits, '_')");
  std::string ns = name.substr(0, cc), base = name.substr(cc + 2);
  if (ns == "aten" || ns == "prims" || ns == "torch")
    return fail("the namespace '" + ns + "' is reserved; use your library's own");
  if (!desc.schema) return fail("no schema");
  std::string sig(desc.schema, strnlen(desc.schema, 4096));
  auto bad_schema = [&](const std::string& msg) { return fail("schema '" + sig + "': " + msg); };
  size_t lp = sig.find('('), arrow = sig.rfind("->");
  if (lp == std::string::npos || arrow == std::string::npos || arrow < lp)
    return bad_schema("expected 'name(args) -> returns'");
  if (sig.find_first_of("[]") != std::string::npos)
    return bad_schema("list arguments and returns are not supported");
  if (sig.find('!') != std::string::npos || sig.find("Tensor(") != std::string::npos)
    return bad_schema("alias annotations (views, in-place) are not supported");
  std::string fname(trim(std::string_view(sig).substr(0, lp)));
  std::string fbase = fname.substr(0, fname.find('.'));
  if (fbase != base) return bad_schema("the function name must be '" + base + "'");
  size_t num_returns = 0;
  if (!plain_tensor_returns(std::string_view(sig).substr(arrow + 2), &num_returns))
    return bad_schema("returns must be Tensor or a tuple of Tensors");
  if (num_returns > FXC_PLUGIN_MAX_TENSORS)
    return bad_schema("more than " + std::to_string(FXC_PLUGIN_MAX_TENSORS) + " returns");
  std::string perr;
  std::optional<OpSchema> s = parse_schema(sig, &perr);
  if (!s) return bad_schema(perr);
  if (s->returns.size() != num_returns) return bad_schema("cannot read the returns");
  int tensors = 0, scalars = 0;
  for (const ArgSchema& a : s->args) {
    const char* k = kind_of(a.type);
    if (a.optional || (k && std::string_view(k) == "unsupported"))
      return bad_schema("argument '" + a.name + "' has type " + arg_type_name(a) +
                        "; plugins take Tensor, int, SymInt, float, bool and Scalar");
    (k ? scalars : tensors)++;
  }
  if (tensors == 0) return bad_schema("an op needs at least one Tensor argument");
  if (tensors > FXC_PLUGIN_MAX_TENSORS)
    return bad_schema("more than " + std::to_string(FXC_PLUGIN_MAX_TENSORS) + " tensor arguments");
  if (scalars > FXC_PLUGIN_MAX_SCALARS)
    return bad_schema("more than " + std::to_string(FXC_PLUGIN_MAX_SCALARS) +
                      " non-tensor arguments");
  if (!desc.shape) return fail("no shape function");
  if (!desc.cpu) return fail("no CPU kernel");
  // "ns.op.overload": the overload name comes from the schema ("op.out(...)" -> ".out").
  std::string overload = s->target.substr(s->target.rfind('.') + 1);
  s->target = ns + "." + base + "." + overload;
  out->name = name;
  out->target = s->target;
  out->library = library;
  out->schema = std::move(*s);
  out->shape = desc.shape;
  out->cpu = desc.cpu;
  out->cuda = desc.cuda;
  return true;
}

bool register_custom_ops(std::vector<CustomOp> ops, std::string* error) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (size_t i = 0; i < ops.size(); ++i) {
    auto it = r.by_target.find(ops[i].target);
    if (it != r.by_target.end()) {
      *error = "op '" + ops[i].name + "' is already registered (by " + it->second->library + ")";
      return false;
    }
    for (size_t j = 0; j < i; ++j)
      if (ops[j].target == ops[i].target) {
        *error = "op '" + ops[i].name + "' is registered twice";
        return false;
      }
  }
  for (CustomOp& op : ops) {
    std::string t = op.target;
    r.by_target.emplace(t, std::make_unique<CustomOp>(std::move(op)));
  }
  return true;
}

const CustomOp* find_custom_op(std::string_view target) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.by_target.find(target);
  return it == r.by_target.end() ? nullptr : it->second.get();
}

std::vector<const CustomOp*> custom_ops() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<const CustomOp*> out;
  for (auto& [t, op] : r.by_target) out.push_back(op.get());
  return out;
}

std::string unknown_op_message(std::string_view target) {
  std::string t(target);
  if (t.rfind("aten.", 0) == 0 || t.find('.') == std::string::npos) return "unknown op '" + t + "'";
  // "mylib.foo.default" -> "mylib::foo"
  size_t d1 = t.find('.'), d2 = t.find('.', d1 + 1);
  std::string shown = t.substr(0, d1) + "::" + t.substr(d1 + 1, d2 - d1 - 1);
  return "unknown operator '" + shown + "' (load its plugin with --plugin)";
}

fxc_op_args custom_op_args(const CustomOp& op, const std::vector<Arg>& args,
                           const std::vector<const TensorMeta*>& tensors) {
  fxc_op_args a;
  std::memset(&a, 0, sizeof a);
  if (args.size() != op.schema.args.size())
    throw std::invalid_argument("has " + std::to_string(args.size()) +
                                " arguments but the schema takes " +
                                std::to_string(op.schema.args.size()));
  size_t t = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const ArgSchema& s = op.schema.args[i];
    const Arg& v = args[i];
    if (s.type == ArgType::Tensor) {
      if (t >= tensors.size() || !tensors[t] || a.num_inputs >= FXC_PLUGIN_MAX_TENSORS)
        throw std::invalid_argument("argument '" + s.name + "' has no tensor");
      const TensorMeta& m = *tensors[t++];
      if (m.sizes.size() > FXC_PLUGIN_MAX_DIMS)
        throw std::invalid_argument(
            "argument '" + s.name + "' has " + std::to_string(m.sizes.size()) +
            " dimensions; plugins take at most " + std::to_string(FXC_PLUGIN_MAX_DIMS));
      fxc_tensor_desc& d = a.inputs[a.num_inputs++];
      d.dtype = to_plugin_dtype(m.dtype);
      d.ndim = int32_t(m.sizes.size());
      for (size_t k = 0; k < m.sizes.size(); ++k) d.sizes[k] = m.sizes[k];
      continue;
    }
    if (a.num_scalars >= FXC_PLUGIN_MAX_SCALARS)
      throw std::invalid_argument("too many non-tensor arguments");
    fxc_scalar& sc = a.scalars[a.num_scalars++];
    switch (v.kind) {
    case Arg::Kind::Int:
      sc.kind = FXC_SCALAR_INT;
      sc.i = v.i;
      sc.f = double(v.i);
      break;
    case Arg::Kind::Float:
      sc.kind = FXC_SCALAR_FLOAT;
      sc.f = v.f;
      break;
    case Arg::Kind::Bool:
      sc.kind = FXC_SCALAR_BOOL;
      sc.i = v.b ? 1 : 0;
      sc.f = v.b ? 1.0 : 0.0;
      break;
    default:
      throw std::invalid_argument("argument '" + s.name + "' expects " + arg_type_name(s) +
                                  ", got " + std::string(arg_kind_name(v.kind)));
    }
  }
  return a;
}

std::vector<TensorMeta> custom_op_output_metas(const CustomOp& op, const fxc_op_args& a,
                                               Device device) {
  const int32_t n = int32_t(op.schema.returns.size());
  fxc_tensor_desc outs[FXC_PLUGIN_MAX_TENSORS];
  std::memset(outs, 0, sizeof outs);
  char err[FXC_PLUGIN_ERROR_SIZE] = {0};
  if (op.shape(&a, n, outs, err) != 0) {
    err[FXC_PLUGIN_ERROR_SIZE - 1] = 0;
    throw std::invalid_argument(std::string(op.name) +
                                " shape function: " + (err[0] ? err : "failed without a message"));
  }
  std::vector<TensorMeta> metas;
  for (int32_t i = 0; i < n; ++i) {
    const fxc_tensor_desc& d = outs[i];
    auto bad = [&](const std::string& what) {
      return std::invalid_argument(op.name + " shape function: output " + std::to_string(i) + " " +
                                   what);
    };
    TensorMeta m;
    if (!from_plugin_dtype(d.dtype, &m.dtype))
      throw bad("has unknown dtype code " + std::to_string(d.dtype));
    if (d.ndim < 0 || d.ndim > FXC_PLUGIN_MAX_DIMS) throw bad("has rank " + std::to_string(d.ndim));
    int64_t numel = 1;
    for (int32_t k = 0; k < d.ndim; ++k) {
      if (d.sizes[k] < 0) throw bad("has a negative size");
      if (d.sizes[k] > 0 && numel > (int64_t(1) << 62) / d.sizes[k])
        throw bad("has too many elements");
      numel *= d.sizes[k];
      m.sizes.push_back(d.sizes[k]);
    }
    m.strides = contiguous_strides(m.sizes);
    m.device = device;
    metas.push_back(std::move(m));
  }
  return metas;
}

} // namespace fxc
