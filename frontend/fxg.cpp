// fxc's native graph format: the .fxg / .fxg.zst reader and writer (format in docs/fxg.md).
#include "frontend/fxg.h"

#include "frontend/custom_ops.h"
#include "frontend/diag.h"
#include "frontend/import.h"
#include "frontend/io_util.h"
#include "frontend/random.h"
#include "frontend/safetensors.h"
#include "frontend/schema.h"
#include "frontend/shape_prop.h"

#include <nlohmann/json.hpp>
#include <zstd.h>

#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <type_traits>

namespace fxc {

namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

constexpr int kVersion = 1;
// Decompressed .fxg text larger than this is refused (a zstd bomb, not a graph).
constexpr size_t kMaxFxgBytes = size_t(1) << 30;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string fxg_stem(const std::string& path) {
  return stem_of(path, ends_with(path, ".fxg.zst") ? ".fxg.zst" : ".fxg");
}

// ---------------------------------------------------------------------------------------------
// Init rules: one row per rule, with its parameters and their defaults.

struct RuleParam {
  const char* name;
  double default_value; // NaN: required (or computed, for fan_in)
};
struct InitRule {
  const char* name;
  bool random;
  std::vector<RuleParam> params;
};
const double kRequired = std::numeric_limits<double>::quiet_NaN();
const std::vector<InitRule>& init_rules() {
  static const std::vector<InitRule> rules = {
      {"zeros", false, {}},
      {"ones", false, {}},
      {"full", false, {{"value", kRequired}}},
      {"arange", false, {{"start", 0.0}, {"step", 1.0}}},
      {"uniform", true, {{"low", 0.0}, {"high", 1.0}}},
      {"normal", true, {{"mean", 0.0}, {"std", 1.0}}},
      {"kaiming_uniform", true, {{"a", std::sqrt(5.0)}, {"fan_in", kRequired}}},
  };
  return rules;
}
const InitRule* find_rule(const std::string& name) {
  for (const InitRule& r : init_rules())
    if (name == r.name) return &r;
  return nullptr;
}

double param(const WeightInit& init, const char* name) {
  auto it = init.params.find(name);
  assert(it != init.params.end() && "init parameter not filled in");
  return it->second;
}

// Fills a contiguous tensor of `meta` according to `init` (parameters already validated).
void run_init(const WeightInit& init, const TensorMeta& meta, std::byte* dst) {
  const size_t n = size_t(meta.numel());
  const std::string& r = init.rule;
  if (r == "zeros") return fill_value(meta.dtype, n, 0.0, dst);
  if (r == "ones") return fill_value(meta.dtype, n, 1.0, dst);
  if (r == "full") return fill_value(meta.dtype, n, param(init, "value"), dst);
  if (r == "arange")
    return fill_arange(meta.dtype, n, param(init, "start"), param(init, "step"), dst);
  if (r == "uniform")
    return fill_uniform(meta.dtype, n, init.seed, param(init, "low"), param(init, "high"), dst);
  if (r == "normal")
    return fill_normal(meta.dtype, n, init.seed, param(init, "mean"), param(init, "std"), dst);
  if (r == "kaiming_uniform") {
    // torch.nn.init.kaiming_uniform_ with leaky_relu gain: bound = sqrt(6 / ((1 + a^2) fan_in)).
    double a = param(init, "a");
    double bound = std::sqrt(6.0 / ((1.0 + a * a) * param(init, "fan_in")));
    return fill_uniform(meta.dtype, n, init.seed, -bound, bound, dst);
  }
  assert(false && "unknown init rule");
}

// ---------------------------------------------------------------------------------------------
// Argument encoding shared by reader and writer.

struct NamedCode {
  const char* name;
  int64_t code;
};
constexpr NamedCode kMemoryFormats[] = {
    {"contiguous_format", int64_t(MemoryFormat::Contiguous)},
    {"channels_last", int64_t(MemoryFormat::ChannelsLast)},
    {"channels_last_3d", int64_t(MemoryFormat::ChannelsLast3d)},
    {"preserve_format", int64_t(MemoryFormat::Preserve)},
};

ojson float_json(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

// A size or stride list; symbolic entries are their expressions as strings ("4*s0").
ojson dims_json(const std::vector<int64_t>& v, const std::vector<SymExpr>& sym) {
  ojson l = ojson::array();
  for (size_t i = 0; i < v.size(); ++i)
    if (i < sym.size() && !sym[i].empty())
      l.push_back(format_sym(sym[i]));
    else
      l.push_back(v[i]);
  return l;
}

ojson arg_json(const Graph& g, const Arg& a) {
  using K = Arg::Kind;
  auto name = [&](ValueId v) -> ojson {
    return v == kNoValue ? ojson(nullptr) : ojson(g.values[v].name);
  };
  switch (a.kind) {
  case K::None:
    return nullptr;
  case K::Int:
    if (!a.syms.empty() && !a.syms[0].empty()) return ojson{{"sym_int", format_sym(a.syms[0])}};
    return a.i;
  case K::Float:
    if (std::isfinite(a.f)) return a.f;
    return ojson{{"float", float_json(a.f)}};
  case K::Bool:
    return a.b;
  case K::String:
    return a.s;
  case K::Ints:
    return ojson{{"ints", dims_json(a.ints, a.syms)}};
  case K::Floats: {
    ojson l = ojson::array();
    for (double f : a.floats) l.push_back(float_json(f));
    return ojson{{"floats", l}};
  }
  case K::Bools: {
    ojson l = ojson::array();
    for (bool b : a.bools) l.push_back(b);
    return ojson{{"bools", l}};
  }
  case K::Tensor:
    return ojson{{"ref", name(a.tensor)}};
  case K::Tensors: {
    ojson l = ojson::array();
    for (ValueId v : a.tensors) l.push_back(name(v));
    return ojson{{"refs", l}};
  }
  case K::DType:
    return ojson{{"dtype", std::string(dtype_name(a.dtype()))}};
  case K::Device:
    return ojson{{"device", device_name(a.device)}};
  case K::MemoryFormat:
    for (const NamedCode& m : kMemoryFormats)
      if (m.code == a.i) return ojson{{"memory_format", m.name}};
    assert(false && "unknown memory format");
    return nullptr;
  case K::Layout:
    return ojson{{"layout", "strided"}};
  }
  assert(false && "unknown arg kind");
  return nullptr;
}

// Compact JSON with a space after ':' and ',' (nlohmann's compact form has none).
void emit(const ojson& j, std::string& out) {
  if (j.is_object()) {
    out += '{';
    bool first = true;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!first) out += ", ";
      first = false;
      out += ojson(it.key()).dump();
      out += ": ";
      emit(it.value(), out);
    }
    out += '}';
  } else if (j.is_array()) {
    out += '[';
    for (size_t i = 0; i < j.size(); ++i) {
      if (i) out += ", ";
      emit(j[i], out);
    }
    out += ']';
  } else {
    out += j.dump();
  }
}

ojson meta_json(const TensorMeta& m) {
  ojson j = {{"dtype", std::string(dtype_name(m.dtype))},
             {"shape", dims_json(m.sizes, m.sym_sizes)}};
  if (!m.is_contiguous()) j["strides"] = dims_json(m.strides, m.sym_strides);
  if (m.storage_offset) j["storage_offset"] = m.storage_offset;
  return j;
}

// ---------------------------------------------------------------------------------------------
// Reading.

class FxgReader {
public:
  explicit FxgReader(std::string path) : path_(std::move(path)) {}
  /// Reads `text` instead of a file; weights named by "file" come from `embedded` by key.
  FxgReader(std::string source, std::string text, const std::map<std::string, WeightData>* embedded)
      : path_(std::move(source)), text_(std::move(text)), embedded_(embedded) {}

  /// The external files read, in first-use order (valid after run()).
  const std::vector<std::string>& files_read() const { return files_read_; }

  Graph run() {
    std::string text = embedded_ ? std::move(text_) : load_text();
    if (json_nesting_depth(text) > kMaxJsonDepth)
      throw Error(path_, "malformed JSON: nested deeper than " + std::to_string(kMaxJsonDepth) +
                             " levels");
    json doc;
    try {
      doc = json::parse(text);
    } catch (const json::exception& e) { // parse_error, or out_of_range for a number like 9e999
      std::string msg = e.what();
      size_t close = msg.find("] ");
      if (msg.rfind("[json.exception", 0) == 0 && close != std::string::npos)
        msg = msg.substr(close + 2);
      throw Error(path_, "malformed JSON: " + msg);
    }
    g_.source = path_;
    g_.name = fxg_stem(path_);
    try {
      read(doc);
    } catch (const json::exception& e) {
      fail(std::string("unexpected JSON structure: ") + e.what());
    }
    return std::move(g_);
  }

private:
  [[noreturn]] void fail(const std::string& msg, const std::string& node = {},
                         const std::string& op = {}) const {
    throw Error(path_, msg, node, op);
  }

  std::string load_text() {
    std::string bytes = read_file_bytes(path_);
    if (bytes.size() < 4 || (unsigned char)bytes[0] != 0x28 || (unsigned char)bytes[1] != 0xB5 ||
        (unsigned char)bytes[2] != 0x2F || (unsigned char)bytes[3] != 0xFD)
      return bytes;
    std::unique_ptr<ZSTD_DStream, size_t (*)(ZSTD_DStream*)> ds(ZSTD_createDStream(),
                                                                ZSTD_freeDStream);
    ZSTD_initDStream(ds.get());
    std::string out;
    std::vector<char> buf(ZSTD_DStreamOutSize());
    ZSTD_inBuffer in{bytes.data(), bytes.size(), 0};
    size_t ret = 0;
    for (;;) {
      ZSTD_outBuffer ob{buf.data(), buf.size(), 0};
      ret = ZSTD_decompressStream(ds.get(), &ob, &in);
      if (ZSTD_isError(ret)) fail(std::string("corrupt zstd data: ") + ZSTD_getErrorName(ret));
      out.append(buf.data(), ob.pos);
      if (out.size() > kMaxFxgBytes) fail("decompressed graph exceeds 1 GiB");
      // All input consumed and the decoder had room left: it holds nothing more.
      if (in.pos == in.size && ob.pos < ob.size) break;
    }
    if (ret != 0) fail("truncated zstd data");
    return out;
  }

  const json& get(const json& obj, const char* key, const std::string& what) const {
    if (!obj.is_object()) fail(what + " is not a JSON object");
    auto it = obj.find(key);
    if (it == obj.end()) fail(what + " has no \"" + key + "\"");
    return *it;
  }
  const json* find(const json& obj, const char* key) const {
    auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
  }
  std::string str(const json& j, const std::string& what) const {
    if (!j.is_string()) fail(what + " must be a string");
    return j.get<std::string>();
  }
  int64_t integer(const json& j, const std::string& what) const {
    if (!j.is_number_integer() ||
        (j.is_number_unsigned() && j.get<uint64_t>() > uint64_t(INT64_MAX)))
      fail(what + " must be an integer");
    return j.get<int64_t>();
  }
  double number(const json& j, const std::string& what) const {
    if (j.is_number()) return j.get<double>();
    if (j.is_string()) {
      std::string s = j.get<std::string>();
      if (s == "inf") return std::numeric_limits<double>::infinity();
      if (s == "-inf") return -std::numeric_limits<double>::infinity();
      if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    }
    fail(what + " must be a number (or \"inf\", \"-inf\", \"nan\")");
  }
  DType dtype(const json& j, const std::string& what) const {
    std::string s = str(j, what);
    auto t = parse_dtype(s);
    if (!t) fail(what + ": unknown dtype '" + s + "'");
    return *t;
  }
  std::vector<int64_t> int_list(const json& j, const std::string& what,
                                std::vector<SymExpr>* syms = nullptr) const {
    if (!j.is_array()) fail(what + " must be a list of integers");
    std::vector<int64_t> out;
    bool symbolic = false;
    for (const json& e : j) {
      SymExpr x;
      if (syms && e.is_string()) {
        x = sym_int(e, what);
        out.push_back(*evaluate(x, hints_));
        symbolic = true;
      } else {
        out.push_back(integer(e, what));
      }
      if (syms) syms->push_back(x);
    }
    if (syms && !symbolic) syms->clear();
    return out;
  }
  // A size expression over the declared symbols ("4*s0").
  SymExpr sym_int(const json& j, const std::string& what) const {
    std::string text = str(j, what);
    SymExpr e;
    try {
      e = parse_sym_text(text);
    } catch (const SymError& err) {
      fail(what + ": " + err.what());
    }
    std::set<std::string> names;
    collect_symbols(e, names);
    for (const std::string& n : names)
      if (!hints_.count(n)) fail(what + ": symbol '" + n + "' is not declared in \"symbols\"");
    if (!evaluate(e, hints_)) fail(what + ": '" + text + "' cannot be evaluated at the hints");
    return e;
  }
  std::vector<int64_t> shape(const json& j, const std::string& what,
                             std::vector<SymExpr>* syms = nullptr) const {
    std::vector<int64_t> s = int_list(j, what, syms);
    int64_t n = 1;
    for (int64_t d : s)
      if (d < 0 || !checked_mul(n, d, &n)) fail(what + " has a negative or overflowing size");
    return s;
  }

  void read(const json& doc) {
    if (!doc.is_object()) fail("an .fxg file is a JSON object");
    if (const json* f = find(doc, "format"); !f || *f != "fxg")
      fail("not an fxg graph: \"format\" must be \"fxg\"");
    int64_t version = integer(get(doc, "version", "the graph"), "\"version\"");
    if (version != kVersion)
      fail("unsupported fxg version " + std::to_string(version) + " (this fxc reads version " +
           std::to_string(kVersion) + ")");
    static const std::set<std::string> known = {"format", "version", "name",    "symbols",
                                                "inputs", "nodes",   "outputs", "mutation_outputs"};
    for (auto it = doc.begin(); it != doc.end(); ++it)
      if (!known.count(it.key())) fail("unknown key \"" + it.key() + "\" at the top level");
    if (const json* n = find(doc, "name")) g_.name = str(*n, "\"name\"");
    if (const json* s = find(doc, "symbols")) read_symbols(*s);
    const json& inputs = get(doc, "inputs", "the graph");
    if (!inputs.is_array()) fail("\"inputs\" must be a list");
    for (const json& in : inputs) read_input(in);
    const json& nodes = get(doc, "nodes", "the graph");
    if (!nodes.is_array()) fail("\"nodes\" must be a list");
    std::vector<std::vector<const json*>> declared;
    for (const json& n : nodes) declared.push_back(read_node(n));
    const json& outputs = get(doc, "outputs", "the graph");
    if (!outputs.is_array()) fail("\"outputs\" must be a list of value names");
    for (const json& o : outputs) {
      std::string name = str(o, "an output");
      auto it = ids_.find(name);
      if (it == ids_.end()) fail("graph output names undefined value '" + name + "'");
      g_.outputs.push_back(it->second);
    }
    if (const json* m = find(doc, "mutation_outputs")) {
      int64_t k = integer(*m, "\"mutation_outputs\"");
      if (k < 0 || size_t(k) > g_.outputs.size())
        fail("\"mutation_outputs\" is " + std::to_string(k) + " but the graph has " +
             std::to_string(g_.outputs.size()) + " outputs");
      g_.num_mutation_outputs = size_t(k);
    }
    propagate_shapes(g_);
    // Recorded metadata must agree with inference (at the hints, for symbolic sizes).
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& n = g_.nodes[i];
      within_node(n.name, n.target, [&] { check_declared_meta(n, declared[i]); });
    }
  }

  void check_declared_meta(const Node& n, const std::vector<const json*>& declared) {
    for (size_t k = 0; k < declared.size(); ++k) {
      const json& m = *declared[k];
      const std::string what = "\"meta\" of output '" + g_.values[n.outputs[k]].name + "'";
      const TensorMeta& got = g_.values[n.outputs[k]].meta;
      const DType dt = dtype(get(m, "dtype", what), what + ".dtype");
      std::vector<SymExpr> sym_sizes, sym_strides;
      const std::vector<int64_t> sizes = shape(get(m, "shape", what), what + ".shape", &sym_sizes);
      // Strides and storage offset are compared only when the file gives them.
      const json* sj = find(m, "strides");
      const json* oj = find(m, "storage_offset");
      const std::vector<int64_t> strides =
          sj ? int_list(*sj, what + ".strides", &sym_strides) : got.strides;
      const int64_t offset = oj ? integer(*oj, what + ".storage_offset") : got.storage_offset;
      if (dt != got.dtype || sizes != got.sizes || strides != got.strides ||
          offset != got.storage_offset) {
        auto describe = [&](DType t, const std::vector<int64_t>& sz, const std::vector<int64_t>& st,
                            int64_t off) {
          TensorMeta d;
          d.dtype = t;
          d.sizes = sz;
          std::string s = format_meta(d);
          if (sj) {
            s += "{";
            for (size_t i = 0; i < st.size(); ++i) s += (i ? ", " : "") + std::to_string(st[i]);
            s += "}";
          }
          if (oj) s += "+" + std::to_string(off);
          return s;
        };
        const std::string is = describe(got.dtype, got.sizes, got.strides, got.storage_offset);
        const std::string said = describe(dt, sizes, strides, offset);
        fail("output '" + g_.values[n.outputs[k]].name + "' is " + is + " but the file says " +
                 said,
             n.name, n.target);
      }
      TensorMeta& out = g_.values[n.outputs[k]].meta;
      out.sym_sizes = std::move(sym_sizes);
      // Strides left out are contiguous (the writer omits only those), symbolic with the sizes.
      out.sym_strides =
          sj ? std::move(sym_strides) : symbolic_contiguous_strides(out.sizes, out.sym_sizes);
    }
  }

  ValueId define(const std::string& name, TensorMeta meta, const std::string& node = {},
                 const std::string& op = {}) {
    if (name.empty()) fail("a value needs a non-empty name", node, op);
    if (ids_.count(name)) fail("value '" + name + "' is defined twice", node, op);
    ValueId v = g_.add_value(name, std::move(meta));
    ids_.emplace(name, v);
    return v;
  }

  // "symbols": {"s0": {"min": 1, "max": 4096 (null: unbounded), "hint": 64}}
  void read_symbols(const json& j) {
    if (!j.is_object()) fail("\"symbols\" must be an object of name: {min, max, hint}");
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string what = "symbol '" + it.key() + "'";
      SymExpr name;
      try {
        name = parse_sym_text(it.key());
      } catch (const SymError&) {
      }
      if (!name.is_symbol())
        fail(what + ": a symbol's name is a letter or '_' and then letters, digits or '_'");
      SymbolRange r;
      r.name = it.key();
      r.min = integer(get(*it, "min", what), what + ".min");
      const json& mx = get(*it, "max", what);
      r.max = mx.is_null() ? INT64_MAX : integer(mx, what + ".max");
      r.hint = integer(get(*it, "hint", what), what + ".hint");
      if (r.min < 0 || r.min > r.max || r.hint < r.min || r.hint > r.max)
        fail(what + ": needs 0 <= min <= hint <= max, got " + format_range(r) + " with hint " +
             std::to_string(r.hint));
      g_.symbols.push_back(r);
      hints_[r.name] = r.hint;
    }
  }

  void read_input(const json& in) {
    const std::string name = str(get(in, "name", "an input"), "an input's \"name\"");
    const std::string what = "input '" + name + "'";
    static const std::set<std::string> known = {"name",       "kind", "fqn",  "dtype", "shape",
                                                "persistent", "init", "file", "key"};
    for (auto it = in.begin(); it != in.end(); ++it)
      if (!known.count(it.key())) fail(what + ": unknown key \"" + it.key() + "\"");
    GraphInput gi;
    std::string kind = "user_input";
    if (const json* k = find(in, "kind")) kind = str(*k, what + ".kind");
    if (kind == "user_input")
      gi.kind = InputKind::UserInput;
    else if (kind == "parameter")
      gi.kind = InputKind::Parameter;
    else if (kind == "buffer")
      gi.kind = InputKind::Buffer;
    else if (kind == "constant")
      gi.kind = InputKind::Constant;
    else
      fail(what + ": unknown kind '" + kind + "' (user_input, parameter, buffer, constant)");
    TensorMeta meta;
    meta.dtype = dtype(get(in, "dtype", what), what + ".dtype");
    meta.sizes = shape(get(in, "shape", what), what + ".shape", &meta.sym_sizes);
    meta.strides = contiguous_strides(meta.sizes);
    if (!meta.sym_sizes.empty())
      meta.sym_strides = symbolic_contiguous_strides(meta.sizes, meta.sym_sizes);
    int64_t nbytes;
    if (!view_extent_bytes(meta.sizes, meta.strides, 0, int64_t(dtype_size(meta.dtype)), &nbytes))
      fail("size of " + what + " overflows");
    gi.fqn = name;
    if (const json* f = find(in, "fqn")) gi.fqn = str(*f, what + ".fqn");
    if (const json* p = find(in, "persistent")) {
      if (!p->is_boolean()) fail(what + ".persistent must be true or false");
      gi.persistent = p->get<bool>();
    }
    gi.value = define(name, meta);
    const json* init = find(in, "init");
    const json* file = find(in, "file");
    if (gi.kind == InputKind::UserInput) {
      if (init || file || find(in, "key"))
        fail(what + ": a user input takes no \"init\" or \"file\"");
    } else {
      if (!init == !file) fail(what + ": a " + kind + " needs exactly one of \"init\" or \"file\"");
      if (g_.weights.count(gi.fqn)) fail(what + ": fqn '" + gi.fqn + "' is used twice");
      g_.weights.emplace(gi.fqn, init ? read_init(*init, meta, what)
                                      : read_file_weight(in, *file, meta, gi.fqn, what));
    }
    g_.inputs.push_back(gi);
  }

  WeightData read_init(const json& j, const TensorMeta& meta, const std::string& what) {
    const std::string rule_name = str(get(j, "rule", what + ".init"), what + ".init.rule");
    const InitRule* rule = find_rule(rule_name);
    if (!rule) fail(what + ": unknown init rule '" + rule_name + "'");
    WeightInit init;
    init.rule = rule_name;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.key() == "rule") continue;
      if (it.key() == "seed") {
        int64_t s = integer(it.value(), what + ".init.seed");
        if (s < 0) fail(what + ": init seed must be non-negative");
        init.seed = uint64_t(s);
        continue;
      }
      bool ok = false;
      for (const RuleParam& p : rule->params) ok |= it.key() == p.name;
      if (!ok)
        fail(what + ": init rule '" + rule_name + "' takes no parameter \"" + it.key() + "\"");
      init.params[it.key()] = number(it.value(), what + ".init." + it.key());
    }
    if (rule->random && !j.contains("seed"))
      fail(what + ": init rule '" + rule_name + "' needs a \"seed\"");
    for (const RuleParam& p : rule->params) {
      if (init.params.count(p.name)) continue;
      if (!std::isnan(p.default_value)) {
        init.params[p.name] = p.default_value;
      } else if (std::string(p.name) == "fan_in" && meta.dim() >= 2) {
        init.params["fan_in"] = double(meta.numel() / std::max<int64_t>(meta.sizes[0], 1));
      } else {
        fail(what + ": init rule '" + rule_name + "' needs \"" + p.name + "\"");
      }
    }
    if (rule_name == "kaiming_uniform" && !(param(init, "fan_in") > 0))
      fail(what + ": kaiming_uniform needs a positive fan_in");
    WeightData w;
    w.meta = meta;
    w.init = init;
    int64_t nbytes;
    if (!view_extent_bytes(meta.sizes, meta.strides, 0, int64_t(dtype_size(meta.dtype)), &nbytes))
      fail("size of '" + what + "' overflows");
    // run_init writes numel() elements in a row: every byte of a contiguous tensor.
    const bool writes_all = nbytes == meta.numel() * int64_t(dtype_size(meta.dtype));
    w.storage = Storage::lazy(
        size_t(nbytes), [init, meta](std::byte* dst, size_t) { run_init(init, meta, dst); },
        writes_all);
    return w;
  }

  WeightData read_file_weight(const json& in, const json& file, const TensorMeta& meta,
                              const std::string& fqn, const std::string& what) {
    std::string f = str(file, what + ".file");
    std::string key = fqn;
    if (const json* k = find(in, "key")) key = str(*k, what + ".key");
    if (embedded_) {
      auto it = embedded_->find(key);
      if (it == embedded_->end()) fail(what + ": no embedded tensor '" + key + "'");
      if (it->second.meta.dtype != meta.dtype || it->second.meta.sizes != meta.sizes)
        fail(what + ": the embedded tensor '" + key + "' is " + format_meta(it->second.meta) +
             " but the graph declares " + format_meta(meta));
      return it->second;
    }
    std::string full = (!f.empty() && f[0] == '/') ? f : dirname_of(path_) + f;
    auto cached = files_.find(full);
    if (cached == files_.end()) {
      cached = files_.emplace(full, read_safetensors(full)).first;
      files_read_.push_back(full);
    }
    auto it = cached->second.find(key);
    if (it == cached->second.end()) fail(what + ": '" + f + "' has no tensor '" + key + "'");
    const WeightData& w = it->second;
    if (w.meta.dtype != meta.dtype || w.meta.sizes != meta.sizes)
      fail(what + ": '" + f + "' holds " + format_meta(w.meta) + " for '" + key +
           "' but the graph declares " + format_meta(meta));
    return w;
  }

  // Returns the node's declared "meta" entries (empty when absent) for checking after inference.
  // Errors found inside a node name it, even when raised by a generic accessor.
  template <typename F>
  std::invoke_result_t<F> within_node(const std::string& name, const std::string& target, F f) {
    try {
      return f();
    } catch (const Error& e) {
      if (!e.node().empty() || e.file() != path_) throw;
      throw Error(path_, e.message(), name, target);
    }
  }

  std::vector<const json*> read_node(const json& n) {
    const std::string name = str(get(n, "name", "a node"), "a node's \"name\"");
    const std::string target =
        normalize_target(str(get(n, "target", "node '" + name + "'"), "\"target\""));
    return within_node(name, target, [&] { return read_node_body(n, name, target); });
  }

  std::vector<const json*> read_node_body(const json& n, const std::string& name,
                                          const std::string& target) {
    static const std::set<std::string> known = {"name", "target",      "args",           "outputs",
                                                "meta", "stack_trace", "nn_module_stack"};
    for (auto it = n.begin(); it != n.end(); ++it)
      if (!known.count(it.key())) fail("unknown key \"" + it.key() + "\"", name, target);
    if (!node_names_.insert(name).second) fail("node name is used twice", name, target);
    Node node;
    node.name = name;
    node.target = target;
    node.schema = find_schema(target);
    if (!node.schema) fail(unknown_op_message(target), name, target);
    std::vector<CallArg> call;
    if (const json* args = find(n, "args")) {
      if (!args->is_array()) fail("\"args\" must be a list", name, target);
      bool keywords = false;
      for (const json& a : *args) {
        if (a.is_object() && a.contains("name")) {
          if (!a.contains("value") || a.size() != 2)
            fail("a keyword argument is {\"name\": ..., \"value\": ...}", name, target);
          keywords = true;
          call.push_back({str(a["name"], "a keyword's name"), read_arg(a["value"], name, target)});
        } else {
          if (keywords) fail("positional argument after a keyword argument", name, target);
          call.push_back({std::string(), read_arg(a, name, target)});
        }
      }
    }
    std::string err;
    if (!bind_args(*node.schema, call, &node.args, &node.given, &err)) fail(err, name, target);

    std::vector<std::string> outs;
    const auto& rets = node.schema->returns;
    const bool list_return = rets.size() == 1 && rets[0].is_list;
    if (const json* o = find(n, "outputs")) {
      if (!o->is_array()) fail("\"outputs\" must be a list of value names", name, target);
      for (const json& e : *o) outs.push_back(str(e, "an output name"));
      if (!list_return && outs.size() != rets.size())
        fail("node lists " + std::to_string(outs.size()) + " outputs but the op returns " +
                 std::to_string(rets.size()),
             name, target);
    } else if (rets.size() == 1 && !list_return) {
      outs.push_back(name);
    } else if (!rets.empty()) {
      fail("the op returns " +
               std::string(list_return ? "a list" : std::to_string(rets.size()) + " tensors") +
               "; name them in \"outputs\"",
           name, target);
    }
    std::vector<const json*> metas;
    if (const json* m = find(n, "meta")) {
      if (!m->is_array() || m->size() != outs.size())
        fail("\"meta\" must be a list with one entry per output", name, target);
      for (const json& e : *m) metas.push_back(&e);
    }
    if (const json* s = find(n, "stack_trace")) node.stack_trace = str(*s, "\"stack_trace\"");
    if (const json* s = find(n, "nn_module_stack"))
      node.nn_module_stack = str(*s, "\"nn_module_stack\"");
    const int32_t index = int32_t(g_.nodes.size());
    for (size_t i = 0; i < outs.size(); ++i) {
      ValueId v = define(outs[i], TensorMeta{}, name, target);
      g_.values[v].producer = index;
      g_.values[v].output_index = int32_t(i);
      node.outputs.push_back(v);
    }
    g_.nodes.push_back(std::move(node));
    return metas;
  }

  ValueId ref(const json& j, const std::string& node, const std::string& op) {
    std::string name = str(j, "a tensor reference");
    auto it = ids_.find(name);
    if (it == ids_.end()) fail("undefined value '" + name + "'", node, op);
    return it->second;
  }

  Arg read_arg(const json& a, const std::string& node, const std::string& op) {
    if (a.is_null()) return Arg::none();
    if (a.is_boolean()) return Arg::of_bool(a.get<bool>());
    if (a.is_number_integer()) return Arg::of_int(integer(a, "an integer argument"));
    if (a.is_number_float()) return Arg::of_float(a.get<double>());
    if (a.is_string()) return Arg::of_string(a.get<std::string>());
    if (!a.is_object() || a.size() != 1)
      fail("cannot read argument " + a.dump() + " (see docs/fxg.md for the encodings)", node, op);
    const std::string k = a.begin().key();
    const json& v = a.begin().value();
    if (k == "ref") return Arg::of_tensor(ref(v, node, op));
    if (k == "refs") {
      if (!v.is_array()) fail("\"refs\" must be a list", node, op);
      std::vector<ValueId> ts;
      for (const json& e : v) ts.push_back(e.is_null() ? kNoValue : ref(e, node, op));
      return Arg::of_tensors(ts);
    }
    if (k == "float") return Arg::of_float(number(v, "\"float\""));
    if (k == "ints") {
      std::vector<SymExpr> syms;
      Arg a = Arg::of_ints(int_list(v, "\"ints\"", &syms));
      a.syms = std::move(syms);
      return a;
    }
    if (k == "sym_int") {
      SymExpr e = sym_int(v, "\"sym_int\"");
      Arg a = Arg::of_int(*evaluate(e, hints_));
      a.syms = {e};
      return a;
    }
    if (k == "floats") {
      if (!v.is_array()) fail("\"floats\" must be a list", node, op);
      std::vector<double> fs;
      for (const json& e : v) fs.push_back(number(e, "a \"floats\" element"));
      return Arg::of_floats(fs);
    }
    if (k == "bools") {
      if (!v.is_array()) fail("\"bools\" must be a list", node, op);
      std::vector<bool> bs;
      for (const json& e : v) {
        if (!e.is_boolean()) fail("\"bools\" elements must be true or false", node, op);
        bs.push_back(e.get<bool>());
      }
      return Arg::of_bools(bs);
    }
    if (k == "dtype") return Arg::of_dtype(dtype(v, "\"dtype\""));
    if (k == "device") {
      std::string s = str(v, "\"device\"");
      Device d;
      std::string type = s.substr(0, s.find(':'));
      if (type == "cuda")
        d.kind = Device::CUDA;
      else if (type != "cpu")
        fail("unknown device '" + s + "'", node, op);
      if (s.size() > type.size()) {
        std::string idx = s.substr(type.size() + 1);
        if (idx.empty() || idx.size() > 4 ||
            idx.find_first_not_of("0123456789") != std::string::npos)
          fail("bad device index in '" + s + "'", node, op);
        d.index = std::stoi(idx);
      }
      return Arg::of_device(d);
    }
    if (k == "memory_format") {
      std::string s = str(v, "\"memory_format\"");
      for (const NamedCode& m : kMemoryFormats)
        if (s == m.name) return Arg::of_memory_format(MemoryFormat(m.code));
      fail("unknown memory format '" + s + "'", node, op);
    }
    if (k == "layout") {
      if (str(v, "\"layout\"") != "strided") fail("only the strided layout is supported", node, op);
      return Arg::of_layout(Layout::Strided);
    }
    fail("unknown argument encoding {\"" + k + "\": ...} (see docs/fxg.md)", node, op);
  }

  std::string path_;
  Graph g_;
  std::map<std::string, ValueId, std::less<>> ids_;
  SymBindings hints_; ///< the declared symbols at their hints
  std::set<std::string> node_names_;
  std::map<std::string, std::map<std::string, WeightData>> files_;
  std::string text_;
  const std::map<std::string, WeightData>* embedded_ = nullptr;
  std::vector<std::string> files_read_;
};

// Contiguous bytes of a weight view (a copy only when the view is strided or offset).
std::vector<std::byte> contiguous_bytes(const WeightData& w) {
  const TensorMeta& m = w.meta;
  const size_t item = dtype_size(m.dtype);
  const int64_t n = m.numel();
  std::vector<std::byte> out(size_t(n) * item);
  if (n == 0) return out;
  const std::byte* base = w.storage->data();
  std::vector<int64_t> idx(m.sizes.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t off = m.storage_offset;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * m.strides[d];
    assert(size_t(off + 1) * item <= w.storage->nbytes() && "weight view outside its storage");
    std::memcpy(out.data() + size_t(k) * item, base + size_t(off) * item, item);
    for (size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < m.sizes[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

} // namespace

Graph import_fxg(const std::string& path, std::vector<std::string>* external_files) {
  FxgReader reader(path);
  Graph g = reader.run();
  if (external_files) *external_files = reader.files_read();
  return g;
}

Graph parse_fxg_text(std::string text, const std::string& source,
                     const std::map<std::string, WeightData>& weights) {
  return FxgReader(source, std::move(text), &weights).run();
}

std::string fxg_to_json(const Graph& g, const FxgWriteOptions& opts) {
  std::string out = "{\n  \"format\": \"fxg\",\n  \"version\": " + std::to_string(kVersion) + ",\n";
  out += "  \"name\": " + ojson(g.name).dump() + ",\n";
  if (g.is_dynamic()) { // "symbols": {"s0": {"min": 1, "max": 4096, "hint": 64}, ...}
    ojson syms = ojson::object();
    for (const SymbolRange& r : g.symbols)
      syms[r.name] = ojson{{"min", r.min},
                           {"max", r.max == INT64_MAX ? ojson(nullptr) : ojson(r.max)},
                           {"hint", r.hint}};
    out += "  \"symbols\": ";
    emit(syms, out);
    out += ",\n";
  }
  out += "  \"inputs\": [";
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const GraphInput& in = g.inputs[i];
    const Value& v = g.values[in.value];
    ojson j;
    j["name"] = v.name;
    j["kind"] = std::string(input_kind_name(in.kind));
    if (in.kind != InputKind::UserInput) j["fqn"] = in.fqn;
    j["dtype"] = std::string(dtype_name(v.meta.dtype));
    j["shape"] = dims_json(v.meta.sizes, v.meta.sym_sizes);
    if (!in.persistent) j["persistent"] = false;
    if (in.kind != InputKind::UserInput) {
      auto w = g.weights.find(in.fqn);
      if (w == g.weights.end())
        throw Error(g.source, "no weights for " + std::string(input_kind_name(in.kind)) + " '" +
                                  in.fqn + "'");
      if (w->second.init) {
        ojson init;
        init["rule"] = w->second.init->rule;
        for (const auto& [k, val] : w->second.init->params) init[k] = float_json(val);
        const InitRule* rule = find_rule(w->second.init->rule);
        if (rule && rule->random) init["seed"] = w->second.init->seed;
        j["init"] = init;
      } else {
        if (opts.weights_file.empty())
          throw Error(g.source, "weight '" + in.fqn +
                                    "' has no init rule; its values need a .safetensors file");
        j["file"] = opts.weights_file;
        j["key"] = in.fqn;
      }
    }
    out += i ? ",\n    " : "\n    ";
    emit(j, out);
  }
  out += g.inputs.empty() ? "],\n  \"nodes\": [" : "\n  ],\n  \"nodes\": [";
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    assert(n.schema && "node without schema");
    ojson j;
    j["name"] = n.name;
    j["target"] = n.target;
    // Positional while the source gave every earlier positional argument; keywords after a gap.
    ojson args = ojson::array();
    bool gap = false;
    for (size_t a = 0; a < n.args.size(); ++a) {
      const ArgSchema& s = n.schema->args[a];
      if (!n.given[a]) {
        gap = true;
        continue;
      }
      if (s.kwarg_only || gap)
        args.push_back(ojson{{"name", s.name}, {"value", arg_json(g, n.args[a])}});
      else
        args.push_back(arg_json(g, n.args[a]));
    }
    j["args"] = args;
    if (!(n.outputs.size() == 1 && g.values[n.outputs[0]].name == n.name)) {
      ojson outs = ojson::array();
      for (ValueId v : n.outputs) outs.push_back(g.values[v].name);
      j["outputs"] = outs;
    }
    ojson metas = ojson::array();
    for (ValueId v : n.outputs) metas.push_back(meta_json(g.values[v].meta));
    j["meta"] = metas;
    if (!n.stack_trace.empty()) j["stack_trace"] = n.stack_trace;
    if (!n.nn_module_stack.empty()) j["nn_module_stack"] = n.nn_module_stack;
    out += i ? ",\n    " : "\n    ";
    emit(j, out);
  }
  out += g.nodes.empty() ? "],\n  \"outputs\": " : "\n  ],\n  \"outputs\": ";
  ojson outs = ojson::array();
  for (ValueId v : g.outputs) outs.push_back(g.values[v].name);
  emit(outs, out);
  if (g.num_mutation_outputs > 0)
    out += ",\n  \"mutation_outputs\": " + std::to_string(g.num_mutation_outputs);
  out += "\n}\n";
  return out;
}

void write_fxg(const Graph& g, const std::string& path) {
  FxgWriteOptions opts;
  std::vector<SafetensorsEntry> entries;
  std::vector<std::vector<std::byte>> keep;
  for (const GraphInput& in : g.inputs) {
    if (in.kind == InputKind::UserInput) continue;
    auto w = g.weights.find(in.fqn);
    if (w == g.weights.end() || w->second.init) continue; // fxg_to_json reports missing weights
    keep.push_back(contiguous_bytes(w->second));
    TensorMeta m = w->second.meta;
    m.strides = contiguous_strides(m.sizes);
    m.storage_offset = 0;
    entries.push_back({in.fqn, m, keep.back().data()});
  }
  const std::string stem = fxg_stem(path);
  if (!entries.empty()) opts.weights_file = stem + ".safetensors";
  std::string text = fxg_to_json(g, opts);
  if (!entries.empty()) write_safetensors(dirname_of(path) + opts.weights_file, entries);
  if (ends_with(path, ".zst")) {
    std::string z(ZSTD_compressBound(text.size()), '\0');
    size_t n = ZSTD_compress(z.data(), z.size(), text.data(), text.size(), 9);
    assert(!ZSTD_isError(n) && "zstd compression into a bound-sized buffer cannot fail");
    z.resize(n);
    text = std::move(z);
  }
  write_file_bytes(path, text);
}

} // namespace fxc
