// The torch.export .pt2 importer: model.json graph, signature and tensor metadata, lazy weights.
#include "frontend/builder.h"
#include "frontend/custom_ops.h"
#include "frontend/diag.h"
#include "frontend/import.h"
#include "frontend/io_util.h"
#include "frontend/meta.h"
#include "frontend/ops.h"
#include "frontend/schema.h"
#include "frontend/tensor_rules.h"

#include <libdeflate.h>
#include <nlohmann/json.hpp>
#include <zip.h>

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sys/stat.h>

namespace fxc {

namespace {

using json = nlohmann::json;

// model.json and the config files are read whole; anything claiming more is hostile.
constexpr uint64_t kMaxJsonBytes = uint64_t(1) << 30;
// Deflate cannot expand more than about 1032:1; a larger claimed ratio is a lie.
constexpr uint64_t kMaxDeflateRatio = 1100;

struct ZipCloser {
  void operator()(zip_t* z) const { zip_discard(z); }
};
using ZipPtr = std::unique_ptr<zip_t, ZipCloser>;
struct ZipFileCloser {
  void operator()(zip_file_t* f) const { zip_fclose(f); }
};
using ZipFilePtr = std::unique_ptr<zip_file_t, ZipFileCloser>;

// `strict` checks every entry's local header against the central directory (at import; the
// lazy weight loaders reopen an archive that already passed).
ZipPtr open_zip(const std::string& path, bool strict = true) {
  int err = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_RDONLY | (strict ? ZIP_CHECKCONS : 0), &err);
  if (z) return ZipPtr(z);
  zip_error_t ze;
  zip_error_init_with_code(&ze, err);
  std::string msg = zip_error_strerror(&ze);
  zip_error_fini(&ze);
  if (err == ZIP_ER_NOZIP) throw Error(path, "not a zip archive (is the file truncated?)");
  throw Error(path, "cannot open archive: " + msg);
}

// One archive handle for the lazy weight loaders of an import (libzip handles are not
// thread-safe: the mutex serialises the reads).
struct SharedArchive {
  std::mutex mu;
  ZipPtr zip;
};

// A mapped entry is used in place only at this alignment (what torch.export writes; kernels
// may load its elements with vector instructions); others are copied out.
constexpr uint64_t kMappedAlignment = 64;

// Little-endian fields of a mapped zip file; false when [at, at + N) is not inside it.
template <typename T> bool zip_field(const MappedFile& f, uint64_t at, T* out) {
  if (at > f.size() || f.size() - at < sizeof(T)) return false;
  T v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= T(uint8_t(f.data()[at + i])) << (8 * i);
  *out = v;
  return true;
}

// Where each entry's data starts in a mapped zip file: the central directory (zip64 included)
// gives each local header, the local header its name and extra lengths. Only what libzip has
// already validated is read (the archive was opened with ZIP_CHECKCONS); anything this reader
// does not follow leaves the entry out, and the loader reads that entry through libzip.
std::map<std::string, uint64_t, std::less<>> zip_data_offsets(const MappedFile& f) {
  std::map<std::string, uint64_t, std::less<>> out;
  const uint64_t size = f.size();
  if (size < 22) return out;
  uint64_t eocd = 0;
  bool found = false;
  for (uint64_t back = 22; back <= std::min<uint64_t>(size, 22 + 65535) && !found; ++back) {
    uint32_t sig = 0;
    if (zip_field(f, size - back, &sig) && sig == 0x06054b50u) {
      eocd = size - back;
      found = true;
    }
  }
  if (!found) return out;
  uint16_t entries16 = 0;
  uint32_t cd_offset32 = 0;
  if (!zip_field(f, eocd + 10, &entries16) || !zip_field(f, eocd + 16, &cd_offset32)) return out;
  uint64_t entries = entries16, cd = cd_offset32;
  if (entries16 == 0xffff || cd_offset32 == 0xffffffffu) { // zip64 end of central directory
    uint32_t sig = 0;
    uint64_t z64 = 0;
    if (eocd < 20 || !zip_field(f, eocd - 20, &sig) || sig != 0x07064b50u ||
        !zip_field(f, eocd - 20 + 8, &z64) || !zip_field(f, z64, &sig) || sig != 0x06064b50u ||
        !zip_field(f, z64 + 32, &entries) || !zip_field(f, z64 + 48, &cd))
      return out;
  }
  uint64_t at = cd;
  for (uint64_t i = 0; i < entries; ++i) {
    uint32_t sig = 0, comp32 = 0, size32 = 0, local32 = 0;
    uint16_t name_len = 0, extra_len = 0, comment_len = 0;
    if (!zip_field(f, at, &sig) || sig != 0x02014b50u || !zip_field(f, at + 20, &comp32) ||
        !zip_field(f, at + 24, &size32) || !zip_field(f, at + 28, &name_len) ||
        !zip_field(f, at + 30, &extra_len) || !zip_field(f, at + 32, &comment_len) ||
        !zip_field(f, at + 42, &local32) || at + 46 + name_len > size)
      return out;
    std::string name(reinterpret_cast<const char*>(f.data() + at + 46), name_len);
    uint64_t local = local32;
    if (local32 == 0xffffffffu) { // zip64 extra field: sizes first where they overflowed
      uint64_t x = at + 46 + name_len, end = x + extra_len;
      bool got = false;
      while (!got && x + 4 <= end) {
        uint16_t id = 0, len = 0;
        if (!zip_field(f, x, &id) || !zip_field(f, x + 2, &len)) return out;
        if (id == 0x0001) {
          uint64_t pos = x + 4 + (size32 == 0xffffffffu ? 8 : 0) + (comp32 == 0xffffffffu ? 8 : 0);
          if (pos + 8 > x + 4 + len || !zip_field(f, pos, &local)) return out;
          got = true;
        }
        x += 4 + uint64_t(len);
      }
      if (!got) return out;
    }
    uint16_t local_name = 0, local_extra = 0;
    if (!zip_field(f, local, &sig) || sig != 0x04034b50u ||
        !zip_field(f, local + 26, &local_name) || !zip_field(f, local + 28, &local_extra))
      return out;
    out.emplace(std::move(name), local + 30 + local_name + local_extra);
    at += 46 + uint64_t(name_len) + extra_len + comment_len;
  }
  return out;
}

// Entry names come from the file: refuse anything that could name a path outside the archive.
bool escapes_archive(const std::string& name) {
  if (name.empty() || name[0] == '/' || name.find('\\') != std::string::npos) return true;
  if (name.find('\0') != std::string::npos || name.find(':') != std::string::npos) return true;
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('/', start);
    if (end == std::string::npos) end = name.size();
    if (name.compare(start, end - start, "..") == 0) return true;
    start = end + 1;
  }
  return false;
}

// Size of an entry's data as far as it can be trusted: the central directory's size, which
// for stored entries cannot exceed the archive and for compressed ones the deflate limit.
struct EntryInfo {
  zip_uint64_t index = 0;
  uint64_t size = 0;
  bool stored = false;         ///< not compressed: the bytes lie in the file as they are
  std::optional<uint32_t> crc; ///< the central directory's CRC-32, when libzip has it
};

std::optional<EntryInfo> find_entry(zip_t* z, const std::string& path, const std::string& name) {
  zip_int64_t idx = zip_name_locate(z, name.c_str(), ZIP_FL_ENC_RAW);
  if (idx < 0) return std::nullopt;
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat_index(z, zip_uint64_t(idx), 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE))
    throw Error(path, "cannot read the size of entry '" + name + "'");
  struct stat fst;
  uint64_t file_size = ::stat(path.c_str(), &fst) == 0 ? uint64_t(fst.st_size) : 0;
  uint64_t comp = (st.valid & ZIP_STAT_COMP_SIZE) ? st.comp_size : st.size;
  bool stored = (st.valid & ZIP_STAT_COMP_METHOD) && st.comp_method == ZIP_CM_STORE;
  if ((stored && (st.size > file_size || st.size != comp)) ||
      (!stored && (comp > file_size || st.size / kMaxDeflateRatio > comp + 1)))
    throw Error(path, "entry '" + name + "' claims " + std::to_string(st.size) +
                          " bytes, more than the archive can hold (is the file truncated?)");
  std::optional<uint32_t> crc;
  if (st.valid & ZIP_STAT_CRC) crc = st.crc;
  return EntryInfo{zip_uint64_t(idx), st.size, stored, crc};
}

[[noreturn]] void entry_read_error(zip_file_t* f, const std::string& path,
                                   const std::string& name) {
  if (zip_error_code_zip(zip_file_get_error(f)) == ZIP_ER_CRC)
    throw Error(path, "entry '" + name + "': CRC-32 mismatch (archive is corrupt)");
  throw Error(path, "cannot read entry '" + name + "': " + zip_file_strerror(f));
}

// Reads exactly n bytes from the start of entry `name` into dst, then the rest of the entry:
// libzip compares the CRC-32 of an entry with the central directory's only once it has been
// read to its end, and a corrupt weight must not run.
void read_entry(zip_t* z, const std::string& path, const std::string& name, zip_uint64_t index,
                std::byte* dst, uint64_t n) {
  ZipFilePtr f(zip_fopen_index(z, index, 0));
  if (!f) throw Error(path, "cannot open entry '" + name + "': " + zip_strerror(z));
  uint64_t got = 0;
  while (got < n) {
    zip_int64_t r = zip_fread(f.get(), dst + got, n - got);
    if (r < 0) entry_read_error(f.get(), path, name);
    if (r == 0) break;
    got += uint64_t(r);
  }
  if (got != n)
    throw Error(path, "entry '" + name + "' is truncated: " + std::to_string(got) + " of " +
                          std::to_string(n) + " bytes");
  std::byte rest[1 << 16];
  for (;;) {
    zip_int64_t r = zip_fread(f.get(), rest, sizeof rest);
    if (r < 0) entry_read_error(f.get(), path, name);
    if (r == 0) break;
  }
}

json read_json_entry(zip_t* z, const std::string& path, const std::string& name) {
  auto e = find_entry(z, path, name);
  if (!e) throw Error(path, "archive has no entry '" + name + "'");
  if (e->size > kMaxJsonBytes) throw Error(path, "entry '" + name + "' is too large for JSON");
  std::string text(size_t(e->size), '\0');
  read_entry(z, path, name, e->index, reinterpret_cast<std::byte*>(text.data()), e->size);
  if (json_nesting_depth(text) > kMaxJsonDepth)
    throw Error(path, "malformed JSON in '" + name + "': nested deeper than " +
                          std::to_string(kMaxJsonDepth) + " levels");
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw Error(path, "malformed JSON in '" + name + "'");
  return j;
}

// Accessors that turn a wrong JSON shape into a diagnostic instead of an exception.
class Reader {
public:
  Reader(std::string path, std::string where) : path_(std::move(path)), where_(std::move(where)) {}

  [[noreturn]] void fail(const std::string& msg, const std::string& node = {},
                         const std::string& op = {}) const {
    // Node errors name the node; the others say which part of the archive is wrong.
    throw Error(path_, node.empty() ? where_ + ": " + msg : msg, node, op);
  }
  const json& get(const json& obj, const char* key, const char* what) const {
    if (!obj.is_object()) fail(std::string(what) + " is not an object");
    auto it = obj.find(key);
    if (it == obj.end()) fail(std::string(what) + " has no '" + key + "'");
    return *it;
  }
  const json* find(const json& obj, const char* key) const {
    if (!obj.is_object()) return nullptr;
    auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
  }
  const json& array(const json& obj, const char* key, const char* what) const {
    const json& a = get(obj, key, what);
    if (!a.is_array()) fail(std::string(what) + "." + key + " is not a list");
    return a;
  }
  std::string str(const json& j, const char* what) const {
    if (!j.is_string()) fail(std::string(what) + " is not a string");
    return j.get<std::string>();
  }
  int64_t integer(const json& j, const char* what) const {
    if (!j.is_number_integer()) fail(std::string(what) + " is not an integer");
    return j.get<int64_t>();
  }
  // {"as_int": n} (weights and other places that are never symbolic).
  int64_t sym_int(const json& j, const char* what) const {
    if (j.is_object() && j.contains("as_int")) return integer(j["as_int"], what);
    if (j.is_number_integer()) return j.get<int64_t>();
    fail(std::string(what) + " is symbolic here, where fxc expects a fixed integer");
  }
  // {"as_int": n} or {"as_expr": {"expr_str": sympy srepr, "hint": {"as_int": n}}}: the value at
  // the hint, and the expression in *expr (left empty for a number or a constant expression).
  int64_t sym_dim(const json& j, const char* what, SymExpr* expr) const {
    if (!j.is_object() || !j.contains("as_expr")) return sym_int(j, what);
    const json& e = get(j, "as_expr", what);
    std::string text = str(get(e, "expr_str", what), what);
    SymExpr x;
    try {
      x = parse_sympy(text);
    } catch (const SymError& err) {
      fail(std::string(what) + ": " + err.what());
    }
    if (x.op == SymExpr::Op::Const) return x.value;
    const json* h = find(e, "hint");
    *expr = x;
    if (!h || h->is_null()) { // data-dependent (nonzero, .item()): its symbols are unbacked
      collect_symbols(x, unbacked_);
      return 0; // a placeholder: no pass reads the size of an unbacked value
    }
    return h->is_object() ? integer(get(*h, "as_int", what), what) : integer(*h, what);
  }
  double floating(const json& j, const char* what) const {
    if (j.is_number()) return j.get<double>();
    if (j.is_string()) {
      std::string s = j.get<std::string>();
      if (s == "Infinity" || s == "inf") return std::numeric_limits<double>::infinity();
      if (s == "-Infinity" || s == "-inf") return -std::numeric_limits<double>::infinity();
      if (s == "NaN" || s == "nan") return std::numeric_limits<double>::quiet_NaN();
    }
    fail(std::string(what) + " is not a number");
  }
  const std::string& path() const { return path_; }
  /// The symbols seen in an expression without a hint: data-dependent sizes.
  const std::set<std::string>& unbacked() const { return unbacked_; }

private:
  std::string path_, where_;
  mutable std::set<std::string> unbacked_;
};

// Symbol hints seen while reading: a bare symbol's value at the export's example inputs.
using HintMap = std::map<std::string, int64_t, std::less<>>;

// sym_dim() that also records the hint of a bare symbol.
int64_t read_dim(const Reader& r, const json& j, const char* what, SymExpr* expr, HintMap* hints) {
  int64_t v = r.sym_dim(j, what, expr);
  if (hints && expr->is_symbol()) (*hints)[expr->name] = v;
  if (!expr->empty() && !hints)
    r.fail(std::string(what) + " is symbolic where fxc expects a fixed size");
  return v;
}

TensorMeta parse_tensor_meta(const Reader& r, const json& j, HintMap* hints = nullptr) {
  TensorMeta m;
  int64_t code = r.integer(r.get(j, "dtype", "tensor meta"), "dtype");
  auto t = dtype_from_torch_code(code);
  if (!t) r.fail("unsupported dtype code " + std::to_string(code));
  m.dtype = *t;
  bool symbolic = false;
  for (const json& s : r.array(j, "sizes", "tensor meta")) {
    SymExpr e;
    m.sizes.push_back(read_dim(r, s, "size", &e, hints));
    if (m.sizes.back() < 0) r.fail("negative size");
    symbolic |= !e.empty();
    m.sym_sizes.push_back(std::move(e));
  }
  if (!symbolic) m.sym_sizes.clear();
  symbolic = false;
  for (const json& s : r.array(j, "strides", "tensor meta")) {
    SymExpr e;
    m.strides.push_back(read_dim(r, s, "stride", &e, hints));
    symbolic |= !e.empty();
    m.sym_strides.push_back(std::move(e));
  }
  if (!symbolic) m.sym_strides.clear();
  if (m.strides.size() != m.sizes.size())
    r.fail("tensor meta has " + std::to_string(m.sizes.size()) + " sizes but " +
           std::to_string(m.strides.size()) + " strides");
  if (const json* off = r.find(j, "storage_offset")) {
    // A view's offset may be symbolic (x[:, s0 // 2:]): its value at the hints is kept. A
    // node's offset is its meta function's (specialize recomputes it at every binding), and a
    // graph input's is 0.
    SymExpr e;
    m.storage_offset = r.sym_dim(*off, "storage_offset", &e);
  }
  if (const json* layout = r.find(j, "layout"); layout && r.integer(*layout, "layout") != 7)
    r.fail("only strided tensors are supported (layout " + layout->dump() + ")");
  if (const json* dev = r.find(j, "device"); dev && !dev->is_null()) {
    std::string type = r.str(r.get(*dev, "type", "device"), "device type");
    if (type == "cuda")
      m.device.kind = Device::CUDA;
    else if (type != "cpu")
      r.fail("unsupported device '" + type + "'");
    if (const json* idx = r.find(*dev, "index"); idx && !idx->is_null())
      m.device.index = int(r.integer(*idx, "device index"));
  }
  return m;
}

Device parse_device(const Reader& r, const json& dev) {
  Device d;
  std::string type = r.str(r.get(dev, "type", "device"), "device type");
  if (type == "cuda")
    d.kind = Device::CUDA;
  else if (type != "cpu")
    r.fail("unsupported device '" + type + "'");
  if (const json* idx = r.find(dev, "index"); idx && !idx->is_null())
    d.index = int(r.integer(*idx, "device index"));
  return d;
}

// "aten.add.Tensor" -> the schema of "aten.add.Scalar" (likewise "aten.where.self" ->
// "aten.where.ScalarOther"), or nullptr.
const OpSchema* scalar_overload(const std::string& target) {
  static const std::pair<const char*, const char*> kSuffixes[] = {{".Tensor", ".Scalar"},
                                                                  {".self", ".ScalarOther"}};
  for (const auto& [from, to] : kSuffixes) {
    std::string f = from;
    if (target.size() > f.size() && target.compare(target.size() - f.size(), f.size(), f) == 0)
      return find_schema(target.substr(0, target.size() - f.size()) + to);
  }
  return nullptr;
}

class Pt2Importer {
public:
  explicit Pt2Importer(std::string path) : path_(std::move(path)), r_(path_, "model.json") {}

  Graph run() {
    ZipPtr z = open_zip(path_);
    std::string model_entry = locate_model(z.get());
    top_ = model_entry.substr(0, model_entry.size() - std::string("models/model.json").size());
    json model = read_json_entry(z.get(), path_, model_entry);
    g_.source = path_;
    g_.name = stem_of(path_, ".pt2");
    try {
      const json& gm = r_.get(model, "graph_module", "model.json");
      const json& graph = r_.get(gm, "graph", "graph_module");
      const json& sig = r_.get(gm, "signature", "graph_module");
      tensor_values_ = &r_.get(graph, "tensor_values", "graph");
      if (!tensor_values_->is_object()) r_.fail("graph.tensor_values is not an object");
      read_sym_int_values(graph);
      read_inputs(graph, sig);
      for (const json& n : r_.array(graph, "nodes", "graph")) read_node(n);
      read_outputs(graph, sig);
      read_range_constraints(model);
    } catch (const json::exception& e) {
      r_.fail(std::string("unexpected JSON structure: ") + e.what());
    }
    read_weights(z.get());
    return std::move(g_);
  }

private:
  std::string locate_model(zip_t* z) {
    zip_int64_t n = zip_get_num_entries(z, 0);
    std::string best;
    for (zip_int64_t i = 0; i < n; ++i) {
      const char* c = zip_get_name(z, zip_uint64_t(i), ZIP_FL_ENC_RAW);
      if (!c) throw Error(path_, "cannot read the name of entry " + std::to_string(i));
      std::string name = c;
      if (escapes_archive(name))
        throw Error(path_, "entry name escapes the archive: '" + name + "'");
      if (name.back() == '/') continue; // directories
      const std::string suffix = "models/model.json";
      bool match = name == suffix ||
                   (name.size() > suffix.size() &&
                    name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0 &&
                    name[name.size() - suffix.size() - 1] == '/');
      if (match && (best.empty() || name.size() < best.size() ||
                    (name.size() == best.size() && name < best)))
        best = name;
    }
    if (best.empty())
      throw Error(path_, "not a torch.export archive: no '*/models/model.json' entry");
    return best;
  }

  // sym_int_values: the expression of every symbolic int the graph computes (sym_size.int,
  // operator.mul, ...), in terms of the input symbols; arguments name them.
  void read_sym_int_values(const json& graph) {
    const json* v = r_.find(graph, "sym_int_values");
    if (!v || v->is_null()) return;
    if (!v->is_object()) r_.fail("graph.sym_int_values is not an object");
    for (auto it = v->begin(); it != v->end(); ++it) {
      SymExpr e;
      std::string what = "sym_int_values['" + it.key() + "']";
      int64_t hint = read_dim(r_, *it, what.c_str(), &e, &hints_);
      if (e.empty()) e = SymExpr::constant(hint);
      sym_values_[it.key()] = {hint, e};
    }
  }

  // range_constraints: {"s0": {"min_val": 1, "max_val": 4096}}; the graph's symbols are those its
  // sizes and arguments use, each with its range and hint.
  void read_range_constraints(const json& model) {
    std::set<std::string> used;
    auto note = [&](const std::vector<SymExpr>& es) {
      for (const SymExpr& e : es) collect_symbols(e, used);
    };
    for (const Value& v : g_.values) {
      note(v.meta.sym_sizes);
      note(v.meta.sym_strides);
    }
    for (const Node& n : g_.nodes)
      for (const Arg& a : n.args) note(a.syms);
    if (used.empty()) return;
    const json* rc = r_.find(model, "range_constraints");
    auto bound = [&](const json* b, int64_t dflt, const std::string& what) -> int64_t {
      if (!b || b->is_null()) return dflt;
      if (b->is_number_integer()) return b->get<int64_t>();
      if (b->is_number_float() && std::isinf(b->get<double>())) return dflt;
      if (b->is_string()) {
        std::string s = b->get<std::string>();
        if (s == "Infinity" || s == "inf" || s == "int_oo" || s == "oo") return dflt;
      }
      r_.fail(what + " is not an integer bound: " + b->dump());
    };
    for (const std::string& name : used) {
      SymbolRange r;
      r.name = name;
      auto h = hints_.find(name);
      r.unbacked = r_.unbacked().count(name) != 0;
      if (h == hints_.end() && !r.unbacked)
        r_.fail("symbol '" + name + "' has no hint (it never appears as a size of its own)");
      r.hint = r.unbacked ? 0 : h->second;
      r.min = 0;
      if (rc && rc->is_object())
        if (auto it = rc->find(name); it != rc->end()) {
          r.min = bound(r_.find(*it, "min_val"), 0, "range_constraints['" + name + "'].min_val");
          r.max = bound(r_.find(*it, "max_val"), INT64_MAX,
                        "range_constraints['" + name + "'].max_val");
        }
      r.min = std::max<int64_t>(r.min, 0);
      if (r.unbacked) r.hint = r.min;
      if (r.hint < r.min || r.hint > r.max)
        r_.fail("symbol '" + name + "': its hint " + std::to_string(r.hint) + " is outside " +
                format_range(r));
      g_.symbols.push_back(r);
    }
  }

  // Nodes that compute symbolic ints (sym_size.int, operator.mul on sizes) or assert on them:
  // their values are the expressions of sym_int_values, which arguments use directly.
  bool is_symbolic_node(const std::string& raw, const std::string& target) const {
    static const char* const kSizeOps[] = {"aten.sym_size.int", "aten.sym_stride.int",
                                           "aten.sym_numel.default",
                                           "aten.sym_storage_offset.default"};
    for (const char* op : kSizeOps)
      if (target == op) return true;
    return raw.rfind("_operator.", 0) == 0 || raw.rfind("operator.", 0) == 0 ||
           raw.rfind("math.", 0) == 0 || raw.rfind("torch.sym_", 0) == 0 ||
           raw.rfind("torch._sym_", 0) == 0 || target == "aten._assert_scalar.default" ||
           target == "aten.sym_constrain_range_for_size.default" ||
           target == "aten.sym_constrain_range.default";
  }

  void read_symbolic_node(const json& n, const std::string& name, const std::string& target) {
    if (target == "aten._assert_scalar.default" ||
        target.find("sym_constrain_range") != std::string::npos) {
      std::string cond;
      for (const json& in : r_.array(n, "inputs", "node"))
        cond += (cond.empty() ? "" : ", ") + r_.get(in, "arg", "node input").dump();
      g_.sym_asserts.push_back({name, target + "(" + cond + ")"});
      return;
    }
    for (const json& o : r_.array(n, "outputs", "node")) {
      if (const json* sb = r_.find(o, "as_sym_bool")) { // a condition: asserts, torch.cond
        if (const json* nm = r_.find(*sb, "as_name"); nm && nm->is_string())
          sym_bools_[nm->get<std::string>()] = &n;
        continue;
      }
      if (r_.find(o, "as_sym_float")) continue; // feeds asserts only
      const json* si = r_.find(o, "as_sym_int");
      if (!si)
        r_.fail("output " + o.dump() + " of a size computation is not a symbolic int", name,
                target);
      std::string out = r_.str(r_.get(*si, "as_name", "output"), "output name");
      if (!sym_values_.count(out))
        r_.fail("symbolic int '" + out + "' has no sym_int_values entry", name, target);
    }
  }

  // An as_sym_int argument: {"as_name": value in sym_int_values} or {"as_int": n}.
  int64_t sym_arg(const json& j, SymExpr* expr, const std::string& node, const std::string& op) {
    if (const json* nm = r_.find(j, "as_name")) {
      std::string name = r_.str(*nm, "symbolic int name");
      auto it = sym_values_.find(name);
      if (it == sym_values_.end()) r_.fail("undefined symbolic int '" + name + "'", node, op);
      if (it->second.second.op != SymExpr::Op::Const) *expr = it->second.second;
      return it->second.first;
    }
    return r_.sym_int(j, "symbolic int");
  }

  // The metadata torch.export recorded for value `name`; `display` names it in errors.
  TensorMeta recorded_meta(const std::string& name, const std::string& display = {}) {
    auto it = tensor_values_->find(name);
    if (it == tensor_values_->end()) r_.fail("no tensor_values entry for '" + name + "'");
    TensorMeta m = parse_tensor_meta(r_, *it, &hints_);
    int64_t bytes;
    if (!view_extent_bytes(m.sizes, m.strides, m.storage_offset, int64_t(dtype_size(m.dtype)),
                           &bytes))
      throw Error(path_, "size of '" + (display.empty() ? name : display) + "' overflows");
    return m;
  }

  ValueId define(const std::string& name, TensorMeta meta, const std::string& node = {},
                 const std::string& op = {}) {
    if (name.empty()) r_.fail("value with an empty name", node, op);
    if (!defined_.insert(name).second) r_.fail("value '" + name + "' is defined twice", node, op);
    ValueId v =
        g_.add_value(prefix_.empty() ? name : unique_name(g_, prefix_ + name), std::move(meta));
    ids_[name] = v; // a subgraph's name shadows the enclosing graph's
    return v;
  }

  void read_inputs(const json& graph, const json& sig) {
    // The signature says what each placeholder is; graph.inputs gives their order.
    struct Spec {
      InputKind kind;
      std::string fqn;
      bool persistent = true;
    };
    std::map<std::string, Spec> specs;
    size_t constants = 0;
    for (const json& s : r_.array(sig, "input_specs", "signature")) {
      if (!s.is_object() || s.size() != 1) r_.fail("input spec is not a one-key object");
      const std::string kind = s.begin().key();
      const json& body = s.begin().value();
      Spec spec;
      std::string name;
      if (kind == "user_input") {
        const json& arg = r_.get(body, "arg", "user_input");
        const json* t = r_.find(arg, "as_tensor");
        if (!t)
          r_.fail("user input " + arg.dump() +
                  " is not a tensor; only tensor inputs are supported");
        name = r_.str(r_.get(*t, "name", "user_input"), "input name");
        spec = {InputKind::UserInput, name};
      } else if (kind == "parameter" || kind == "buffer" || kind == "tensor_constant") {
        name =
            r_.str(r_.get(r_.get(body, "arg", kind.c_str()), "name", kind.c_str()), "input name");
        const char* fqn_key = kind == "parameter" ? "parameter_name"
                              : kind == "buffer"  ? "buffer_name"
                                                  : "tensor_constant_name";
        spec.kind = kind == "parameter" ? InputKind::Parameter
                    : kind == "buffer"  ? InputKind::Buffer
                                        : InputKind::Constant;
        spec.fqn = r_.str(r_.get(body, fqn_key, kind.c_str()), fqn_key);
        if (const json* p = r_.find(body, "persistent"); p && p->is_boolean())
          spec.persistent = p->get<bool>();
      } else if (kind == "constant_input") {
        // A Python number, bool, string or None the module took (forward(x, scale=0.5)): the
        // export baked its value into the graph, whose input for it no node reads.
        ++constants;
        continue;
      } else {
        r_.fail("input kind '" + kind + "' is not supported");
      }
      specs[name] = spec;
    }
    const json& inputs = r_.array(graph, "inputs", "graph");
    if (inputs.size() != specs.size() + constants)
      r_.fail("graph has " + std::to_string(inputs.size()) +
              " inputs but the signature describes " + std::to_string(specs.size() + constants));
    for (const json& in : inputs) {
      const json* t = r_.find(in, "as_tensor");
      if (!t && constants > 0 && in.is_object() && in.size() == 1 &&
          in.begin().key() != "as_tensors" && in.begin().key() != "as_sym_int")
        continue; // a constant input's value
      if (!t) r_.fail("graph input " + in.dump() + " is not a tensor");
      std::string name = r_.str(r_.get(*t, "name", "graph input"), "input name");
      auto it = specs.find(name);
      if (it == specs.end()) r_.fail("graph input '" + name + "' has no input spec");
      GraphInput gi;
      gi.value = define(name, recorded_meta(name, it->second.fqn));
      gi.kind = it->second.kind;
      gi.fqn = it->second.fqn;
      gi.persistent = it->second.persistent;
      g_.inputs.push_back(gi);
    }
  }

  ValueId use(const std::string& name, const std::string& node, const std::string& op) {
    auto it = ids_.find(name);
    if (it == ids_.end()) r_.fail("undefined value '" + name + "'", node, op);
    return it->second;
  }

  std::string tensor_name(const json& t, const std::string& node, const std::string& op) {
    const json* n = r_.find(t, "name");
    if (!n || !n->is_string()) r_.fail("tensor reference " + t.dump() + " has no name", node, op);
    return n->get<std::string>();
  }

  Arg convert_arg(const json& arg, const std::string& argname, const std::string& node,
                  const std::string& op) {
    if (!arg.is_object() || arg.size() != 1)
      r_.fail("argument '" + argname + "' is not a one-key object", node, op);
    const std::string k = arg.begin().key();
    const json& v = arg.begin().value();
    auto bad = [&](const std::string& why) -> Arg {
      r_.fail("argument '" + argname + "': " + why, node, op);
    };
    auto ints = [&](const json& list) {
      if (!list.is_array()) bad(k + " is not a list");
      std::vector<int64_t> out;
      for (const json& e : list) out.push_back(r_.sym_int(e, "list element"));
      return out;
    };
    if (k == "as_none") return Arg::none();
    if (k == "as_tensor") return Arg::of_tensor(use(tensor_name(v, node, op), node, op));
    if (k == "as_tensors") {
      if (!v.is_array()) return bad("as_tensors is not a list");
      std::vector<ValueId> ts;
      for (const json& t : v) ts.push_back(use(tensor_name(t, node, op), node, op));
      return Arg::of_tensors(ts);
    }
    if (k == "as_optional_tensors") {
      if (!v.is_array()) return bad("as_optional_tensors is not a list");
      std::vector<ValueId> ts;
      for (const json& t : v) {
        if (const json* tt = r_.find(t, "as_tensor"))
          ts.push_back(use(tensor_name(*tt, node, op), node, op));
        else if (r_.find(t, "as_none"))
          ts.push_back(kNoValue);
        else
          return bad("optional tensor " + t.dump() + " is neither a tensor nor None");
      }
      return Arg::of_tensors(ts);
    }
    if (k == "as_int") return Arg::of_int(r_.sym_int(v, argname.c_str()));
    if (k == "as_ints") return Arg::of_ints(ints(v));
    if (k == "as_sym_int") {
      SymExpr e;
      Arg a = Arg::of_int(sym_arg(v, &e, node, op));
      if (!e.empty()) a.syms = {e};
      return a;
    }
    if (k == "as_sym_ints") {
      if (!v.is_array()) return bad(k + " is not a list");
      std::vector<int64_t> vals;
      std::vector<SymExpr> syms;
      bool symbolic = false;
      for (const json& e : v) {
        SymExpr x;
        vals.push_back(sym_arg(e, &x, node, op));
        symbolic |= !x.empty();
        syms.push_back(std::move(x));
      }
      Arg a = Arg::of_ints(vals);
      if (symbolic) a.syms = std::move(syms);
      return a;
    }
    if (k == "as_float") return Arg::of_float(r_.floating(v, argname.c_str()));
    if (k == "as_floats") {
      if (!v.is_array()) return bad("as_floats is not a list");
      std::vector<double> fs;
      for (const json& e : v) fs.push_back(r_.floating(e, argname.c_str()));
      return Arg::of_floats(fs);
    }
    if (k == "as_bool") {
      if (!v.is_boolean()) return bad("as_bool is not a boolean");
      return Arg::of_bool(v.get<bool>());
    }
    if (k == "as_bools") {
      if (!v.is_array()) return bad("as_bools is not a list");
      std::vector<bool> bs;
      for (const json& e : v) {
        if (!e.is_boolean()) return bad("as_bools element is not a boolean");
        bs.push_back(e.get<bool>());
      }
      return Arg::of_bools(bs);
    }
    if (k == "as_string") return Arg::of_string(r_.str(v, argname.c_str()));
    if (k == "as_scalar_type") {
      auto t = dtype_from_torch_code(r_.integer(v, argname.c_str()));
      if (!t) return bad("unsupported dtype code " + v.dump());
      return Arg::of_dtype(*t);
    }
    if (k == "as_memory_format") {
      int64_t c = r_.integer(v, argname.c_str());
      if (c < 1 || c > 4) return bad("unsupported memory format code " + v.dump());
      return Arg::of_memory_format(MemoryFormat(c));
    }
    if (k == "as_layout") {
      if (r_.integer(v, argname.c_str()) != 7) return bad("only the strided layout is supported");
      return Arg::of_layout(Layout::Strided);
    }
    if (k == "as_device") return Arg::of_device(parse_device(r_, v));
    return bad("'" + k + "' arguments are not supported");
  }

  void read_node(const json& n) {
    const std::string name = r_.str(r_.get(n, "name", "node"), "node name");
    const std::string raw_target = r_.str(r_.get(n, "target", "node"), "node target");
    const std::string target(canonical_target(normalize_target(raw_target)));
    // Errors found inside a node name it, even when raised by a generic accessor.
    try {
      if (is_symbolic_node(raw_target, target))
        read_symbolic_node(n, name, target);
      else if (raw_target == "torch.ops.higher_order.wrap_with_set_grad_enabled" ||
               raw_target == "torch.ops.higher_order.wrap_with_autocast")
        read_region(n, name, raw_target);
      else if (raw_target == "torch.ops.higher_order.cond")
        read_cond(n, name, raw_target);
      else
        read_node_body(n, name, target);
    } catch (const Error& e) {
      if (!e.node().empty() || e.file() != path_) throw;
      std::string msg = e.message();
      if (msg.rfind("model.json: ", 0) == 0) msg = msg.substr(12);
      throw Error(path_, msg, name, target);
    }
  }

  /// A region of a default (pre-dispatch) export that ran under torch.no_grad() or
  /// torch.enable_grad() (wrap_with_set_grad_enabled(enabled, subgraph, *operands)) or under a
  /// disabled torch.autocast (wrap_with_autocast(device_type, dtype, enabled, cache_enabled,
  /// subgraph, *operands)): the subgraph's nodes are read in its place, its inputs bound to the
  /// operands, its outputs giving the node's (as run_decompositions() inlines them). Results of
  /// a no_grad region are detached, so that train mode takes no gradient through them. An
  /// enabled autocast region changes dtypes inside: the core export applies it.
  void read_region(const json& n, const std::string& name, const std::string& raw_target) {
    const json& ins = r_.array(n, "inputs", "node");
    size_t gi = 0;
    while (gi < ins.size() && !r_.get(ins[gi], "arg", "node input").contains("as_graph")) ++gi;
    if (gi == ins.size()) r_.fail("the region has no subgraph argument");
    const bool grad = raw_target.find("set_grad_enabled") != std::string::npos;
    const size_t fi = grad ? 0 : 2; // the 'enabled' argument
    if (fi >= gi) r_.fail("the region's arguments are not (flags..., subgraph, operands...)");
    const json& flag = r_.get(ins[fi], "arg", "node input");
    const json* b = r_.find(flag, "as_bool");
    if (!b || !b->is_boolean()) r_.fail("the region's 'enabled' flag is not a bool");
    const bool enabled = b->get<bool>();
    if (!grad && enabled)
      r_.fail("an enabled torch.autocast region changes dtypes inside; fxc reads it from the core "
              "export (ExportedProgram.run_decompositions()), which applies it");
    std::vector<const json*> operands;
    for (size_t i = gi + 1; i < ins.size(); ++i)
      operands.push_back(&r_.get(ins[i], "arg", "node input"));
    const size_t first = g_.nodes.size();
    std::vector<ValueId> results =
        inline_graph(r_.get(ins[gi], "arg", "node input"), operands, name, raw_target, "");
    if (!grad) // a disabled autocast region: --dtype's conversion leaves its nodes alone
      for (size_t i = first; i < g_.nodes.size(); ++i)
        g_.autocast_disabled.insert(g_.nodes[i].name);
    if (grad && !enabled) // torch.no_grad(): no gradient flows back through the region
      for (ValueId& v : results)
        v = add_node1(g_, "aten.detach.default", {{"", Arg::of_tensor(v)}}, name + "_detach");
    bind_results(n, results, name, raw_target);
  }

  /// torch.cond(pred, true_fn, false_fn, operands) (higher_order.cond(pred, true_graph,
  /// false_graph, operands)): both branches are read in the node's place, their inputs bound to
  /// the operands, and each result selects between them with `where(pred, true, false)`. Both
  /// branches are functional and give results of the same shapes and dtypes (torch.cond checks
  /// that), so the select computes what the taken branch does; the branch not taken runs too (its
  /// values are discarded: a NaN there never reaches the result), and train mode's gradient of a
  /// select reaches only the taken branch, as PyTorch's autograd of cond does. A predicate that is
  /// a constant bool reads the taken branch alone.
  void read_cond(const json& n, const std::string& name, const std::string& raw_target) {
    const json& ins = r_.array(n, "inputs", "node");
    if (ins.size() != 4)
      r_.fail("torch.cond takes (pred, true_fn, false_fn, operands); the node passes " +
              std::to_string(ins.size()) + " arguments");
    const json& pred = r_.get(ins[0], "arg", "node input");
    std::vector<const json*> operands;
    const json& ops = r_.get(ins[3], "arg", "node input");
    if (const json* ts = r_.find(ops, "as_tensors"); ts && ts->is_array()) {
      for (const json& t : *ts) operands.push_back(&t);
    } else {
      r_.fail("torch.cond's operands are " + ops.dump().substr(0, 200) +
              "; fxc reads a list of tensors");
    }
    // Operands are plain {"name": ...} entries of the list: give them the as_tensor form.
    std::vector<json> wrapped;
    wrapped.reserve(operands.size());
    for (const json* o : operands) wrapped.push_back(json{{"as_tensor", *o}});
    std::vector<const json*> args;
    for (const json& w : wrapped) args.push_back(&w);
    const json& tg = r_.get(ins[1], "arg", "node input");
    const json& fg = r_.get(ins[2], "arg", "node input");
    if (const json* b = r_.find(pred, "as_bool"); b && b->is_boolean()) {
      bind_results(n, inline_graph(b->get<bool>() ? tg : fg, args, name, raw_target, name + "_"),
                   name, raw_target);
      return;
    }
    const json* pt = r_.find(pred, "as_tensor");
    const json* ps = r_.find(pred, "as_sym_bool");
    if (!pt && !ps)
      r_.fail("torch.cond's predicate is " + pred.dump().substr(0, 200) +
              "; fxc reads a bool tensor, a condition on sizes or a constant");
    Device device; // a condition on sizes is computed where the operands are
    if (!operands.empty())
      device = g_.values[size_t(use(tensor_name(*operands[0], name, raw_target), name, raw_target))]
                   .meta.device;
    const ValueId p = pt ? use(tensor_name(*pt, name, raw_target), name, raw_target)
                         : sym_bool_tensor(*ps, device, name, raw_target);
    const TensorMeta& pm = g_.values[size_t(p)].meta;
    if (pm.dtype != DType::Bool || pm.numel() != 1)
      r_.fail("torch.cond's predicate '" + g_.values[size_t(p)].name +
              "' is not a bool tensor of one element");
    std::vector<ValueId> t = inline_graph(tg, args, name, raw_target, name + "_true_");
    std::vector<ValueId> f = inline_graph(fg, args, name, raw_target, name + "_false_");
    if (t.size() != f.size())
      r_.fail("torch.cond's branches give " + std::to_string(t.size()) + " and " +
              std::to_string(f.size()) + " results");
    std::vector<ValueId> results;
    for (size_t i = 0; i < t.size(); ++i) {
      const TensorMeta& a = g_.values[size_t(t[i])].meta;
      const TensorMeta& b = g_.values[size_t(f[i])].meta;
      if (a.sizes != b.sizes || a.dtype != b.dtype)
        r_.fail("torch.cond's branches give result " + std::to_string(i) + " as " + format_meta(a) +
                " and " + format_meta(b));
      ValueId r = add_node1(
          g_, "aten.where.self",
          {{"", Arg::of_tensor(p)}, {"", Arg::of_tensor(t[i])}, {"", Arg::of_tensor(f[i])}}, name);
      if (!a.sym_sizes.empty()) { // the branches' symbolic sizes, contiguous
        TensorMeta& m = g_.values[size_t(r)].meta;
        m.sym_sizes = g_.values[size_t(t[i])].meta.sym_sizes;
        m.sym_strides = symbolic_contiguous_strides(m.sizes, m.sym_sizes);
      }
      results.push_back(r);
    }
    bind_results(n, results, name, raw_target);
  }

  /// A condition on sizes (an as_sym_bool argument: `x.shape[0] > 4`, from _operator.gt and its
  /// kin over sym_size values) as a 0-dim bool tensor: the compared sizes become scalar_tensor
  /// nodes with symbolic arguments, so that the condition is evaluated at each binding.
  ValueId sym_bool_tensor(const json& sb, const Device& device, const std::string& name,
                          const std::string& raw_target) {
    if (const json* b = r_.find(sb, "as_bool"); b && b->is_boolean())
      return add_node1(g_, "aten.scalar_tensor.default",
                       {{"", Arg::of_bool(b->get<bool>())},
                        {"dtype", Arg::of_dtype(DType::Bool)},
                        {"device", Arg::of_device(device)}},
                       name + "_pred");
    const json* nm = r_.find(sb, "as_name");
    if (!nm || !nm->is_string()) r_.fail("symbolic bool " + sb.dump() + " has no name");
    auto it = sym_bools_.find(nm->get<std::string>());
    if (it == sym_bools_.end())
      r_.fail("symbolic bool '" + nm->get<std::string>() + "' is computed by no node");
    const json& n = *it->second;
    const std::string op = r_.str(r_.get(n, "target", "node"), "node target");
    const json& ins = r_.array(n, "inputs", "node");
    std::vector<ValueId> args;
    for (const json& in : ins) {
      const json& a = r_.get(in, "arg", "node input");
      if (r_.find(a, "as_sym_bool") || r_.find(a, "as_bool")) {
        const json* inner = r_.find(a, "as_sym_bool");
        args.push_back(sym_bool_tensor(inner ? *inner : a, device, name, raw_target));
        continue;
      }
      SymExpr e;
      Arg v;
      if (const json* si = r_.find(a, "as_sym_int"))
        v = Arg::of_int(sym_arg(*si, &e, name, raw_target));
      else if (const json* c = r_.find(a, "as_int"))
        v = Arg::of_int(r_.integer(*c, "condition operand"));
      else
        r_.fail("condition '" + nm->get<std::string>() + "' (" + op + ") compares " +
                a.dump().substr(0, 120) + "; fxc reads integer sizes and constants");
      if (!e.empty()) v.syms = {e};
      args.push_back(add_node1(
          g_, "aten.scalar_tensor.default",
          {{"", v}, {"dtype", Arg::of_dtype(DType::I64)}, {"device", Arg::of_device(device)}},
          name + "_size"));
    }
    static const std::pair<const char*, const char*> kOps[] = {
        {"gt", "aten.gt.Tensor"},
        {"lt", "aten.lt.Tensor"},
        {"ge", "aten.ge.Tensor"},
        {"le", "aten.le.Tensor"},
        {"eq", "aten.eq.Tensor"},
        {"ne", "aten.ne.Tensor"},
        {"and_", "aten.logical_and.default"},
        {"or_", "aten.logical_or.default"},
        {"sym_not", "aten.logical_not.default"}};
    const std::string base = op.substr(op.rfind('.') + 1);
    for (const auto& [py, aten] : kOps) {
      if (base != py) continue;
      const size_t want = base == "sym_not" ? 1 : 2;
      if (args.size() != want)
        r_.fail("condition '" + nm->get<std::string>() + "' (" + op + ") has " +
                std::to_string(args.size()) + " operands");
      std::vector<CallArg> call;
      for (ValueId v : args) call.push_back({"", Arg::of_tensor(v)});
      return add_node1(g_, aten, std::move(call), name + "_pred");
    }
    r_.fail("condition '" + nm->get<std::string>() + "' is computed by " + op +
            ", which fxc does not read as a torch.cond predicate");
  }

  /// Reads the subgraph of an `as_graph` argument in the current node's place: its inputs are
  /// bound to `operands` (tensor arguments), its nodes added to the graph (value and node names
  /// prefixed by `prefix`, made unique), and its results returned. The names it defines are
  /// scoped to it.
  std::vector<ValueId> inline_graph(const json& graph_arg, const std::vector<const json*>& operands,
                                    const std::string& name, const std::string& raw_target,
                                    const std::string& prefix) {
    const json& sub =
        r_.get(r_.get(graph_arg, "as_graph", "subgraph argument"), "graph", "subgraph");
    const json& sub_inputs = r_.array(sub, "inputs", "subgraph");
    if (sub_inputs.size() != operands.size())
      r_.fail("the subgraph takes " + std::to_string(sub_inputs.size()) +
              " inputs but the node passes " + std::to_string(operands.size()));
    std::vector<std::pair<std::string, ValueId>> bound;
    for (size_t i = 0; i < sub_inputs.size(); ++i) {
      const json* t = r_.find(*operands[i], "as_tensor");
      const json* st = r_.find(sub_inputs[i], "as_tensor");
      if (!t || !st) r_.fail("a subgraph operand that is not a tensor is not supported");
      bound.push_back({tensor_name(*st, name, raw_target),
                       use(tensor_name(*t, name, raw_target), name, raw_target)});
    }
    // The subgraph's names (its inputs name the operands) are visible only while it is read.
    auto saved_ids = ids_;
    std::set<std::string, std::less<>> saved_defined;
    std::swap(saved_defined, defined_);
    const std::string saved_prefix = prefix_;
    prefix_ += prefix;
    for (const auto& [inner, v] : bound) {
      ids_[inner] = v;
      defined_.insert(inner);
    }
    const json* saved_values = tensor_values_;
    tensor_values_ = &r_.get(sub, "tensor_values", "subgraph");
    if (!tensor_values_->is_object()) r_.fail("the subgraph's tensor_values is not an object");
    read_sym_int_values(sub);
    for (const json& inner : r_.array(sub, "nodes", "subgraph")) read_node(inner);
    std::vector<ValueId> results;
    for (const json& o : r_.array(sub, "outputs", "subgraph")) {
      const json* t = r_.find(o, "as_tensor");
      if (!t) r_.fail("a subgraph result that is not a tensor is not supported");
      results.push_back(use(tensor_name(*t, name, raw_target), name, raw_target));
    }
    tensor_values_ = saved_values;
    prefix_ = saved_prefix;
    ids_ = std::move(saved_ids);
    defined_ = std::move(saved_defined);
    return results;
  }

  // Names the results of a node that stands for a subgraph (its outputs, in order).
  void bind_results(const json& n, const std::vector<ValueId>& results, const std::string& name,
                    const std::string& raw_target) {
    std::vector<std::string> outs;
    for (const json& o : r_.array(n, "outputs", "node")) {
      if (const json* t = r_.find(o, "as_tensor"))
        outs.push_back(tensor_name(*t, name, raw_target));
      else if (const json* ts = r_.find(o, "as_tensors"); ts && ts->is_array())
        for (const json& t : *ts) outs.push_back(tensor_name(t, name, raw_target));
      else
        r_.fail("a subgraph result that is not a tensor is not supported");
    }
    if (outs.size() != results.size())
      r_.fail("the subgraph gives " + std::to_string(results.size()) +
              " results but the node has " + std::to_string(outs.size()) + " outputs");
    for (size_t i = 0; i < outs.size(); ++i) {
      if (!defined_.insert(outs[i]).second) r_.fail("value '" + outs[i] + "' is defined twice");
      ids_[outs[i]] = results[i];
    }
  }

  /// Replaces each Python number that `call` passes for a Tensor parameter of a pointwise op by
  /// a scalar_tensor node of the op's result type (PyTorch's result_type with the number as a
  /// wrapped number), on the device of the op's first tensor. Returns whether it replaced any.
  bool wrap_numbers(const OpSchema& schema, std::vector<CallArg>& call, const std::string& name) {
    if (!target_has_tag(schema.target, OpTag::Pointwise)) return false;
    std::vector<std::pair<size_t, const ArgSchema*>> numbers;
    ResultType rt;
    std::optional<Device> device;
    size_t pos = 0;
    for (size_t i = 0; i < call.size(); ++i) {
      const ArgSchema* param = nullptr;
      if (call[i].name.empty()) {
        while (pos < schema.args.size() && schema.args[pos].kwarg_only) ++pos;
        if (pos < schema.args.size()) param = &schema.args[pos++];
      } else if (int k = schema.index_of(call[i].name); k >= 0) {
        param = &schema.args[size_t(k)];
      }
      if (!param || param->type != ArgType::Tensor || param->is_list) continue;
      const Arg& a = call[i].value;
      if (a.kind == Arg::Kind::Tensor && a.tensor >= 0 && size_t(a.tensor) < g_.values.size()) {
        const TensorMeta& m = g_.values[size_t(a.tensor)].meta;
        rt.add_tensor(m);
        if (!device) device = m.device;
      } else if (a.kind == Arg::Kind::Int || a.kind == Arg::Kind::Float ||
                 a.kind == Arg::Kind::Bool) {
        rt.add_number(a);
        numbers.push_back({i, param});
      }
    }
    if (numbers.empty()) return false;
    const DType dt = rt.result();
    for (const auto& [i, param] : numbers) {
      std::string hint = "_wrapped_" + name + "_" + param->name;
      ValueId v = add_node1(g_, "aten.scalar_tensor.default",
                            {{"", call[i].value},
                             {"dtype", Arg::of_dtype(dt)},
                             {"device", Arg::of_device(device.value_or(Device{}))}},
                            hint);
      ids_.emplace(g_.values[size_t(v)].name, v);
      call[i].value = Arg::of_tensor(v);
    }
    return true;
  }

  void read_node_body(const json& n, const std::string& name, const std::string& target) {
    Node node;
    node.name = prefix_.empty() ? name : unique_name(g_, prefix_ + name);
    node.target = target;
    node.schema = find_schema(target);
    if (!node.schema) r_.fail(unknown_op_message(target), name, target);
    std::vector<CallArg> call;
    for (const json& in : r_.array(n, "inputs", "node")) {
      const std::string argname = r_.str(r_.get(in, "name", "node input"), "argument name");
      int64_t kind = 1;
      if (const json* kj = r_.find(in, "kind")) kind = r_.integer(*kj, "argument kind");
      if (kind != 1 && kind != 2)
        r_.fail("argument '" + argname + "' has kind " + std::to_string(kind), name, target);
      call.push_back({kind == 2 ? argname : std::string(),
                      convert_arg(r_.get(in, "arg", "node input"), argname, name, target)});
    }
    std::string err;
    if (!bind_args(*node.schema, call, &node.args, &node.given, &err)) {
      // torch.export records Python numbers passed where a Tensor goes (x + 1 as add.Tensor);
      // PyTorch wraps them exactly as the Scalar overload does, so use that overload.
      // Ops without that overload get the number as a 0-dim tensor of the op's common dtype,
      // which promotes exactly as the wrapped number does.
      const OpSchema* alt = scalar_overload(target);
      std::string ignored;
      if (alt && bind_args(*alt, call, &node.args, &node.given, &ignored)) {
        node.schema = alt;
        node.target = alt->target;
      } else if (!wrap_numbers(*node.schema, call, name) ||
                 !bind_args(*node.schema, call, &node.args, &node.given, &ignored)) {
        r_.fail(err, name, target);
      }
    }

    // Output names, in order; a list return (split) gives them as one as_tensors list.
    std::vector<std::string> outs;
    for (const json& o : r_.array(n, "outputs", "node")) {
      if (const json* t = r_.find(o, "as_tensor"))
        outs.push_back(tensor_name(*t, name, target));
      else if (const json* ts = r_.find(o, "as_tensors"); ts && ts->is_array())
        for (const json& t : *ts) outs.push_back(tensor_name(t, name, target));
      else if (const json* si = r_.find(o, "as_sym_int");
               si && target == "aten._local_scalar_dense.default") // .item(): a 0-dim value
        outs.push_back(r_.str(r_.get(*si, "as_name", "output"), "output name"));
      else
        r_.fail("output " + o.dump() + " is not a tensor; only tensor outputs are supported", name,
                target);
    }
    const auto& rets = node.schema->returns;
    bool list_return = rets.size() == 1 && rets[0].is_list;
    if (!list_return && outs.size() != rets.size())
      r_.fail("node has " + std::to_string(outs.size()) + " outputs but the op returns " +
                  std::to_string(rets.size()),
              name, target);

    if (const json* md = r_.find(n, "metadata"); md && md->is_object()) {
      if (const json* st = r_.find(*md, "stack_trace"); st && st->is_string())
        node.stack_trace = st->get<std::string>();
      if (const json* ms = r_.find(*md, "nn_module_stack"); ms && ms->is_string())
        node.nn_module_stack = ms->get<std::string>();
    }

    // Metadata as recorded; outputs the exporter did not record are inferred.
    std::vector<TensorMeta> metas(outs.size());
    bool missing = false;
    for (size_t i = 0; i < outs.size(); ++i) {
      if (tensor_values_->contains(outs[i]))
        metas[i] = recorded_meta(outs[i]);
      else
        missing = true;
    }
    const int32_t index = int32_t(g_.nodes.size());
    if (missing) {
      MetaFn fn = find_meta(target);
      if (!fn)
        r_.fail("output metadata is missing and fxc cannot infer it for this op", name, target);
      std::vector<TensorMeta> inferred = fn(g_, node);
      if (inferred.size() != outs.size())
        r_.fail("the op's meta function gives " + std::to_string(inferred.size()) +
                    " outputs, the node has " + std::to_string(outs.size()),
                name, target);
      for (size_t i = 0; i < outs.size(); ++i)
        if (!tensor_values_->contains(outs[i])) metas[i] = inferred[i];
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      ValueId v = define(outs[i], metas[i], name, target);
      if (target == "aten._local_scalar_dense.default")
        if (auto it = sym_values_.find(outs[i]);
            it != sym_values_.end() && it->second.second.is_symbol())
          g_.item_symbols.push_back({it->second.second.name, g_.values[v].name});
      g_.values[v].producer = index;
      g_.values[v].output_index = int32_t(i);
      node.outputs.push_back(v);
    }
    g_.nodes.push_back(std::move(node));
  }

  // The graph's outputs, one per output spec. User outputs come first, in their order (they are
  // output_0.. as PyTorch's module returns them); then the new values of the inputs and buffers
  // the program mutates (user_input_mutation, buffer_mutation: torch.export lists them first),
  // which fxc returns as further outputs instead of writing them back (docs/design.md).
  void read_outputs(const json& graph, const json& sig) {
    const json& specs = r_.array(sig, "output_specs", "signature");
    const json& outs = r_.array(graph, "outputs", "graph");
    if (specs.size() != outs.size())
      r_.fail("the signature has " + std::to_string(specs.size()) + " output specs, the graph " +
              std::to_string(outs.size()) + " outputs");
    std::vector<ValueId> user, mutated;
    for (size_t i = 0; i < specs.size(); ++i) {
      const json& s = specs[i];
      if (!s.is_object() || s.size() != 1) r_.fail("output spec is not a one-key object");
      const std::string& kind = s.begin().key();
      if (kind != "user_output" && kind != "user_input_mutation" && kind != "buffer_mutation")
        r_.fail("output kind '" + kind +
                "' is not supported (user outputs and input and buffer mutations are)");
      ValueId v = read_output(outs[i], i);
      if (v != kNoValue) (kind == "user_output" ? user : mutated).push_back(v);
    }
    g_.outputs = user;
    g_.outputs.insert(g_.outputs.end(), mutated.begin(), mutated.end());
    g_.num_mutation_outputs = mutated.size();
  }

  // A graph output: a tensor; a size (as_sym_int) or a number or bool the module returned, as a
  // 0-dim tensor (int64, float32 as torch.tensor(0.5) is, bool); None (kNoValue): no output.
  ValueId read_output(const json& o, size_t index) {
    if (r_.find(o, "as_none")) return kNoValue;
    for (auto [key, dt] : {std::pair{"as_int", DType::I64}, std::pair{"as_float", DType::F32},
                           std::pair{"as_bool", DType::Bool}})
      if (const json* c = r_.find(o, key)) {
        Arg a = dt == DType::I64    ? Arg::of_int(r_.integer(*c, "output"))
                : dt == DType::Bool ? Arg::of_bool(c->is_boolean() && c->get<bool>())
                                    : Arg::of_float(r_.floating(*c, "output"));
        if (dt == DType::Bool && !c->is_boolean()) r_.fail("output " + o.dump() + " is not a bool");
        return add_node1(g_, "aten.scalar_tensor.default", {{"", a}, {"dtype", Arg::of_dtype(dt)}},
                         "const_output_" + std::to_string(index));
      }
    if (const json* si = r_.find(o, "as_sym_int")) { // a size: returned as a 0-dim int64 tensor
      SymExpr e;
      Arg a = Arg::of_int(sym_arg(*si, &e, "", ""));
      if (!e.empty()) a.syms = {e};
      return add_node1(g_, "aten.scalar_tensor.default",
                       {{"", a}, {"dtype", Arg::of_dtype(DType::I64)}},
                       "sym_output_" + std::to_string(index));
    }
    const json* t = r_.find(o, "as_tensor");
    if (!t) r_.fail("graph output " + o.dump() + " is not a tensor");
    std::string name = r_.str(r_.get(*t, "name", "graph output"), "output name");
    auto it = ids_.find(name);
    if (it == ids_.end()) r_.fail("graph output names undefined value '" + name + "'");
    return it->second;
  }

  // Weights: fqn -> {path_name, tensor_meta} in the weights and constants configs. Entries that
  // several fqns share become one Storage; every view is checked against the entry's size.
  void read_weights(zip_t* z) {
    struct Config {
      std::string folder;
      json config;
    };
    std::vector<Config> configs;
    for (const char* folder : {"weights", "constants"}) {
      std::string dir = top_ + "data/" + folder + "/";
      std::string file = dir + (std::string(folder) == "weights" ? "model_weights_config.json"
                                                                 : "model_constants_config.json");
      if (!find_entry(z, path_, file)) continue;
      json j = read_json_entry(z, path_, file);
      Reader cr(path_, file);
      const json& cfg = cr.get(j, "config", "config file");
      if (!cfg.is_object()) cr.fail("'config' is not an object");
      configs.push_back({dir, cfg});
    }
    struct Shared {
      std::string entry;
      int64_t needed = 0;
      std::shared_ptr<Storage> storage;
    };
    std::map<std::string, Shared> entries; // by entry name
    struct Pending {
      std::string fqn, entry;
      WeightData w;
    };
    std::vector<Pending> pending;
    for (const GraphInput& in : g_.inputs) {
      if (in.kind == InputKind::UserInput || g_.weights.count(in.fqn)) continue;
      const json* item = nullptr;
      std::string dir, cfg_name;
      for (const Config& c : configs) {
        auto it = c.config.find(in.fqn);
        if (it != c.config.end()) {
          item = &*it;
          dir = c.folder;
          break;
        }
      }
      std::string what = std::string(input_kind_name(in.kind)) + " '" + in.fqn + "'";
      if (!item) throw Error(path_, "no weights for " + what + " in the archive");
      Reader cr(path_, what);
      if (const json* p = cr.find(*item, "use_pickle"); p && p->is_boolean() && p->get<bool>())
        cr.fail("pickled weights are not supported");
      std::string path_name = cr.str(cr.get(*item, "path_name", "weight config"), "path_name");
      if (escapes_archive(path_name) || path_name.find('/') != std::string::npos)
        throw Error(path_, "entry name escapes the archive: '" + path_name + "' (" + what + ")");
      Pending p;
      p.fqn = in.fqn;
      p.entry = dir + path_name;
      try {
        p.w.meta = parse_tensor_meta(cr, cr.get(*item, "tensor_meta", "weight config"));
      } catch (const json::exception& e) {
        cr.fail(std::string("unexpected JSON structure: ") + e.what());
      }
      const TensorMeta& vm = g_.values[in.value].meta;
      if (vm.dtype != p.w.meta.dtype || vm.sizes != p.w.meta.sizes)
        throw Error(path_, "weights of " + what + " are " + format_meta(p.w.meta) +
                               " but the graph uses " + format_meta(vm));
      int64_t needed;
      if (!view_extent_bytes(p.w.meta.sizes, p.w.meta.strides, p.w.meta.storage_offset,
                             int64_t(dtype_size(p.w.meta.dtype)), &needed))
        throw Error(path_, "size of '" + in.fqn + "' overflows");
      Shared& s = entries[p.entry];
      s.entry = p.entry;
      s.needed = std::max(s.needed, needed);
      pending.push_back(std::move(p));
    }
    // The loaders share one handle, opened by the first of them and kept while any weight is
    // unread: reopening the archive per entry parsed its whole central directory each time
    // (ResNet-50: 320 opens, 100k stat calls of /etc/localtime from libzip's mktime).
    auto archive_handle = std::make_shared<SharedArchive>();
    // Stored entries (torch.export compresses none, and aligns each to 64 bytes) are used where
    // they lie in the mapped archive: no copy, and an artifact writes them straight from there.
    std::shared_ptr<MappedFile> mapped = entries.empty() ? nullptr : MappedFile::open(path_);
    std::map<std::string, uint64_t, std::less<>> offsets;
    if (mapped) offsets = zip_data_offsets(*mapped);
    for (auto& [name, s] : entries) {
      auto info = find_entry(z, path_, name);
      if (!info) throw Error(path_, "archive has no entry '" + name + "'");
      if (uint64_t(s.needed) > info->size)
        throw Error(path_, "entry '" + name + "' has " + std::to_string(info->size) +
                               " bytes but its tensors need " + std::to_string(s.needed));
      std::string archive = path_, entry = name;
      auto at = offsets.find(name);
      if (mapped && info->stored && at != offsets.end() && at->second % kMappedAlignment == 0 &&
          at->second <= mapped->size() && mapped->size() - at->second >= info->size) {
        std::byte* bytes = mapped->data() + at->second;
        const uint64_t full = info->size;
        const std::optional<uint32_t> crc = info->crc;
        s.storage = Storage::borrowed(bytes, size_t(s.needed), mapped, [=] {
          // The whole entry, as libzip would check it: a corrupt weight must not run.
          if (crc && libdeflate_crc32(0, bytes, size_t(full)) != *crc)
            throw Error(archive, "entry '" + entry + "': CRC-32 mismatch (archive is corrupt)");
        });
        continue;
      }
      s.storage = Storage::lazy(
          size_t(s.needed),
          [archive, entry, archive_handle](std::byte* dst, size_t n) {
            std::lock_guard<std::mutex> lock(archive_handle->mu);
            if (!archive_handle->zip) archive_handle->zip = open_zip(archive, /*strict=*/false);
            zip_t* zz = archive_handle->zip.get();
            auto e = find_entry(zz, archive, entry);
            if (!e)
              throw Error(archive,
                          "archive has no entry '" + entry + "' (changed since it was opened?)");
            read_entry(zz, archive, entry, e->index, dst, n);
          },
          /*load_writes_all=*/true);
    }
    for (Pending& p : pending) {
      p.w.storage = entries[p.entry].storage;
      g_.weights.emplace(p.fqn, std::move(p.w));
    }
  }

  std::string path_;
  Reader r_;
  std::string top_;
  Graph g_;
  const json* tensor_values_ = nullptr;
  std::map<std::string, ValueId, std::less<>> ids_; ///< the export's names in scope
  std::set<std::string, std::less<>> defined_;      ///< the names the current graph defines
  std::map<std::string, const json*, std::less<>> sym_bools_; ///< condition -> its node
  std::string prefix_; ///< prepended to the names of an inlined subgraph's values and nodes
  HintMap hints_;      ///< each bare symbol's hint
  std::map<std::string, std::pair<int64_t, SymExpr>, std::less<>> sym_values_; ///< hint, expression
};

} // namespace

Graph import_pt2(const std::string& path) {
  return Pt2Importer(path).run();
}

} // namespace fxc
