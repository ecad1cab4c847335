// Op schemas: a table of native_functions.yaml signatures, one row per ATen overload, and
// the parser that turns them into OpSchema.
#include "frontend/schema.h"

#include "frontend/custom_ops.h"

#include <algorithm>
#include <cassert>
#include <cctype>
#include <cmath>
#include <map>
#include <mutex>

namespace fxc {

namespace {

// One row per overload. Signatures follow PyTorch's native_functions.yaml; "Tensor(a)" marks a
// view of the first argument, "Tensor(a!)" an in-place mutation.
const char* const kSignatures[] = {
#define FXC_OP(id, signature, tags) signature,
#include "frontend/ops.def"
#undef FXC_OP
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace((unsigned char)s.front())) s.remove_prefix(1);
  while (!s.empty() && std::isspace((unsigned char)s.back())) s.remove_suffix(1);
  return s;
}

// Splits on commas that are not inside brackets.
std::vector<std::string_view> split_top(std::string_view s) {
  std::vector<std::string_view> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '[' || c == '(')
      ++depth;
    else if (c == ']' || c == ')')
      --depth;
    else if (c == ',' && depth == 0) {
      out.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  }
  if (!trim(s.substr(start)).empty()) out.push_back(trim(s.substr(start)));
  return out;
}

bool parse_number(std::string_view s, Arg* out) {
  std::string str(s);
  if (str == "inf") {
    *out = Arg::of_float(INFINITY);
    return true;
  }
  if (str == "-inf") {
    *out = Arg::of_float(-INFINITY);
    return true;
  }
  char* end = nullptr;
  bool is_float = str.find_first_of(".eE") != std::string::npos;
  if (is_float) {
    double v = std::strtod(str.c_str(), &end);
    if (end != str.c_str() + str.size()) return false;
    *out = Arg::of_float(v);
    return true;
  }
  long long v = std::strtoll(str.c_str(), &end, 10);
  if (str.empty() || end != str.c_str() + str.size()) return false;
  *out = Arg::of_int(v);
  return true;
}

// Parses a default value for an argument of the given (already parsed) type.
bool parse_default(std::string_view text, const ArgSchema& a, int fixed_len, Arg* out) {
  if (text == "None") {
    *out = Arg::none();
    return true;
  }
  if (a.type == ArgType::Int && !a.is_list && (text == "Mean" || text == "Sum")) {
    // native_functions.yaml's loss reductions (at::Reduction: None 0, Mean 1, Sum 2).
    *out = Arg::of_int(text == "Mean" ? 1 : 2);
    return true;
  }
  if (a.type == ArgType::Bool && !a.is_list) {
    if (text != "True" && text != "False") return false;
    *out = Arg::of_bool(text == "True");
    return true;
  }
  if (a.type == ArgType::Str) {
    if (text.size() < 2 || (text.front() != '\'' && text.front() != '"')) return false;
    *out = Arg::of_string(std::string(text.substr(1, text.size() - 2)));
    return true;
  }
  if (a.type == ArgType::ScalarType && !a.is_list) {
    // native_functions.yaml spells dtype defaults by name ("ScalarType? dtype=long").
    if (std::optional<DType> t = parse_dtype(text)) {
      *out = Arg::of_dtype(*t);
      return true;
    }
  }
  if (a.type == ArgType::MemoryFormat) {
    if (text == "contiguous_format") {
      *out = Arg::of_memory_format(MemoryFormat::Contiguous);
      return true;
    }
    if (text == "preserve_format") {
      *out = Arg::of_memory_format(MemoryFormat::Preserve);
      return true;
    }
    return false;
  }
  if (a.is_list) {
    std::vector<int64_t> v;
    if (text.front() == '[') {
      for (auto e : split_top(text.substr(1, text.size() - 2))) {
        Arg x;
        if (!parse_number(e, &x) || x.kind != Arg::Kind::Int) return false;
        v.push_back(x.i);
      }
    } else {
      Arg x;
      if (!parse_number(text, &x) || x.kind != Arg::Kind::Int) return false;
      v.assign(fixed_len > 0 ? fixed_len : 1, x.i);
    }
    *out = Arg::of_ints(std::move(v));
    return true;
  }
  Arg x;
  if (!parse_number(text, &x)) return false;
  if (a.type == ArgType::Float && x.kind == Arg::Kind::Int) x = Arg::of_float(double(x.i));
  *out = x;
  return true;
}

bool parse_type(std::string_view t, ArgSchema* a, int* fixed_len, std::string* error) {
  // Strip alias annotations: Tensor(a), Tensor(a!), Tensor(a -> *)
  std::string clean;
  int depth = 0;
  for (char c : t) {
    if (c == '(') {
      ++depth;
      continue;
    }
    if (c == ')') {
      --depth;
      continue;
    }
    if (depth == 0) clean += c;
  }
  std::string_view s = clean;
  // Optional list element ("Tensor?[]") or optional list ("int[1]?").
  if (!s.empty() && s.back() == '?') {
    a->optional = true;
    s.remove_suffix(1);
  }
  *fixed_len = 0;
  if (!s.empty() && s.back() == ']') {
    size_t lb = s.rfind('[');
    if (lb == std::string_view::npos) {
      *error = "unbalanced '['";
      return false;
    }
    auto n = s.substr(lb + 1, s.size() - lb - 2);
    if (!n.empty()) *fixed_len = std::atoi(std::string(n).c_str());
    a->is_list = true;
    s = s.substr(0, lb);
  }
  if (!s.empty() && s.back() == '?') {
    a->optional = true;
    s.remove_suffix(1);
  }
  static const std::pair<std::string_view, ArgType> kTypes[] = {
      {"Tensor", ArgType::Tensor},
      {"int", ArgType::Int},
      {"SymInt", ArgType::SymInt},
      {"float", ArgType::Float},
      {"bool", ArgType::Bool},
      {"Scalar", ArgType::Scalar},
      {"ScalarType", ArgType::ScalarType},
      {"Layout", ArgType::Layout},
      {"Device", ArgType::Device},
      {"MemoryFormat", ArgType::MemoryFormat},
      {"str", ArgType::Str},
      {"Generator", ArgType::Generator}};
  for (auto& [name, type] : kTypes)
    if (s == name) {
      a->type = type;
      return true;
    }
  *error = "unknown type '" + std::string(s) + "'";
  return false;
}

} // namespace

bool OpSchema::writes() const {
  if (is_inplace) return true;
  for (const ArgSchema& a : args)
    if (a.mutated) return true;
  return false;
}

int OpSchema::index_of(std::string_view name) const {
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].name == name) return int(i);
  return -1;
}

std::optional<OpSchema> parse_schema(std::string_view sig, std::string* error) {
  std::string dummy;
  if (!error) error = &dummy;
  size_t lp = sig.find('('), arrow = sig.rfind("->");
  if (lp == std::string_view::npos || arrow == std::string_view::npos || arrow < lp) {
    *error = "expected 'name(args) -> returns'";
    return std::nullopt;
  }
  size_t rp = sig.rfind(')', arrow);
  if (rp == std::string_view::npos || rp < lp) {
    *error = "missing ')'";
    return std::nullopt;
  }
  OpSchema op;
  std::string_view fname = trim(sig.substr(0, lp));
  size_t dot = fname.find('.');
  std::string base(fname.substr(0, dot)),
      overload = dot == std::string_view::npos ? "default" : std::string(fname.substr(dot + 1));
  op.target = "aten." + base + "." + overload;
  op.is_inplace = !base.empty() && base.back() == '_';
  bool kwarg_only = false;
  for (auto part : split_top(sig.substr(lp + 1, rp - lp - 1))) {
    if (part == "*") {
      kwarg_only = true;
      continue;
    }
    ArgSchema a;
    a.kwarg_only = kwarg_only;
    std::string_view decl = part, def;
    size_t eq = part.find('=');
    if (eq != std::string_view::npos) {
      decl = trim(part.substr(0, eq));
      def = trim(part.substr(eq + 1));
    }
    size_t sp = decl.rfind(' ');
    if (sp == std::string_view::npos) {
      *error = "argument without a name: " + std::string(part);
      return std::nullopt;
    }
    a.name = std::string(trim(decl.substr(sp + 1)));
    std::string_view type = trim(decl.substr(0, sp));
    if (op.args.empty() && type.find("(a)") != std::string_view::npos) op.is_view = true;
    a.mutated = type.find("!)") != std::string_view::npos;
    int fixed_len = 0;
    if (!parse_type(type, &a, &fixed_len, error)) return std::nullopt;
    if (!def.empty()) {
      a.has_default = true;
      if (!parse_default(def, a, fixed_len, &a.default_value)) {
        *error = "bad default '" + std::string(def) + "' for " + a.name;
        return std::nullopt;
      }
    }
    op.args.push_back(std::move(a));
  }
  std::string_view rets = trim(sig.substr(arrow + 2));
  if (rets.empty()) {
    *error = "missing returns after '->'";
    return std::nullopt;
  }
  if (rets.front() == '(') rets = rets.substr(1, rets.size() - 2);
  for (auto r : split_top(rets)) {
    ReturnSchema rs;
    rs.is_list = r.size() >= 2 && r.substr(r.size() - 2) == "[]";
    op.returns.push_back(rs);
  }
  return op;
}

std::string arg_type_name(const ArgSchema& a) {
  static const char* kNames[] = {"Tensor", "int",          "SymInt",     "float",
                                 "bool",   "Scalar",       "ScalarType", "Layout",
                                 "Device", "MemoryFormat", "str",        "Generator"};
  std::string s = kNames[int(a.type)];
  if (a.is_list) s += a.optional && a.type == ArgType::Tensor ? "?[]" : "[]";
  if (a.optional && !(a.is_list && a.type == ArgType::Tensor)) s += "?";
  return s;
}

std::string_view arg_kind_name(Arg::Kind k) {
  switch (k) {
  case Arg::Kind::None:
    return "None";
  case Arg::Kind::Int:
    return "int";
  case Arg::Kind::Float:
    return "float";
  case Arg::Kind::Bool:
    return "bool";
  case Arg::Kind::String:
    return "string";
  case Arg::Kind::Ints:
    return "int list";
  case Arg::Kind::Floats:
    return "float list";
  case Arg::Kind::Bools:
    return "bool list";
  case Arg::Kind::Tensor:
    return "tensor";
  case Arg::Kind::Tensors:
    return "tensor list";
  case Arg::Kind::DType:
    return "dtype";
  case Arg::Kind::Device:
    return "device";
  case Arg::Kind::MemoryFormat:
    return "memory format";
  case Arg::Kind::Layout:
    return "layout";
  }
  return "?";
}

namespace {
// Checks (and where PyTorch would, converts) one argument against its declared type.
bool coerce(const ArgSchema& a, Arg* v) {
  using K = Arg::Kind;
  if (v->kind == K::None) return a.optional;
  if (a.is_list) {
    switch (a.type) {
    case ArgType::Tensor:
      return v->kind == K::Tensors;
    case ArgType::Int:
    case ArgType::SymInt:
      if (v->kind == K::Int) {
        *v = Arg::of_ints({v->i});
        return true;
      }
      return v->kind == K::Ints;
    case ArgType::Float:
      return v->kind == K::Floats;
    case ArgType::Bool:
      return v->kind == K::Bools;
    default:
      return false;
    }
  }
  switch (a.type) {
  case ArgType::Tensor:
    return v->kind == K::Tensor;
  case ArgType::Int:
  case ArgType::SymInt:
    return v->kind == K::Int;
  case ArgType::Float:
    if (v->kind == K::Int) {
      *v = Arg::of_float(double(v->i));
      return true;
    }
    return v->kind == K::Float;
  case ArgType::Bool:
    return v->kind == K::Bool;
  case ArgType::Scalar:
    return v->kind == K::Int || v->kind == K::Float || v->kind == K::Bool;
  case ArgType::ScalarType:
    return v->kind == K::DType;
  case ArgType::Layout:
    return v->kind == K::Layout;
  case ArgType::Device:
    return v->kind == K::Device;
  case ArgType::MemoryFormat:
    return v->kind == K::MemoryFormat;
  case ArgType::Str:
    return v->kind == K::String;
  case ArgType::Generator:
    return false;
  }
  return false;
}
} // namespace

bool arg_matches(const ArgSchema& schema, const Arg& a) {
  Arg v = a;
  return coerce(schema, &v) && v == a;
}

bool bind_args(const OpSchema& schema, const std::vector<CallArg>& call, std::vector<Arg>* args,
               std::vector<bool>* given, std::string* error) {
  const size_t n = schema.args.size();
  args->assign(n, Arg::none());
  given->assign(n, false);
  size_t pos = 0;
  for (const CallArg& c : call) {
    int idx;
    if (c.name.empty()) {
      while (pos < n && schema.args[pos].kwarg_only) ++pos;
      if (pos >= n || schema.args[pos].kwarg_only) {
        *error = "too many positional arguments (the schema takes " + std::to_string(n) + ")";
        return false;
      }
      idx = int(pos++);
    } else {
      idx = schema.index_of(c.name);
      if (idx < 0) {
        *error = "unknown argument '" + c.name + "'";
        return false;
      }
    }
    if ((*given)[idx]) {
      *error = "argument '" + schema.args[idx].name + "' given twice";
      return false;
    }
    Arg v = c.value;
    if (!coerce(schema.args[idx], &v)) {
      *error = "argument '" + schema.args[idx].name + "' expects " +
               arg_type_name(schema.args[idx]) + ", got " +
               std::string(arg_kind_name(c.value.kind));
      return false;
    }
    (*args)[idx] = std::move(v);
    (*given)[idx] = true;
  }
  for (size_t i = 0; i < n; ++i) {
    if ((*given)[i]) continue;
    const ArgSchema& a = schema.args[i];
    if (a.has_default) {
      (*args)[i] = a.default_value;
      continue;
    }
    if (a.optional) continue; // "Tensor? bias" without default still accepts absence as None
    *error = "missing argument '" + a.name + "'";
    return false;
  }
  return true;
}

namespace {
struct Registry {
  std::map<std::string, OpSchema, std::less<>> by_target;
  std::vector<const OpSchema*> sorted;
};
const Registry& registry() {
  static Registry* r = [] {
    auto* reg = new Registry;
    for (const char* sig : kSignatures) {
      std::string err;
      auto s = parse_schema(sig, &err);
      assert(s && "malformed built-in schema");
      std::string t = s->target;
      reg->by_target.emplace(t, std::move(*s));
    }
    for (auto& [k, v] : reg->by_target) reg->sorted.push_back(&v);
    return reg;
  }();
  return *r;
}
} // namespace

const OpSchema* find_schema(std::string_view target) {
  const auto& r = registry();
  auto it = r.by_target.find(target);
  if (it != r.by_target.end()) return &it->second;
  // Ops that plugins registered (frontend/custom_ops.h).
  const CustomOp* op = find_custom_op(target);
  return op ? &op->schema : nullptr;
}

const std::vector<const OpSchema*>& all_schemas() {
  return registry().sorted;
}

} // namespace fxc
