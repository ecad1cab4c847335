// The .fxo artifact: header + zstd payload (JSON manifest and blobs), its validation, and loading.
//
// Every field of Plan, PlanKernel, PlanExtern, PlanView and PlanStep (runtime/plan_executor.h)
// is written by one write_* function and read back by the read_* function right below it. A
// field added to one of those structs must be added to both; the static_asserts below fail to
// compile until the struct's size is updated here, as a reminder.
#include "runtime/artifact.h"

#include "frontend/specialize.h"

#include "frontend/custom_ops.h"
#include "frontend/diag.h"
#include "frontend/fxg.h"
#include "frontend/io_util.h"
#include "runtime/cuda_driver.h"
#include "runtime/elf_loader.h"
#include "runtime/interpreter.h"
#include "runtime/onednn.h"
#include "runtime/thread_pool.h"

#include <nlohmann/json.hpp>
#include <zstd.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <tuple>

#ifndef FXC_VERSION
#error "FXC_VERSION must be defined by the build"
#endif

namespace fxc {

// Reminders: a new field in a plan struct needs a line in its write_* and read_* functions.
// (A plan is static: its metas never carry symbolic sizes, so write_meta ignores them.)
static_assert(sizeof(PlanView) == 128, "PlanView changed: update write_view/read_view");
static_assert(sizeof(PlanKernel) == 136, "PlanKernel changed: update write_kernel/read_kernel");
static_assert(sizeof(PlanExtern) == 320, "PlanExtern changed: update write_extern/read_extern");
static_assert(sizeof(PlanStep) == 8, "PlanStep changed: update write_plan/read_plan");
// Plan::arena_cache (168 bytes) is run-time state, never written.
static_assert(sizeof(Plan) == 512, "Plan changed: update write_plan/read_plan");

namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

// ---------------------------------------------------------------------------------------------
// The header: fixed 64 bytes, little-endian.

constexpr char kMagic[4] = {'F', 'X', 'O', '\0'};
constexpr size_t kHeaderBytes = 64;
constexpr size_t kVersionOffset = 4, kFxcVersionOffset = 8, kFxcVersionBytes = 16;
constexpr size_t kCompressedOffset = 24, kUncompressedOffset = 32;
constexpr size_t kWeightsOffsetOffset = 40, kWeightsSizeOffset = 48, kChecksumOffset = 56;
/// Payloads (decompressed) larger than this are refused before decompressing.
constexpr uint64_t kMaxPayloadBytes = uint64_t(1) << 40;
constexpr int kZstdLevel = 3;
/// The weight section starts on a page; weights of at least kPageAlignedWeight bytes start on a
/// page of it, smaller ones on kWeightAlign bytes.
constexpr uint64_t kPage = 4096, kWeightAlign = 64, kPageAlignedWeight = 64 * 1024;
/// The weight section's checksums: XXH3-64 of each chunk of this many bytes (the last shorter).
constexpr uint64_t kWeightChunk = uint64_t(1) << 20;

uint64_t align_up(uint64_t v, uint64_t a) {
  return (v + a - 1) / a * a;
}

void put_u32(std::string& s, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) s[at + i] = char((v >> (8 * i)) & 0xff);
}
void put_u64(std::string& s, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) s[at + i] = char((v >> (8 * i)) & 0xff);
}
uint32_t get_u32(std::string_view s, size_t at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t(uint8_t(s[at + i])) << (8 * i);
  return v;
}
uint64_t get_u64(std::string_view s, size_t at) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t(uint8_t(s[at + i])) << (8 * i);
  return v;
}

/// XXH64 of the header's first 56 bytes and the compressed payload.
uint64_t checksum(std::string_view header, std::string_view payload) {
  XXH64_state_t st;
  XXH64_reset(&st, 0);
  XXH64_update(&st, header.data(), kChecksumOffset);
  XXH64_update(&st, payload.data(), payload.size());
  return XXH64_digest(&st);
}

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

const char* kind_name(ArtifactGraph::Kind k) {
  return k == ArtifactGraph::Kind::Plan ? "plan" : "interpreted";
}

// ---------------------------------------------------------------------------------------------
// Writing.

/// One stretch of the weight section: bytes of a weight (read where they lie) or zero padding.
struct WeightPiece {
  const std::byte* data = nullptr; ///< null: `size` zero bytes
  uint64_t size = 0;
};

class Writer {
public:
  /// Appends `bytes` to the blob area; returns its [offset, size] reference.
  ojson blob(std::string_view bytes) {
    uint64_t off = blobs_.size();
    blobs_.append(bytes);
    blobs_.resize((blobs_.size() + 15) / 16 * 16, '\0'); // 16-byte aligned blobs
    return ojson::array({off, uint64_t(bytes.size())});
  }

  /// Index of a weight in the weight table, deduplicated by storage and view; its bytes are
  /// placed in the weight section once per distinct content (XXH3-128, then compared), aligned,
  /// and not copied: the section is written from where they lie.
  int weight(const std::shared_ptr<Storage>& storage, const TensorMeta& meta) {
    auto key =
        std::make_tuple(storage.get(), meta.dtype, meta.sizes, meta.strides, meta.storage_offset);
    auto it = weight_index_.find(key);
    if (it != weight_index_.end()) return it->second;
    Tensor t(storage, meta);
    if (!t.is_contiguous()) {
      t = t.contiguous(); // a strided view: its contiguous copy is what the section holds
      keep_.push_back(t);
    }
    const uint64_t n = uint64_t(t.numel()) * dtype_size(t.dtype());
    const auto* data = n ? static_cast<const std::byte*>(t.raw_data()) : nullptr;
    uint64_t off = place(data, n);
    ojson w;
    w["dtype"] = std::string(dtype_name(meta.dtype));
    w["sizes"] = meta.sizes;
    w["data"] = ojson::array({off, n});
    weights_.push_back(w);
    int index = int(weights_.size()) - 1;
    weight_index_.emplace(key, index);
    return index;
  }

  ojson weights() const { return weights_; }
  const std::string& blobs() const { return blobs_; }
  const std::vector<WeightPiece>& pieces() const { return pieces_; }
  uint64_t weight_bytes() const { return end_; }

  /// XXH3-64 of each kWeightChunk bytes of the weight section, as hex strings.
  ojson chunk_checksums() const {
    ojson out = ojson::array();
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    uint64_t in_chunk = 0;
    static const std::byte zeros[4096] = {};
    for (const WeightPiece& p : pieces_) {
      for (uint64_t done = 0; done < p.size;) {
        uint64_t n = std::min(p.size - done, kWeightChunk - in_chunk);
        if (!p.data) n = std::min<uint64_t>(n, sizeof zeros);
        XXH3_64bits_update(&st, p.data ? p.data + done : zeros, size_t(n));
        done += n;
        in_chunk += n;
        if (in_chunk == kWeightChunk) {
          out.push_back(hex64(XXH3_64bits_digest(&st)));
          XXH3_64bits_reset(&st);
          in_chunk = 0;
        }
      }
    }
    if (in_chunk) out.push_back(hex64(XXH3_64bits_digest(&st)));
    return out;
  }

private:
  /// Offset in the weight section of `n` bytes at `data`: where the same bytes already are, or a
  /// new aligned place after padding. Weights are matched by size and a sketch of their bytes
  /// (XXH3-64 of three 256-byte samples), then compared; the whole bytes are hashed (XXH3-128)
  /// only where more than two placed weights share a sketch, so a model's distinct weights are
  /// read once here (by the checksums) and never hashed whole.
  uint64_t place(const std::byte* data, uint64_t n) {
    if (n == 0) return 0;
    std::vector<Placed>& same = by_sketch_[{n, sketch(data, n)}];
    std::optional<Digest> digest;
    if (same.size() > 2) digest = content_digest(data, n);
    for (Placed& c : same) {
      if (digest) {
        if (!c.digest) c.digest = content_digest(c.data, n);
        if (*c.digest != *digest) continue;
      }
      if (std::memcmp(c.data, data, size_t(n)) == 0) return c.offset;
    }
    uint64_t off = align_up(end_, n >= kPageAlignedWeight ? kPage : kWeightAlign);
    if (off > end_) pieces_.push_back({nullptr, off - end_});
    pieces_.push_back({data, n});
    end_ = off + n;
    same.push_back(Placed{data, off, digest});
    return off;
  }

  using Digest = std::pair<uint64_t, uint64_t>;
  static Digest content_digest(const std::byte* data, uint64_t n) {
    XXH128_hash_t h = XXH3_128bits(data, size_t(n));
    return {h.high64, h.low64};
  }
  /// XXH3-64 of the first, middle and last 256 bytes (all of them when fewer).
  static uint64_t sketch(const std::byte* data, uint64_t n) {
    constexpr uint64_t kSample = 256;
    if (n <= 3 * kSample) return XXH3_64bits(data, size_t(n));
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    for (uint64_t at : {uint64_t(0), (n - kSample) / 2, n - kSample})
      XXH3_64bits_update(&st, data + at, size_t(kSample));
    return XXH3_64bits_digest(&st);
  }

  struct Placed {
    const std::byte* data;
    uint64_t offset;
    std::optional<Digest> digest; ///< computed once more than two weights share the sketch
  };
  std::string blobs_;
  ojson weights_ = ojson::array();
  std::vector<Tensor> keep_; ///< contiguous copies of strided weights, alive until written
  std::vector<WeightPiece> pieces_;
  uint64_t end_ = 0;
  std::map<std::pair<uint64_t, uint64_t>, std::vector<Placed>> by_sketch_; ///< (size, sketch)
  // Lookup only; the table's order is the order of first use.
  std::map<std::tuple<const Storage*, DType, std::vector<int64_t>, std::vector<int64_t>, int64_t>,
           int>
      weight_index_;
};

ojson write_meta(const TensorMeta& m) {
  ojson j;
  j["dtype"] = std::string(dtype_name(m.dtype));
  j["sizes"] = m.sizes;
  j["strides"] = m.strides;
  j["offset"] = m.storage_offset;
  j["device"] = device_name(m.device);
  return j;
}

ojson write_view(const PlanView& v) {
  return ojson{{"slot", v.slot}, {"meta", write_meta(v.meta)}};
}

ojson write_views(const std::vector<PlanView>& vs) {
  ojson a = ojson::array();
  for (const PlanView& v : vs) a.push_back(write_view(v));
  return a;
}

// PlanKernel: fn and cuda_function are resolved at load from the kernel's name.
ojson write_kernel(const PlanKernel& k) {
  ojson j;
  j["name"] = k.name;
  j["arg_slots"] = k.arg_slots;
  j["xnumel"] = k.xnumel;
  j["grain"] = k.grain;
  j["fail"] = k.fail;
  j["bytes"] = k.bytes;
  j["cuda_block"] = k.cuda_block;
  j["cuda_rows"] = k.cuda_rows;
  return j;
}

const char* extern_kind_name(PlanExtern::Kind k) {
  switch (k) {
  case PlanExtern::Kind::Gemm:
    return "gemm";
  case PlanExtern::Kind::Fallback:
    return "fallback";
  case PlanExtern::Kind::Conv:
    return "conv";
  case PlanExtern::Kind::ConvBackwardData:
    return "conv_backward_data";
  case PlanExtern::Kind::ConvBackwardFilter:
    return "conv_backward_filter";
  case PlanExtern::Kind::Attention:
    return "attention";
  }
  return "?";
}

const PlanExtern::Epilogue kEpilogues[] = {
    PlanExtern::Epilogue::None, PlanExtern::Epilogue::Bias, PlanExtern::Epilogue::ReluBias,
    PlanExtern::Epilogue::GeluTanhBias, PlanExtern::Epilogue::BiasResidual};

ojson write_extern(const PlanExtern& e, const std::string& source, Writer& w) {
  ojson j;
  j["kind"] = extern_kind_name(e.kind);
  j["name"] = e.name;
  j["inputs"] = write_views(e.inputs);
  j["outputs"] = write_views(e.outputs);
  if (e.kind == PlanExtern::Kind::Fallback && !e.graph)
    throw Error(source, "fallback call '" + e.name + "' has no graph to serialize");
  j["graph"] = e.graph ? w.blob(fxg_to_json(*e.graph, {})) : ojson();
  j["bytes"] = e.bytes;
  j["epilogue"] = epilogue_name(e.epilogue);
  j["stride"] = e.stride;
  j["padding"] = e.padding;
  j["dilation"] = e.dilation;
  j["groups"] = e.groups;
  if (e.channels_last) j["channels_last"] = true;
  j["algo"] = e.algo;
  if (!e.post_ops.empty()) j["post_ops"] = e.post_ops; // `prepared` is made again at load
  if (!e.scale.empty()) {
    j["scale"] = e.scale;
    j["shift"] = e.shift;
  }
  if (e.kind == PlanExtern::Kind::Attention) {
    j["attn_scale"] = e.attn_scale;
    j["causal"] = e.causal;
  }
  return j;
}

const char* step_name(PlanStep::Kind k) {
  switch (k) {
  case PlanStep::Kind::Alloc:
    return "alloc";
  case PlanStep::Kind::Free:
    return "free";
  case PlanStep::Kind::Kernel:
    return "kernel";
  case PlanStep::Kind::Extern:
    return "extern";
  }
  return "?";
}

ojson write_plan(const ArtifactGraph& g, bool cuda, const std::string& source, Writer& w) {
  const Plan& p = g.plan;
  ojson j;
  j["slot_bytes"] = p.slot_bytes;
  j["input_slots"] = p.input_slots;
  ojson metas = ojson::array();
  for (const TensorMeta& m : p.input_metas) metas.push_back(write_meta(m));
  j["input_metas"] = metas;
  ojson consts = ojson::array();
  for (const auto& [slot, t] : p.constant_slots)
    consts.push_back(ojson::array({slot, w.weight(t.storage(), t.meta())}));
  j["constant_slots"] = consts;
  if (cuda && !p.kernels.empty() && g.ptx.empty())
    throw Error(source, "a CUDA plan with kernels needs their PTX module");
  ojson kernels = ojson::array();
  for (const PlanKernel& k : p.kernels) kernels.push_back(write_kernel(k));
  j["kernels"] = kernels;
  ojson externs = ojson::array();
  for (const PlanExtern& e : p.externs) externs.push_back(write_extern(e, source, w));
  j["externs"] = externs;
  ojson steps = ojson::array();
  for (const PlanStep& s : p.steps) steps.push_back(ojson::array({step_name(s.kind), s.index}));
  j["steps"] = steps;
  // Freezing: written only when there is something to prepare, so that other plans keep the
  // bytes they had before the fields existed.
  if (!p.prepare.empty() || !p.prepared_slots.empty()) {
    ojson prepare = ojson::array();
    for (const PlanStep& s : p.prepare)
      prepare.push_back(ojson::array({step_name(s.kind), s.index}));
    j["prepare"] = prepare;
    j["prepared_slots"] = p.prepared_slots;
  }
  j["outputs"] = write_views(p.outputs);
  j["allow_tf32"] = p.matmul_tf32;
  j["conv_tf32"] = p.conv_tf32;
  j["cuda_graphs"] = p.cuda_graphs;
  return j;
}

ojson write_graph(const ArtifactGraph& g, const CompiledArtifact& a, Writer& w) {
  const std::string& source = a.name;
  ojson j;
  j["role"] = g.role;
  j["kind"] = kind_name(g.kind);
  if (g.kind == ArtifactGraph::Kind::Plan) {
    bool cuda = a.device == "cuda";
    j["plan"] = write_plan(g, cuda, source, w);
    if (!cuda && !g.plan.kernels.empty() && g.objects.empty())
      throw Error(source, "a CPU plan with kernels needs their object code");
    ojson objects = ojson::array();
    for (const std::string& o : g.objects) objects.push_back(w.blob(o));
    j["objects"] = objects;
    j["ptx"] = cuda ? w.blob(g.ptx) : ojson();
    std::vector<std::string> names = g.constant_names;
    names.resize(g.plan.constant_slots.size()); // unnamed: made at compile time
    j["constant_names"] = names;
    return j;
  }
  if (!g.graph) throw Error(source, "an interpreted graph needs its graph");
  FxgWriteOptions fo;
  fo.weights_file = "<fxo>";
  ojson weights = ojson::object();
  for (const GraphInput& in : g.graph->inputs) {
    if (in.kind == InputKind::UserInput) continue;
    auto it = g.graph->weights.find(in.fqn);
    if (it == g.graph->weights.end() || it->second.init) continue; // fxg writes the rule
    weights[in.fqn] = w.weight(it->second.storage, it->second.meta);
  }
  j["graph"] = w.blob(fxg_to_json(*g.graph, fo));
  j["weights"] = weights;
  return j;
}

// ---------------------------------------------------------------------------------------------
// Reading. Every accessor checks the JSON type and range and names the field it reads.

class Reader {
public:
  Reader(const std::string& source, std::string_view blobs, std::string_view weights = {},
         std::shared_ptr<const ArtifactBytes> owner = nullptr)
      : source_(source), blobs_(blobs), weights_(weights), owner_(std::move(owner)) {}

  [[noreturn]] void fail(const std::string& where, const std::string& msg) const {
    throw Error(source_, "corrupt artifact: " + where + ": " + msg);
  }

  const json& at(const json& j, const char* key, const std::string& where) const {
    if (!j.is_object()) fail(where, "not an object");
    auto it = j.find(key);
    if (it == j.end()) fail(where, std::string("no \"") + key + "\"");
    return *it;
  }
  int64_t integer(const json& j, const std::string& where, int64_t lo, int64_t hi) const {
    if (!j.is_number_integer() ||
        (j.is_number_unsigned() && j.get<uint64_t>() > uint64_t(INT64_MAX)))
      fail(where, "not an integer");
    int64_t v = j.get<int64_t>();
    if (v < lo || v > hi)
      fail(where, std::to_string(v) + " is outside [" + std::to_string(lo) + ", " +
                      std::to_string(hi) + "]");
    return v;
  }
  int64_t integer(const json& j, const char* key, const std::string& where, int64_t lo,
                  int64_t hi) const {
    return integer(at(j, key, where), where + "." + key, lo, hi);
  }
  std::string str(const json& j, const std::string& where) const {
    if (!j.is_string()) fail(where, "not a string");
    return j.get<std::string>();
  }
  std::string str(const json& j, const char* key, const std::string& where) const {
    return str(at(j, key, where), where + "." + key);
  }
  const json& array(const json& j, const char* key, const std::string& where) const {
    const json& a = at(j, key, where);
    if (!a.is_array()) fail(where + "." + key, "not a list");
    return a;
  }
  std::vector<int64_t> ints(const json& j, const char* key, const std::string& where, int64_t lo,
                            int64_t hi) const {
    std::vector<int64_t> out;
    for (const json& e : array(j, key, where)) out.push_back(integer(e, where + "." + key, lo, hi));
    return out;
  }
  /// The bytes of a blob reference [offset, size].
  std::string_view blob(const json& j, const std::string& where) const {
    if (!j.is_array() || j.size() != 2) fail(where, "not a blob reference");
    int64_t off = integer(j[0], where, 0, INT64_MAX), size = integer(j[1], where, 0, INT64_MAX);
    if (uint64_t(off) > blobs_.size() || uint64_t(size) > blobs_.size() - uint64_t(off))
      fail(where, "blob lies outside the payload");
    return blobs_.substr(size_t(off), size_t(size));
  }

  DType dtype(const json& j, const std::string& where) const {
    auto t = parse_dtype(str(j, where));
    if (!t) fail(where, "unknown dtype");
    return *t;
  }
  Device device(const std::string& s, const std::string& where) const {
    Device d;
    if (s == "cpu") return d;
    if (s.rfind("cuda", 0) != 0) fail(where, "unknown device '" + s + "'");
    d.kind = Device::CUDA;
    if (s == "cuda") return d;
    std::string idx = s.substr(4);
    if (idx.size() < 2 || idx.size() > 5 || idx[0] != ':' ||
        idx.find_first_not_of("0123456789", 1) != std::string::npos)
      fail(where, "unknown device '" + s + "'");
    d.index = std::stoi(idx.substr(1));
    return d;
  }
  TensorMeta meta(const json& j, const std::string& where) const {
    TensorMeta m;
    m.dtype = dtype(at(j, "dtype", where), where + ".dtype");
    m.sizes = ints(j, "sizes", where, 0, INT64_MAX);
    m.strides = ints(j, "strides", where, 0, INT64_MAX);
    if (m.sizes.size() > 64 || m.strides.size() != m.sizes.size())
      fail(where, "sizes and strides do not agree");
    m.storage_offset = integer(j, "offset", where, 0, INT64_MAX);
    m.device = device(str(j, "device", where), where + ".device");
    int64_t n = 1;
    for (int64_t s : m.sizes)
      if (!checked_mul(n, s, &n) || n > Tensor::kMaxBytes) fail(where, "too many elements");
    return m;
  }

  /// A weight of `bytes` bytes at [offset, size] of the weight section, used in place (the
  /// storage keeps the artifact's bytes alive).
  std::shared_ptr<Storage> weight_storage(const json& j, const std::string& where,
                                          int64_t bytes) const {
    if (!j.is_array() || j.size() != 2) fail(where, "not a weight reference");
    int64_t off = integer(j[0], where, 0, INT64_MAX), size = integer(j[1], where, 0, INT64_MAX);
    if (size != bytes)
      fail(where,
           "holds " + std::to_string(size) + " bytes, its tensor needs " + std::to_string(bytes));
    if (uint64_t(off) > weights_.size() || uint64_t(size) > weights_.size() - uint64_t(off))
      fail(where, "lies outside the weight section");
    if (size > 0 && off % int64_t(kWeightAlign) != 0)
      fail(where, "not aligned to " + std::to_string(kWeightAlign) + " bytes");
    if (size == 0) return std::make_shared<Storage>(0);
    // Weights deduplicated into one range share one storage, as they did when written.
    std::shared_ptr<Storage>& s = by_range_[{off, size}];
    if (!s) {
      auto* p = reinterpret_cast<std::byte*>(const_cast<char*>(weights_.data())) + off;
      s = Storage::borrowed(p, size_t(size), owner_);
    }
    return s;
  }

  const std::string& source() const { return source_; }
  std::string_view blobs() const { return blobs_; }

private:
  const std::string& source_;
  std::string_view blobs_;
  std::string_view weights_;
  std::shared_ptr<const ArtifactBytes> owner_;
  mutable std::map<std::pair<int64_t, int64_t>, std::shared_ptr<Storage>> by_range_;
};

/// The weight table: contiguous host tensors whose bytes are the artifact's (no copy).
std::vector<Tensor> read_weights(const Reader& r, const json& manifest) {
  std::vector<Tensor> out;
  const json& ws = r.array(manifest, "weights", "manifest");
  for (size_t i = 0; i < ws.size(); ++i) {
    std::string where = "weights[" + std::to_string(i) + "]";
    TensorMeta m;
    m.dtype = r.dtype(r.at(ws[i], "dtype", where), where + ".dtype");
    m.sizes = r.ints(ws[i], "sizes", where, 0, INT64_MAX);
    int64_t bytes = 0;
    if (m.sizes.size() > 64 || !view_extent_bytes(m.sizes, contiguous_strides(m.sizes), 0,
                                                  int64_t(dtype_size(m.dtype)), &bytes))
      r.fail(where, "bad sizes");
    m.strides = contiguous_strides(m.sizes);
    out.emplace_back(r.weight_storage(r.at(ws[i], "data", where), where + ".data", bytes), m);
  }
  return out;
}

/// Checks the weight section against the manifest's XXH3 of each chunk.
void check_weight_chunks(const Reader& r, const json& manifest, std::string_view weights) {
  const json& c = r.at(manifest, "weight_chunks", "manifest");
  int64_t chunk = r.integer(c, "bytes", "weight_chunks", int64_t(kPage), int64_t(1) << 30);
  const json& sums = r.array(c, "xxh3", "weight_chunks");
  uint64_t count = (weights.size() + uint64_t(chunk) - 1) / uint64_t(chunk);
  if (sums.size() != count)
    r.fail("weight_chunks",
           std::to_string(sums.size()) + " checksums for " + std::to_string(count) + " chunks");
  for (uint64_t i = 0; i < count; ++i) {
    std::string_view part = weights.substr(size_t(i * uint64_t(chunk)), size_t(chunk));
    if (r.str(sums[i], "weight_chunks.xxh3") != hex64(XXH3_64bits(part.data(), part.size())))
      throw Error(r.source(), "corrupt artifact: checksum mismatch in the weights (bytes " +
                                  std::to_string(i * uint64_t(chunk)) + " to " +
                                  std::to_string(i * uint64_t(chunk) + part.size()) +
                                  " of the weight section)");
  }
}

PlanView read_view(const Reader& r, const json& j, const std::string& where) {
  PlanView v;
  v.slot = int(r.integer(j, "slot", where, 0, INT32_MAX));
  v.meta = r.meta(r.at(j, "meta", where), where + ".meta");
  return v;
}

std::vector<PlanView> read_views(const Reader& r, const json& j, const char* key,
                                 const std::string& where) {
  std::vector<PlanView> out;
  const json& a = r.array(j, key, where);
  for (size_t i = 0; i < a.size(); ++i)
    out.push_back(read_view(r, a[i], where + "." + key + "[" + std::to_string(i) + "]"));
  return out;
}

PlanKernel read_kernel(const Reader& r, const json& j, const std::string& where, bool cuda) {
  PlanKernel k;
  k.name = r.str(j, "name", where);
  for (int64_t s : r.ints(j, "arg_slots", where, 0, INT32_MAX)) k.arg_slots.push_back(int(s));
  k.xnumel = r.integer(j, "xnumel", where, 0, INT64_MAX);
  k.grain = r.integer(j, "grain", where, 1, INT64_MAX);
  k.fail = r.str(j, "fail", where);
  k.bytes = r.integer(j, "bytes", where, 0, INT64_MAX);
  k.cuda_block = int(r.integer(j, "cuda_block", where, cuda ? 1 : 0, cuda ? 1024 : 0));
  // Artifacts written before the short-row form have no cuda_rows: a block per row.
  if (j.contains("cuda_rows"))
    k.cuda_rows = int(r.integer(j, "cuda_rows", where, 1, cuda ? 1024 : 1));
  if (cuda && k.cuda_block % k.cuda_rows != 0)
    r.fail(where + ".cuda_rows", "rows per block must divide the block size");
  if (k.name.empty()) r.fail(where, "a kernel without a name");
  return k;
}

PlanExtern read_extern(const Reader& r, const json& j, const std::string& where, bool cuda) {
  PlanExtern e;
  std::string kind = r.str(j, "kind", where);
  bool known = false;
  for (PlanExtern::Kind k : {PlanExtern::Kind::Gemm, PlanExtern::Kind::Fallback,
                             PlanExtern::Kind::Conv, PlanExtern::Kind::ConvBackwardData,
                             PlanExtern::Kind::ConvBackwardFilter, PlanExtern::Kind::Attention})
    if (kind == extern_kind_name(k)) {
      e.kind = k;
      known = true;
    }
  if (!known) r.fail(where + ".kind", "unknown extern kind '" + kind + "'");
  e.name = r.str(j, "name", where);
  e.inputs = read_views(r, j, "inputs", where);
  e.outputs = read_views(r, j, "outputs", where);
  e.bytes = r.integer(j, "bytes", where, 0, INT64_MAX);
  std::string epi = r.str(j, "epilogue", where);
  known = false;
  for (PlanExtern::Epilogue k : kEpilogues)
    if (epi == epilogue_name(k)) {
      e.epilogue = k;
      known = true;
    }
  if (!known) r.fail(where + ".epilogue", "unknown epilogue '" + epi + "'");
  auto pair = [&](const char* key, int64_t lo) {
    std::vector<int64_t> v = r.ints(j, key, where, lo, INT32_MAX);
    if (v.empty() || v.size() > 3) r.fail(where + "." + key, "not one to three values");
    return v;
  };
  e.stride = pair("stride", 1);
  e.padding = pair("padding", 0);
  e.dilation = pair("dilation", 1);
  e.groups = r.integer(j, "groups", where, 1, INT32_MAX);
  if (j.contains("channels_last")) {
    const json& cl = j.at("channels_last");
    if (!cl.is_boolean()) r.fail(where + ".channels_last", "not true or false");
    e.channels_last = cl.get<bool>();
  }
  // Artifacts written before --max-autotune tuned matmuls have no "algo": the first algorithm.
  if (j.contains("algo")) e.algo = int(r.integer(j, "algo", where, 0, INT32_MAX));
  if (j.contains("post_ops")) e.post_ops = r.str(j, "post_ops", where);
  if (j.contains("scale")) {
    try {
      e.scale = j.at("scale").get<std::vector<float>>();
      e.shift = j.at("shift").get<std::vector<float>>();
    } catch (const std::exception&) {
      r.fail(where + ".scale", "not two lists of numbers (scale, shift)");
    }
    if (e.kind != PlanExtern::Kind::Conv || e.inputs.size() < 2 || e.inputs[1].meta.sizes.empty() ||
        e.scale.size() != size_t(e.inputs[1].meta.sizes[0]) || e.shift.size() != e.scale.size())
      r.fail(where + ".scale", "not one scale and shift per output channel of a convolution");
  }
  const json& g = r.at(j, "graph", where);
  if (e.kind == PlanExtern::Kind::Fallback) {
    std::string text(r.blob(g, where + ".graph"));
    e.graph = std::make_shared<const Graph>(parse_fxg_text(std::move(text), r.source(), {}));
    if (e.graph->nodes.size() != 1 || e.graph->inputs.size() != e.inputs.size() ||
        e.graph->outputs.size() != e.outputs.size())
      r.fail(where + ".graph", "not a one-node graph matching the call's operands");
    return e;
  }
  if (!g.is_null()) r.fail(where + ".graph", "only fallback calls carry a graph");
  if (e.kind == PlanExtern::Kind::Gemm) {
    size_t n = e.epilogue == PlanExtern::Epilogue::None           ? 2
               : e.epilogue == PlanExtern::Epilogue::BiasResidual ? 4
                                                                  : 3;
    if (e.inputs.size() != n || e.outputs.size() != 1)
      r.fail(where, "a gemm call takes " + std::to_string(n) + " operands and writes one result");
    size_t rank = e.inputs[0].meta.sizes.size();
    if ((rank != 2 && rank != 3) || e.inputs[1].meta.sizes.size() != rank ||
        e.outputs[0].meta.sizes.size() != rank)
      r.fail(where, "gemm operands must be matrices or batches of matrices");
    return e;
  }
  if (e.kind == PlanExtern::Kind::Attention) {
    const json& s = r.at(j, "attn_scale", where);
    const json& c = r.at(j, "causal", where);
    if (!s.is_number() || !std::isfinite(s.get<double>()))
      r.fail(where + ".attn_scale", "not a finite number");
    if (!c.is_boolean()) r.fail(where + ".causal", "not true or false");
    e.attn_scale = s.get<double>();
    e.causal = c.get<bool>();
    // q, k, v [B, H, S, D] and the output [B, Sq, H, Dv]; cuDNN checks the rest at run time.
    bool ok = (e.inputs.size() == 3 || e.inputs.size() == 4) && e.outputs.size() == 1 &&
              e.post_ops.empty() && e.scale.empty() && e.outputs[0].meta.sizes.size() == 4;
    for (size_t i = 0; ok && i < e.inputs.size(); ++i) ok = e.inputs[i].meta.sizes.size() == 4;
    if (!ok)
      r.fail(where, "an attention call takes q, k, v (and a bias) of rank 4 and writes one "
                    "rank-4 result");
    return e;
  }
  if (e.kind == PlanExtern::Kind::ConvBackwardData ||
      e.kind == PlanExtern::Kind::ConvBackwardFilter) {
    // cuDNN's are 2-D (rank 4); oneDNN's (CPU plans) 1-D to 3-D.
    bool ok = e.inputs.size() == 2 && e.outputs.size() == 1 && e.post_ops.empty() &&
              e.scale.empty() && !e.channels_last;
    for (size_t i = 0; ok && i < 3; ++i) {
      size_t rank = (i < 2 ? e.inputs[i] : e.outputs[0]).meta.sizes.size();
      ok = cuda ? rank == 4 : rank >= 3 && rank <= 5;
    }
    if (!ok)
      r.fail(where, std::string("a ") + extern_kind_name(e.kind) + " call takes two operands of " +
                        (cuda ? "rank 4" : "rank 3 to 5") + " and writes one result");
    if (cuda) return e;
    // The oneDNN primitive and the direct loop read every operand as a contiguous float32
    // tensor of the sizes the window arithmetic gives.
    if (std::string why = onednn::shape_error(onednn::backward_shape_of(e)); !why.empty())
      r.fail(where, std::string(extern_kind_name(e.kind)) + " call: " + why);
    for (const PlanView* v : {&e.inputs[0], &e.inputs[1], &e.outputs[0]})
      if (!v->meta.is_contiguous() || v->meta.dtype != DType::F32)
        r.fail(where, std::string(extern_kind_name(e.kind)) +
                          " call operands must be contiguous float32 tensors");
    return e;
  }
  size_t sums = 0;
  try {
    for (const onednn::PostOp& op : onednn::parse_post_ops(e.post_ops))
      sums += op.kind == onednn::PostOp::Kind::Sum;
  } catch (const Error& err) {
    r.fail(where + ".post_ops", err.what());
  }
  if ((e.inputs.size() - sums != 2 && e.inputs.size() - sums != 3) || e.outputs.size() != 1)
    r.fail(where, "a conv call takes x, w (and a bias) and writes one result");
  const onednn::ConvShape shape = onednn::shape_of(e);
  if (std::string why = onednn::shape_error(shape); !why.empty())
    r.fail(where, "conv call: " + why);
  if (e.channels_last && shape.spatial() == 1) r.fail(where, "a channels-last conv call is 1-D");
  // The direct loop and oneDNN read x and the `sum` operands in the call's layout (contiguous
  // or channels-last), the weight contiguous (channels-last on CUDA too), the result as its
  // buffer.
  auto laid_out = [&](const PlanView& v) {
    if (!e.channels_last) return v.meta.is_contiguous();
    std::vector<int64_t> s = v.meta.sizes, st = v.meta.strides;
    if (s.size() < 3 || st.size() != s.size()) return false;
    std::rotate(s.begin() + 1, s.begin() + 2, s.end()); // [N, C, ...] -> [N, ..., C]
    std::rotate(st.begin() + 1, st.begin() + 2, st.end());
    return is_contiguous_layout(s, st);
  };
  bool ok = laid_out(e.inputs[0]) && e.outputs[0].meta.is_contiguous() &&
            (e.inputs[1].meta.is_contiguous() || laid_out(e.inputs[1]));
  for (size_t i = e.inputs.size() - sums; i < e.inputs.size(); ++i)
    ok = ok && laid_out(e.inputs[i]) && e.inputs[i].meta.sizes == shape.out;
  if (!ok) r.fail(where, "conv call operands are not laid out as the call reads them");
  return e;
}

// Checks that the executor can run the plan without touching memory it does not own: every
// index in range, every view inside its slot, and every slot a step uses live at that step.
void validate_plan(const Reader& r, const Plan& p, const std::vector<Tensor>& weights,
                   const std::vector<int64_t>& const_weight, const std::string& where) {
  const size_t nslots = p.slot_bytes.size();
  auto slot_ok = [&](int s, const std::string& what) {
    if (s < 0 || size_t(s) >= nslots)
      r.fail(where, what + " uses slot " + std::to_string(s) + " of " + std::to_string(nslots));
  };
  auto view_ok = [&](const PlanView& v, const std::string& what) {
    slot_ok(v.slot, what);
    int64_t bytes = 0;
    if (!view_extent_bytes(v.meta.sizes, v.meta.strides, v.meta.storage_offset,
                           int64_t(dtype_size(v.meta.dtype)), &bytes) ||
        bytes > p.slot_bytes[size_t(v.slot)])
      r.fail(where, what + " reaches outside slot " + std::to_string(v.slot));
  };
  std::vector<bool> live(nslots, false);
  for (size_t i = 0; i < p.input_slots.size(); ++i) {
    std::string what = "input " + std::to_string(i);
    slot_ok(p.input_slots[i], what);
    const TensorMeta& m = p.input_metas[i];
    if (!m.is_contiguous() || m.storage_offset != 0 ||
        m.numel() * int64_t(dtype_size(m.dtype)) != p.slot_bytes[size_t(p.input_slots[i])])
      r.fail(where, what + " does not fill its slot contiguously");
    live[size_t(p.input_slots[i])] = true;
  }
  for (size_t i = 0; i < p.constant_slots.size(); ++i) {
    int slot = p.constant_slots[i].first;
    std::string what = "constant " + std::to_string(i);
    slot_ok(slot, what);
    if (const_weight[i] < 0 || size_t(const_weight[i]) >= weights.size())
      r.fail(where, what + " names a missing weight");
    const Tensor& t = weights[size_t(const_weight[i])];
    if (t.numel() * int64_t(dtype_size(t.dtype())) != p.slot_bytes[size_t(slot)])
      r.fail(where, what + " does not fill its slot");
    live[size_t(slot)] = true;
  }
  for (size_t i = 0; i < p.kernels.size(); ++i)
    for (int a : p.kernels[i].arg_slots) slot_ok(a, "kernel " + p.kernels[i].name);
  // Prepared slots: written by the prepare steps from constants and other prepared slots only,
  // then live through every run, never allocated, freed or returned by a run.
  std::vector<bool> prepared(nslots, false);
  for (int s : p.prepared_slots) {
    slot_ok(s, "prepared slot");
    if (live[size_t(s)] || prepared[size_t(s)])
      r.fail(where, "prepared slot " + std::to_string(s) +
                        " is also an input, a constant or "
                        "listed twice");
    prepared[size_t(s)] = true;
  }
  std::vector<bool> prep_live(nslots, false);
  for (auto& [slot, t] : p.constant_slots) prep_live[size_t(slot)] = true;
  for (int s : p.prepared_slots) prep_live[size_t(s)] = true;
  for (size_t i = 0; i < p.prepare.size(); ++i) {
    const PlanStep& s = p.prepare[i];
    std::string what = "prepare step " + std::to_string(i);
    auto need = [&](int slot) {
      slot_ok(slot, what);
      if (!prep_live[size_t(slot)])
        r.fail(where, what + " uses slot " + std::to_string(slot) +
                          ", which is neither a constant nor prepared");
    };
    if (s.kind == PlanStep::Kind::Kernel) {
      if (s.index < 0 || size_t(s.index) >= p.kernels.size())
        r.fail(where, what + ": no such kernel");
      for (int a : p.kernels[size_t(s.index)].arg_slots) need(a);
    } else if (s.kind == PlanStep::Kind::Extern) {
      if (s.index < 0 || size_t(s.index) >= p.externs.size())
        r.fail(where, what + ": no such call");
      const PlanExtern& e = p.externs[size_t(s.index)];
      if (e.kind == PlanExtern::Kind::Fallback)
        r.fail(where, what + " is a fallback call, which runs every time");
      for (const PlanView& v : e.inputs) need(v.slot);
      for (const PlanView& v : e.outputs) need(v.slot);
    } else {
      r.fail(where, what + " allocates or frees a slot");
    }
  }
  for (int s : p.prepared_slots) live[size_t(s)] = true;
  for (const PlanExtern& e : p.externs) {
    for (const PlanView& v : e.inputs) view_ok(v, "extern " + e.name);
    for (const PlanView& v : e.outputs) view_ok(v, "extern " + e.name);
  }
  for (size_t i = 0; i < p.outputs.size(); ++i)
    view_ok(p.outputs[i], "output " + std::to_string(i));
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const PlanStep& s = p.steps[i];
    std::string what = "step " + std::to_string(i);
    auto need = [&](int slot) {
      if (!live[size_t(slot)])
        r.fail(where, what + " uses slot " + std::to_string(slot) + " before it is allocated");
    };
    switch (s.kind) {
    case PlanStep::Kind::Alloc:
      slot_ok(s.index, what);
      if (prepared[size_t(s.index)]) r.fail(where, what + " allocates a prepared slot");
      live[size_t(s.index)] = true;
      break;
    case PlanStep::Kind::Free:
      slot_ok(s.index, what);
      if (prepared[size_t(s.index)]) r.fail(where, what + " frees a prepared slot");
      need(s.index);
      live[size_t(s.index)] = false;
      break;
    case PlanStep::Kind::Kernel:
      if (s.index < 0 || size_t(s.index) >= p.kernels.size())
        r.fail(where, what + ": no such kernel");
      for (int a : p.kernels[size_t(s.index)].arg_slots) need(a);
      break;
    case PlanStep::Kind::Extern: {
      if (s.index < 0 || size_t(s.index) >= p.externs.size())
        r.fail(where, what + ": no such call");
      const PlanExtern& e = p.externs[size_t(s.index)];
      for (const PlanView& v : e.inputs) need(v.slot);
      for (const PlanView& v : e.outputs) {
        need(v.slot);
        if (prepared[size_t(v.slot)]) r.fail(where, what + " overwrites a prepared slot");
      }
      break;
    }
    }
  }
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    if (!live[size_t(p.outputs[i].slot)])
      r.fail(where, "output " + std::to_string(i) + " is in a freed slot");
    if (prepared[size_t(p.outputs[i].slot)])
      r.fail(where, "output " + std::to_string(i) + " is in a prepared slot");
  }
}

std::vector<PlanStep> read_steps(const Reader& r, const json& j, const char* key,
                                 const std::string& where) {
  std::vector<PlanStep> out;
  const json& steps = r.array(j, key, where);
  for (size_t i = 0; i < steps.size(); ++i) {
    std::string w = where + "." + key + "[" + std::to_string(i) + "]";
    if (!steps[i].is_array() || steps[i].size() != 2) r.fail(w, "not a [kind, index] pair");
    PlanStep s;
    std::string kind = r.str(steps[i][0], w);
    if (kind == "alloc")
      s.kind = PlanStep::Kind::Alloc;
    else if (kind == "free")
      s.kind = PlanStep::Kind::Free;
    else if (kind == "kernel")
      s.kind = PlanStep::Kind::Kernel;
    else if (kind == "extern")
      s.kind = PlanStep::Kind::Extern;
    else
      r.fail(w, "unknown step '" + kind + "'");
    s.index = int(r.integer(steps[i][1], w, 0, INT32_MAX));
    out.push_back(s);
  }
  return out;
}

Plan read_plan(const Reader& r, const json& j, const std::string& where, bool cuda,
               const std::vector<Tensor>& weights) {
  Plan p;
  p.slot_bytes = r.ints(j, "slot_bytes", where, 0, Tensor::kMaxBytes);
  for (int64_t s : r.ints(j, "input_slots", where, 0, INT32_MAX)) p.input_slots.push_back(int(s));
  const json& metas = r.array(j, "input_metas", where);
  for (size_t i = 0; i < metas.size(); ++i)
    p.input_metas.push_back(r.meta(metas[i], where + ".input_metas[" + std::to_string(i) + "]"));
  if (p.input_metas.size() != p.input_slots.size())
    r.fail(where, "input_slots and input_metas differ in length");
  std::vector<int64_t> const_weight;
  const json& consts = r.array(j, "constant_slots", where);
  for (size_t i = 0; i < consts.size(); ++i) {
    std::string w = where + ".constant_slots[" + std::to_string(i) + "]";
    if (!consts[i].is_array() || consts[i].size() != 2) r.fail(w, "not a [slot, weight] pair");
    int slot = int(r.integer(consts[i][0], w, 0, INT32_MAX));
    const_weight.push_back(r.integer(consts[i][1], w, 0, INT32_MAX));
    p.constant_slots.push_back({slot, Tensor()});
  }
  const json& kernels = r.array(j, "kernels", where);
  std::set<std::string> kernel_names; // entry points of one object or module
  for (size_t i = 0; i < kernels.size(); ++i) {
    std::string w = where + ".kernels[" + std::to_string(i) + "]";
    p.kernels.push_back(read_kernel(r, kernels[i], w, cuda));
    if (!kernel_names.insert(p.kernels.back().name).second)
      r.fail(w, "a second kernel named '" + p.kernels.back().name + "'");
  }
  const json& externs = r.array(j, "externs", where);
  for (size_t i = 0; i < externs.size(); ++i)
    p.externs.push_back(
        read_extern(r, externs[i], where + ".externs[" + std::to_string(i) + "]", cuda));
  p.steps = read_steps(r, j, "steps", where);
  // Files written before freezing have neither field: nothing to prepare.
  if (j.contains("prepare")) {
    p.prepare = read_steps(r, j, "prepare", where);
    for (int64_t s : r.ints(j, "prepared_slots", where, 0, INT32_MAX))
      p.prepared_slots.push_back(int(s));
  }
  p.outputs = read_views(r, j, "outputs", where);
  const json& tf32 = r.at(j, "allow_tf32", where);
  if (!tf32.is_boolean()) r.fail(where + ".allow_tf32", "not true or false");
  p.matmul_tf32 = tf32.get<bool>();
  // Format 4 before --tf32 had one flag for both kinds of call.
  p.conv_tf32 = p.matmul_tf32;
  if (j.contains("conv_tf32")) {
    const json& conv = j.at("conv_tf32");
    if (!conv.is_boolean()) r.fail(where + ".conv_tf32", "not true or false");
    p.conv_tf32 = conv.get<bool>();
  }
  if (j.contains("cuda_graphs")) {
    const json& graphs = j.at("cuda_graphs");
    if (!graphs.is_boolean()) r.fail(where + ".cuda_graphs", "not true or false");
    p.cuda_graphs = graphs.get<bool>();
  }
  validate_plan(r, p, weights, const_weight, where);
  for (size_t i = 0; i < p.constant_slots.size(); ++i)
    p.constant_slots[i].second = weights[size_t(const_weight[i])];
  return p;
}

ArtifactGraph read_graph(const Reader& r, const json& j, const std::string& where,
                         const CompiledArtifact& a, const std::vector<Tensor>& weights) {
  ArtifactGraph g;
  g.role = r.str(j, "role", where);
  if (g.role != "inference" && g.role != "forward" && g.role != "backward" && g.role != "dynamic")
    r.fail(where + ".role", "unknown role '" + g.role + "'");
  std::string kind = r.str(j, "kind", where);
  if (kind == "plan") {
    bool cuda = a.device == "cuda";
    g.kind = ArtifactGraph::Kind::Plan;
    g.plan = read_plan(r, r.at(j, "plan", where), where + ".plan", cuda, weights);
    const json& objects = r.array(j, "objects", where);
    if (cuda && !objects.empty()) r.fail(where + ".objects", "CPU code in a CUDA plan");
    for (size_t k = 0; k < objects.size(); ++k)
      g.objects.emplace_back(r.blob(objects[k], where + ".objects[" + std::to_string(k) + "]"));
    if (!cuda && !g.plan.kernels.empty() && g.objects.empty())
      r.fail(where + ".objects", "kernels without object code");
    const json& ptx = r.at(j, "ptx", where);
    if (!cuda && !ptx.is_null()) r.fail(where + ".ptx", "PTX in a CPU plan");
    if (cuda) g.ptx = std::string(r.blob(ptx, where + ".ptx"));
    if (cuda && !g.plan.kernels.empty() && g.ptx.empty())
      r.fail(where + ".ptx", "kernels without a PTX module");
    for (const json& n : r.array(j, "constant_names", where))
      g.constant_names.push_back(r.str(n, where + ".constant_names"));
    if (g.constant_names.size() != g.plan.constant_slots.size())
      r.fail(where + ".constant_names", "not one name per constant slot");
    return g;
  }
  if (kind != "interpreted") r.fail(where + ".kind", "unknown graph kind '" + kind + "'");
  g.kind = ArtifactGraph::Kind::Interpreted;
  std::map<std::string, WeightData> embedded;
  const json& ws = r.at(j, "weights", where);
  if (!ws.is_object()) r.fail(where + ".weights", "not an object");
  for (auto it = ws.begin(); it != ws.end(); ++it) {
    int64_t i = r.integer(it.value(), where + ".weights", 0, int64_t(weights.size()) - 1);
    const Tensor& t = weights[size_t(i)];
    embedded[it.key()] = WeightData{t.storage(), t.meta(), std::nullopt};
  }
  std::string text(r.blob(r.at(j, "graph", where), where + ".graph"));
  g.graph = std::make_shared<const Graph>(parse_fxg_text(std::move(text), r.source(), embedded));
  return g;
}

size_t user_input_count(const Graph& g) {
  size_t n = 0;
  for (const GraphInput& in : g.inputs) n += in.kind == InputKind::UserInput;
  return n;
}

size_t graph_inputs(const ArtifactGraph& g) {
  return g.kind == ArtifactGraph::Kind::Plan ? g.plan.input_slots.size()
                                             : user_input_count(*g.graph);
}
size_t graph_outputs(const ArtifactGraph& g) {
  return g.kind == ArtifactGraph::Kind::Plan ? g.plan.outputs.size() : g.graph->outputs.size();
}

// The inputs and outputs of the graphs agree with the model's inputs, outputs and training
// bookkeeping. `at` prefixes the fields' names in messages ("models[0].").
void check_signature(const Reader& r, const CompiledArtifact& a, const std::string& at) {
  const bool train = a.mode == "train";
  if (a.graphs.size() != (train ? 2u : 1u) ||
      a.graphs[0].role != (train ? "forward" : "inference") ||
      (train && a.graphs[1].role != "backward"))
    r.fail(at + "graphs", train ? "train mode needs a forward and a backward graph"
                                : "inference needs one inference graph");
  for (const ArtifactGraph& g : a.graphs)
    if (g.kind != a.graphs[0].kind) r.fail(at + "graphs", "mixes plans and interpreted graphs");
  const ArtifactGraph& fw = a.graphs[0];
  if (graph_inputs(fw) != a.inputs.size())
    r.fail(at + "inputs", std::to_string(a.inputs.size()) + " guards for a graph of " +
                              std::to_string(graph_inputs(fw)) + " inputs");
  if (fw.kind == ArtifactGraph::Kind::Plan)
    for (size_t i = 0; i < a.inputs.size(); ++i)
      if (a.inputs[i].meta.dtype != fw.plan.input_metas[i].dtype ||
          a.inputs[i].meta.sizes != fw.plan.input_metas[i].sizes)
        r.fail(at + "inputs[" + std::to_string(i) + "]", "the guard disagrees with the plan");
  size_t fw_out = graph_outputs(fw);
  if (!train) {
    if (a.outputs.size() != fw_out) r.fail(at + "outputs", "count differs from the graph's");
    return;
  }
  if (a.num_user_outputs > fw_out) r.fail(at + "num_user_outputs", "more than the forward returns");
  for (size_t t : a.tangent_output_index)
    if (t >= a.num_user_outputs) r.fail(at + "tangent_output_index", "names no user output");
  const ArtifactGraph& bw = a.graphs[1];
  if (graph_inputs(bw) != fw_out - a.num_user_outputs + a.tangent_output_index.size())
    r.fail(at + "graphs[1]", "the backward's inputs do not match the forward's saved values");
  if (a.outputs.size() != a.num_user_outputs + graph_outputs(bw))
    r.fail(at + "outputs", "count differs from the graphs'");
}

// ---------------------------------------------------------------------------------------------
// Payload.

std::string decompress(std::string_view in, uint64_t expected, const std::string& source) {
  unsigned long long declared = ZSTD_getFrameContentSize(in.data(), in.size());
  if (declared == ZSTD_CONTENTSIZE_ERROR || declared != expected)
    throw Error(source, "corrupt artifact: the payload is not the zstd frame the header describes");
  std::unique_ptr<ZSTD_DStream, size_t (*)(ZSTD_DStream*)> ds(ZSTD_createDStream(),
                                                              ZSTD_freeDStream);
  ZSTD_initDStream(ds.get());
  std::string out;
  std::vector<char> buf(ZSTD_DStreamOutSize());
  ZSTD_inBuffer ib{in.data(), in.size(), 0};
  size_t ret = 0;
  for (;;) {
    ZSTD_outBuffer ob{buf.data(), buf.size(), 0};
    ret = ZSTD_decompressStream(ds.get(), &ob, &ib);
    if (ZSTD_isError(ret))
      throw Error(source, std::string("corrupt artifact: ") + ZSTD_getErrorName(ret));
    if (out.size() + ob.pos > expected)
      throw Error(source, "corrupt artifact: the payload is larger than the header says");
    out.append(buf.data(), ob.pos);
    if (ret == 0 || (ib.pos == ib.size && ob.pos < ob.size)) break;
  }
  if (ret != 0 || out.size() != expected || ib.pos != ib.size)
    throw Error(source, "corrupt artifact: truncated payload");
  return out;
}

} // namespace

// ---------------------------------------------------------------------------------------------

std::vector<std::string> name_constants(const Plan& plan, const Graph& graph) {
  std::vector<std::string> names;
  for (const auto& [slot, t] : plan.constant_slots) {
    std::string name;
    for (const auto& [fqn, w] : graph.weights)
      if (w.storage == t.storage() && w.meta.dtype == t.dtype() && w.meta.sizes == t.sizes() &&
          w.meta.strides == t.strides() && w.meta.storage_offset == t.storage_offset()) {
        name = fqn;
        break;
      }
    names.push_back(name);
  }
  return names;
}

namespace {

// One model of the manifest's "models": its signature and its graphs (weights and blobs go to
// the Writer, shared by all models).
ojson write_model(const CompiledArtifact& a, Writer& w) {
  ojson m;
  m["name"] = a.name;
  m["backend"] = a.backend;
  m["device"] = a.device;
  m["cuda_arch"] = a.cuda_arch;
  m["mode"] = a.mode;
  if (!a.dtype.empty()) m["dtype"] = a.dtype; // written only when given: older files lack it
  m["kind"] = a.graphs.empty() ? "plan" : kind_name(a.graphs[0].kind);
  ojson inputs = ojson::array();
  for (const InputGuard& g : a.inputs)
    inputs.push_back(
        ojson{{"name", g.name}, {"meta", write_meta(g.meta)}, {"int_bound", g.int_bound}});
  m["inputs"] = inputs;
  m["outputs"] = a.outputs;
  m["num_user_outputs"] = a.num_user_outputs;
  m["tangent_output_index"] = a.tangent_output_index;
  m["custom_ops"] = a.custom_ops;
  ojson graphs = ojson::array();
  for (const ArtifactGraph& g : a.graphs) graphs.push_back(write_graph(g, a, w));
  m["graphs"] = graphs;
  if (a.symbolic) { // the dynamic graph and where the plans were compiled
    ArtifactGraph dyn;
    dyn.kind = ArtifactGraph::Kind::Interpreted;
    dyn.role = "dynamic";
    dyn.graph = a.symbolic;
    ojson d = write_graph(dyn, a, w);
    d["bindings"] = a.bindings;
    if (!a.generic.symbol.empty()) {
      ojson fields = ojson::array();
      for (const SizeGeneric::Field& f : a.generic.fields)
        fields.push_back(ojson::array({f.graph, f.pointer, f.c0, f.c1, f.c2}));
      d["generic"] =
          ojson{{"symbol", a.generic.symbol}, {"base", a.generic.base}, {"fields", fields}};
    }
    m["dynamic"] = d;
  }
  return m;
}

// ---------------------------------------------------------------------------------------------
// Size-generic plans (docs/dynamic.md, "Plans at every size").

/// `key` escaped for a JSON pointer ("~" as "~0", "/" as "~1").
std::string pointer_token(const std::string& key) {
  std::string out;
  for (char ch : key) {
    if (ch == '~')
      out += "~0";
    else if (ch == '/')
      out += "~1";
    else
      out += ch;
  }
  return out;
}

/// Walks the same place `ptr` of one plan's JSON at four consecutive symbol values: the structure,
/// strings, booleans and floats must agree; an integer that changes must be c0 + c1·t +
/// c2·t(t-1)/2 at t = 0..3 (a field). Returns "" or where they differ otherwise.
std::string fit_plan_fields(const std::array<const ojson*, 4>& v, const std::string& ptr,
                            size_t graph, std::vector<SizeGeneric::Field>* out) {
  const ojson& a = *v[0];
  auto differs = [&] { return "the plans differ between sizes at " + (ptr.empty() ? "/" : ptr); };
  for (size_t k = 1; k < 4; ++k)
    if (v[k]->is_number_integer() != a.is_number_integer() ||
        (!a.is_number_integer() && v[k]->type() != a.type()))
      return differs();
  if (a.is_object()) {
    for (size_t k = 1; k < 4; ++k)
      if (v[k]->size() != a.size()) return differs();
    for (auto it = a.begin(); it != a.end(); ++it) {
      std::array<const ojson*, 4> next{&it.value(), nullptr, nullptr, nullptr};
      for (size_t k = 1; k < 4; ++k) {
        auto f = v[k]->find(it.key());
        if (f == v[k]->end()) return differs();
        next[k] = &*f;
      }
      if (std::string why = fit_plan_fields(next, ptr + "/" + pointer_token(it.key()), graph, out);
          !why.empty())
        return why;
    }
    return "";
  }
  if (a.is_array()) {
    for (size_t k = 1; k < 4; ++k)
      if (v[k]->size() != a.size()) return differs();
    for (size_t i = 0; i < a.size(); ++i) {
      std::array<const ojson*, 4> next{&a[i], &(*v[1])[i], &(*v[2])[i], &(*v[3])[i]};
      if (std::string why = fit_plan_fields(next, ptr + "/" + std::to_string(i), graph, out);
          !why.empty())
        return why;
    }
    return "";
  }
  if (!a.is_number_integer()) {
    for (size_t k = 1; k < 4; ++k)
      if (*v[k] != a) return differs();
    return "";
  }
  std::array<__int128, 4> f{};
  for (size_t k = 0; k < 4; ++k) {
    if (v[k]->is_number_unsigned() && v[k]->get<uint64_t>() > uint64_t(INT64_MAX)) return differs();
    f[k] = v[k]->get<int64_t>();
  }
  if (f[0] == f[1] && f[1] == f[2] && f[2] == f[3]) return "";
  __int128 c0 = f[0], c1 = f[1] - f[0], c2 = f[2] - 2 * f[1] + f[0];
  if (f[3] != c0 + 3 * c1 + 3 * c2)
    return "a number of the plans is no polynomial of degree two in the size at " + ptr;
  auto fits = [](__int128 x) { return x >= INT64_MIN && x <= INT64_MAX; };
  if (!fits(c1) || !fits(c2)) return differs();
  out->push_back({graph, ptr, int64_t(c0), int64_t(c1), int64_t(c2)});
  return "";
}

} // namespace

struct GenericPlanSource {
  std::string blobs;           ///< the blob area (fallback graphs)
  std::vector<Tensor> weights; ///< the weight table
  std::vector<json> plans;     ///< per graph: its "plan" as the file spells it (null: none)
};

std::optional<int64_t> SizeGeneric::at(const Field& f, int64_t value) const {
  __int128 t = __int128(value) - base;
  __int128 v = __int128(f.c0) + __int128(f.c1) * t + __int128(f.c2) * (t * (t - 1) / 2);
  if (v < INT64_MIN || v > INT64_MAX) return std::nullopt;
  return int64_t(v);
}

std::string make_size_generic(CompiledArtifact& a,
                              const std::vector<std::pair<int64_t, const CompiledArtifact*>>& at) {
  if (!a.symbolic || a.symbolic->symbols.size() != 1 || a.mode != "inference")
    return "not an inference artifact with one symbol";
  if (at.size() != 4) return "not four compiles";
  const std::string& sym = a.symbolic->symbols[0].name;
  for (size_t k = 0; k < 4; ++k)
    if (at[k].first != at[0].first + int64_t(k)) return "the sizes are not consecutive";
  bool self = false;
  for (const auto& [value, x] : at) {
    self |= x == &a;
    if (x->graphs.size() != a.graphs.size() || x->device != a.device || x->outputs != a.outputs)
      return "the compiles differ in their graphs";
  }
  if (!self || a.bindings.at(sym) < at[0].first || a.bindings.at(sym) > at[3].first)
    return "the artifact is not among the compiles";
  bool cuda = a.device == "cuda";
  std::vector<SizeGeneric::Field> fields;
  for (size_t gi = 0; gi < a.graphs.size(); ++gi) {
    const ArtifactGraph& g = a.graphs[gi];
    if (g.kind != ArtifactGraph::Kind::Plan) return "a graph runs on the interpreter";
    std::array<ojson, 4> plans;
    std::array<Writer, 4> writers;
    for (size_t k = 0; k < 4; ++k) {
      const ArtifactGraph& x = at[k].second->graphs[gi];
      if (x.kind != g.kind || x.role != g.role || x.constant_names != g.constant_names)
        return "the compiles differ in their graphs";
      if (x.objects != g.objects || x.ptx != g.ptx)
        return "the kernels' code differs between sizes";
      if (x.plan.constant_slots.size() != g.plan.constant_slots.size())
        return "the plans differ in their constants";
      for (size_t c = 0; c < g.plan.constant_slots.size(); ++c) {
        const Tensor& t = g.plan.constant_slots[c].second;
        const Tensor& u = x.plan.constant_slots[c].second;
        if (t.meta() != u.meta()) return "a constant of the plans differs between sizes";
        if (t.storage() != u.storage()) {
          size_t n = size_t(t.numel()) * dtype_size(t.dtype());
          if (n && std::memcmp(t.raw_data(), u.raw_data(), n) != 0)
            return "a constant of the plans differs between sizes";
        }
      }
      plans[k] = write_plan(x, cuda, a.name, writers[k]);
      if (writers[k].blobs() != writers[0].blobs())
        return "a fallback call's graph differs between sizes";
    }
    if (std::string why =
            fit_plan_fields({&plans[0], &plans[1], &plans[2], &plans[3]}, "", gi, &fields);
        !why.empty())
      return why;
  }
  a.generic.symbol = sym;
  a.generic.base = at[0].first;
  a.generic.fields = std::move(fields);
  return "";
}

std::vector<ArtifactGraph> instantiate_size_generic(const CompiledArtifact& a, int64_t value,
                                                    const std::string& source) {
  if (a.generic.symbol.empty() || !a.generic_source)
    throw Error(source, "internal error: the artifact's plans hold at one size only");
  const GenericPlanSource& src = *a.generic_source;
  std::vector<json> plans = src.plans;
  for (const SizeGeneric::Field& f : a.generic.fields) {
    std::optional<int64_t> v = a.generic.at(f, value);
    if (!v || *v < 0)
      throw Error(source, "the plans at " + a.generic.symbol + "=" + std::to_string(value) +
                              " give " + f.pointer + " no valid value");
    plans.at(f.graph)[json::json_pointer(f.pointer)] = *v;
  }
  Reader r(source, src.blobs);
  std::vector<ArtifactGraph> out;
  for (size_t i = 0; i < a.graphs.size(); ++i) {
    ArtifactGraph g = a.graphs[i];
    if (g.kind == ArtifactGraph::Kind::Plan)
      g.plan = read_plan(r, plans[i],
                         "graphs[" + std::to_string(i) + "].plan at " + a.generic.symbol + "=" +
                             std::to_string(value),
                         a.device == "cuda", src.weights);
    out.push_back(std::move(g));
  }
  return out;
}

namespace {} // namespace

void write_artifact(const CompiledArtifact& a, const ArtifactSink& sink) {
  write_artifact(std::vector<const CompiledArtifact*>{&a}, sink);
}

void write_artifact(const std::vector<const CompiledArtifact*>& models, const ArtifactSink& sink) {
  if (models.empty()) throw Error("", "an artifact needs at least one model");
  std::set<std::string> names;
  for (const CompiledArtifact* a : models) {
    if (a->name.empty()) throw Error("", "a model of an artifact needs a name");
    if (!names.insert(a->name).second)
      throw Error(a->name, "two models named '" + a->name +
                               "' in one artifact (models are chosen by name; rename one)");
  }
  const CompiledArtifact& first = *models[0];
  Writer w;
  ojson m;
  m["format"] = "fxo";
  m["version"] = kArtifactFormatVersion;
  m["fxc_version"] = FXC_VERSION;
  ojson list = ojson::array();
  for (const CompiledArtifact* a : models) list.push_back(write_model(*a, w));
  m["models"] = list;
  m["weights"] = w.weights();
  m["weight_chunks"] = ojson{{"bytes", kWeightChunk}, {"xxh3", w.chunk_checksums()}};

  std::string manifest = m.dump(1);
  std::string payload(8, '\0');
  put_u64(payload, 0, manifest.size());
  payload += manifest;
  payload += w.blobs();

  std::string out(kHeaderBytes, '\0');
  out.resize(kHeaderBytes + ZSTD_compressBound(payload.size()));
  size_t n = ZSTD_compress(out.data() + kHeaderBytes, out.size() - kHeaderBytes, payload.data(),
                           payload.size(), kZstdLevel);
  if (ZSTD_isError(n))
    throw Error(first.name, std::string("cannot compress: ") + ZSTD_getErrorName(n));
  out.resize(kHeaderBytes + n);
  const uint64_t wbytes = w.weight_bytes();
  const uint64_t woff = wbytes ? align_up(out.size(), kPage) : out.size();
  std::memcpy(out.data(), kMagic, 4);
  put_u32(out, kVersionOffset, kArtifactFormatVersion);
  std::string version = FXC_VERSION;
  std::memcpy(out.data() + kFxcVersionOffset, version.data(),
              std::min(version.size(), kFxcVersionBytes - 1));
  put_u64(out, kCompressedOffset, n);
  put_u64(out, kUncompressedOffset, payload.size());
  put_u64(out, kWeightsOffsetOffset, woff);
  put_u64(out, kWeightsSizeOffset, wbytes);
  put_u64(out, kChecksumOffset, checksum(out, std::string_view(out).substr(kHeaderBytes)));
  out.resize(size_t(woff), '\0'); // the weight section starts on a page
  sink(out);
  out = std::string();
  static const char zeros[4096] = {};
  for (const WeightPiece& p : w.pieces()) {
    if (p.data) {
      sink(std::string_view(reinterpret_cast<const char*>(p.data), size_t(p.size)));
      continue;
    }
    for (uint64_t left = p.size; left > 0;) {
      uint64_t k = std::min<uint64_t>(left, sizeof zeros);
      sink(std::string_view(zeros, size_t(k)));
      left -= k;
    }
  }
}

std::string serialize_artifact(const CompiledArtifact& a) {
  return serialize_artifact(std::vector<const CompiledArtifact*>{&a});
}

std::string serialize_artifact(const std::vector<const CompiledArtifact*>& models) {
  std::string out;
  write_artifact(models, [&](std::string_view b) { out.append(b); });
  return out;
}

bool is_artifact(std::string_view bytes) {
  return bytes.size() >= 4 && std::memcmp(bytes.data(), kMagic, 4) == 0;
}

CompiledArtifact parse_artifact(std::string_view bytes, const std::string& source,
                                const std::string& model) {
  return parse_artifact(ArtifactBytes::copy(bytes), source, model);
}

namespace {

// A dynamic model's "generic" entry: its symbol and fields, each checked to name an integer of a
// plan that it gives at the plans' own binding; keeps what instantiate_size_generic() reads.
void read_size_generic(const Reader& r, const json& j, const json& model, const std::string& where,
                       const std::vector<Tensor>& weight_table, CompiledArtifact* a) {
  SizeGeneric gen;
  gen.symbol = r.str(j, "symbol", where);
  if (a->symbolic->symbols.size() != 1 || a->symbolic->symbols[0].name != gen.symbol)
    r.fail(where + ".symbol", "not the graph's one symbol");
  gen.base = r.integer(j, "base", where, 0, INT64_MAX);
  auto src = std::make_shared<GenericPlanSource>();
  src->blobs = std::string(r.blobs());
  src->weights = weight_table;
  const json& graphs = r.array(model, "graphs", where);
  for (const json& g : graphs) src->plans.push_back(g.contains("plan") ? g.at("plan") : json());
  const json& fields = r.array(j, "fields", where);
  const int64_t bound = a->bindings.at(gen.symbol);
  for (size_t i = 0; i < fields.size(); ++i) {
    std::string w = where + ".fields[" + std::to_string(i) + "]";
    const json& f = fields[i];
    if (!f.is_array() || f.size() != 5) r.fail(w, "not [graph, pointer, c0, c1, c2]");
    SizeGeneric::Field field;
    field.graph = size_t(r.integer(f[0], w, 0, int64_t(a->graphs.size()) - 1));
    field.pointer = r.str(f[1], w);
    field.c0 = r.integer(f[2], w, INT64_MIN, INT64_MAX);
    field.c1 = r.integer(f[3], w, INT64_MIN, INT64_MAX);
    field.c2 = r.integer(f[4], w, INT64_MIN, INT64_MAX);
    const json& plan = src->plans[field.graph];
    const json* target = nullptr;
    try {
      json::json_pointer ptr(field.pointer);
      if (!plan.is_null() && plan.contains(ptr)) target = &plan.at(ptr);
    } catch (const json::exception&) {
    }
    if (!target || !target->is_number_integer()) r.fail(w, "names no number of a plan");
    if (gen.at(field, bound) != target->get<int64_t>())
      r.fail(w,
             "does not give the plan's own value at " + gen.symbol + "=" + std::to_string(bound));
    gen.fields.push_back(std::move(field));
  }
  a->generic = std::move(gen);
  a->generic_source = std::move(src);
}

// One model of the manifest's "models" (`top`: "models[0]"), its weights from the shared table.
CompiledArtifact read_model(const Reader& r, const json& m, const std::string& top,
                            const std::vector<Tensor>& weight_table) {
  CompiledArtifact a;
  a.name = r.str(m, "name", top);
  a.backend = r.str(m, "backend", top);
  if (a.backend != "eager" && a.backend != "aot_eager" &&
      a.backend != "aot_eager_decomp_partition" && a.backend != "inductor")
    r.fail(top + ".backend", "unknown backend '" + a.backend + "'");
  a.device = r.str(m, "device", top);
  if (a.device != "cpu" && a.device != "cuda") r.fail(top + ".device", "unknown device");
  a.cuda_arch = r.str(m, "cuda_arch", top);
  a.mode = r.str(m, "mode", top);
  if (a.mode != "inference" && a.mode != "train") r.fail(top + ".mode", "unknown mode");
  if (m.contains("dtype")) a.dtype = r.str(m, "dtype", top);
  const json& ins = r.array(m, "inputs", top);
  for (size_t i = 0; i < ins.size(); ++i) {
    std::string where = top + ".inputs[" + std::to_string(i) + "]";
    InputGuard g;
    g.name = r.str(ins[i], "name", where);
    g.meta = r.meta(r.at(ins[i], "meta", where), where + ".meta");
    g.int_bound = r.integer(ins[i], "int_bound", where, 0, INT64_MAX);
    a.inputs.push_back(g);
  }
  for (const json& o : r.array(m, "outputs", top)) a.outputs.push_back(r.str(o, top + ".outputs"));
  a.num_user_outputs = size_t(r.integer(m, "num_user_outputs", top, 0, INT32_MAX));
  for (int64_t t : r.ints(m, "tangent_output_index", top, 0, INT32_MAX))
    a.tangent_output_index.push_back(size_t(t));
  for (const json& o : r.array(m, "custom_ops", top))
    a.custom_ops.push_back(r.str(o, top + ".custom_ops"));
  const json& graphs = r.array(m, "graphs", top);
  for (size_t i = 0; i < graphs.size(); ++i) {
    a.graphs.push_back(
        read_graph(r, graphs[i], top + ".graphs[" + std::to_string(i) + "]", a, weight_table));
    if (a.graphs.back().role == "dynamic")
      r.fail(top + ".graphs[" + std::to_string(i) + "]", "a dynamic graph among the plans");
  }
  if (auto d = m.find("dynamic"); d != m.end() && !d->is_null()) {
    ArtifactGraph dyn = read_graph(r, *d, top + ".dynamic", a, weight_table);
    if (dyn.role != "dynamic" || dyn.kind != ArtifactGraph::Kind::Interpreted ||
        !dyn.graph->is_dynamic() || a.mode != "inference")
      r.fail(top + ".dynamic", "not an inference artifact's interpreted graph with symbols");
    const json& b = r.at(*d, "bindings", top + ".dynamic");
    if (!b.is_object()) r.fail(top + ".dynamic.bindings", "not an object");
    for (auto it = b.begin(); it != b.end(); ++it)
      a.bindings[it.key()] = r.integer(it.value(), top + ".dynamic.bindings", 0, INT64_MAX);
    if (a.bindings.size() != dyn.graph->symbols.size())
      r.fail(top + ".dynamic.bindings", "one value per symbol");
    for (const SymbolRange& sr : dyn.graph->symbols) {
      auto it = a.bindings.find(sr.name);
      if (it == a.bindings.end() || it->second < sr.min || it->second > sr.max)
        r.fail(top + ".dynamic.bindings", "no value in range for " + sr.name);
    }
    if (user_input_count(*dyn.graph) != a.inputs.size())
      r.fail(top + ".dynamic", "its inputs differ from the guards'");
    a.symbolic = dyn.graph;
    if (auto gen = d->find("generic"); gen != d->end())
      read_size_generic(r, *gen, m, top + ".dynamic.generic", weight_table, &a);
  }
  if (r.str(m, "kind", top) != (a.graphs.empty() ? "plan" : kind_name(a.graphs[0].kind)))
    r.fail(top + ".kind", "differs from the graphs' kind");
  check_signature(r, a, top + ".");
  return a;
}

// Checks an artifact's header, checksums and payload, reads its manifest and weight table, and
// gives them to `f(reader, models, weight_table, names)`: the manifest's "models" and their
// names (unique, not empty).
template <class F>
auto read_manifest(const std::shared_ptr<const ArtifactBytes>& file, const std::string& source,
                   F&& f) {
  const std::string_view bytes = file->view();
  if (!is_artifact(bytes)) throw Error(source, "not an fxc artifact (no FXO magic number)");
  if (bytes.size() < kHeaderBytes)
    throw Error(source, "truncated artifact: " + std::to_string(bytes.size()) +
                            " bytes, shorter than its header");
  uint32_t version = get_u32(bytes, kVersionOffset);
  std::string_view fv = bytes.substr(kFxcVersionOffset, kFxcVersionBytes);
  std::string writer(fv.substr(0, std::min(fv.find('\0'), fv.size())));
  for (char c : writer)
    if (c < 0x20 || c > 0x7e) writer = "?";
  if (version != kArtifactFormatVersion)
    throw Error(source, "artifact format version " + std::to_string(version) + " (written by fxc " +
                            writer + ") is not supported; this fxc " FXC_VERSION " reads version " +
                            std::to_string(kArtifactFormatVersion));
  uint64_t csize = get_u64(bytes, kCompressedOffset), usize = get_u64(bytes, kUncompressedOffset);
  uint64_t woff = get_u64(bytes, kWeightsOffsetOffset), wsize = get_u64(bytes, kWeightsSizeOffset);
  uint64_t have = bytes.size() - kHeaderBytes;
  if (csize > have)
    throw Error(source, "truncated artifact: the header promises " + std::to_string(csize) +
                            " payload bytes, the file has " + std::to_string(have));
  const uint64_t payload_end = kHeaderBytes + csize;
  const uint64_t want_woff = wsize ? align_up(payload_end, kPage) : payload_end;
  if (woff != want_woff)
    throw Error(source, "corrupt artifact: the weight section starts at byte " +
                            std::to_string(woff) + ", not " + std::to_string(want_woff));
  if (wsize > bytes.size() - std::min<uint64_t>(woff, bytes.size()) || woff > bytes.size())
    throw Error(source, "truncated artifact: the header promises " + std::to_string(wsize) +
                            " bytes of weights at byte " + std::to_string(woff) +
                            ", the file has " + std::to_string(bytes.size()));
  if (woff + wsize < bytes.size())
    throw Error(source, "corrupt artifact: " + std::to_string(bytes.size() - woff - wsize) +
                            " bytes after the weights");
  std::string_view payload = bytes.substr(kHeaderBytes, size_t(csize));
  if (checksum(bytes, payload) != get_u64(bytes, kChecksumOffset))
    throw Error(source, "corrupt artifact: checksum mismatch");
  for (uint64_t i = payload_end; i < woff; ++i)
    if (bytes[size_t(i)] != '\0')
      throw Error(source, "corrupt artifact: the padding before the weights is not zero");
  if (usize > kMaxPayloadBytes || usize < 8)
    throw Error(source, "corrupt artifact: bad payload size " + std::to_string(usize));
  std::string data = decompress(payload, usize, source);
  uint64_t mlen = get_u64(data, 0);
  if (mlen > data.size() - 8) throw Error(source, "corrupt artifact: manifest size");
  std::string text = data.substr(8, size_t(mlen));
  if (json_nesting_depth(text) > kMaxJsonDepth)
    throw Error(source, "corrupt artifact: manifest nested too deeply");
  json m;
  try {
    m = json::parse(text);
  } catch (const json::exception& e) {
    throw Error(source, std::string("corrupt artifact: manifest: ") + e.what());
  }
  const std::string_view weights = bytes.substr(size_t(woff), size_t(wsize));
  Reader r(source, std::string_view(data).substr(size_t(8 + mlen)), weights, file);
  if (r.str(m, "format", "manifest") != "fxo") r.fail("manifest", "not an fxo manifest");
  if (r.integer(m, "version", "manifest", 0, INT32_MAX) != kArtifactFormatVersion)
    r.fail("manifest", "the manifest's version differs from the header's");
  check_weight_chunks(r, m, weights);
  std::vector<Tensor> weight_table = read_weights(r, m);
  const json& models = r.array(m, "models", "manifest");
  if (models.empty()) r.fail("manifest.models", "no models");
  std::vector<std::string> names;
  for (size_t i = 0; i < models.size(); ++i) {
    std::string where = "models[" + std::to_string(i) + "]";
    names.push_back(r.str(models[i], "name", where));
    if (names.back().empty()) r.fail(where + ".name", "empty");
    if (std::find(names.begin(), names.end() - 1, names.back()) != names.end() - 1)
      r.fail(where + ".name", "a second model named '" + names.back() + "'");
  }
  return f(r, models, weight_table, names);
}

} // namespace

CompiledArtifact parse_artifact(std::shared_ptr<const ArtifactBytes> file,
                                const std::string& source, const std::string& model) {
  return read_manifest(
      file, source,
      [&](const Reader& r, const json& models, const std::vector<Tensor>& weights,
          std::vector<std::string>& names) {
        size_t i = 0;
        if (!model.empty()) {
          i = size_t(std::find(names.begin(), names.end(), model) - names.begin());
          if (i == names.size()) {
            std::string held;
            for (const std::string& n : names) held += (held.empty() ? "'" : ", '") + n + "'";
            throw NoSuchModel(source,
                              "no model '" + model + "' in this artifact (it holds " + held + ")");
          }
        }
        CompiledArtifact a = read_model(r, models[i], "models[" + std::to_string(i) + "]", weights);
        a.models_in_file = std::move(names);
        return a;
      });
}

std::vector<CompiledArtifact> parse_artifact_models(std::shared_ptr<const ArtifactBytes> file,
                                                    const std::string& source) {
  return read_manifest(
      file, source,
      [&](const Reader& r, const json& models, const std::vector<Tensor>& weights,
          std::vector<std::string>& names) {
        std::vector<CompiledArtifact> out;
        for (size_t i = 0; i < models.size(); ++i) {
          out.push_back(read_model(r, models[i], "models[" + std::to_string(i) + "]", weights));
          out.back().models_in_file = names;
        }
        return out;
      });
}

CompiledArtifact read_artifact_file(const std::string& path, const std::string& model) {
  return parse_artifact(ArtifactBytes::map_file(path), path, model);
}

// ---------------------------------------------------------------------------------------------
// The bytes of an artifact.

ArtifactBytes::~ArtifactBytes() {
  if (mapped_)
    ::munmap(data_, size_);
  else
    ::operator delete(data_, std::align_val_t(kPage));
}

std::shared_ptr<const ArtifactBytes> ArtifactBytes::copy(std::string_view bytes) {
  auto b = std::shared_ptr<ArtifactBytes>(new ArtifactBytes());
  b->data_ = static_cast<char*>(
      ::operator new(std::max<size_t>(bytes.size(), 1), std::align_val_t(kPage)));
  b->size_ = bytes.size();
  if (!bytes.empty()) std::memcpy(b->data_, bytes.data(), bytes.size());
  return b;
}

std::shared_ptr<const ArtifactBytes> ArtifactBytes::map_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st{};
  if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
    if (fd >= 0) ::close(fd);
    return copy(read_file_bytes(path)); // its message for a missing file; pipes; empty files
  }
  // Private and writable: pages are shared with the page cache until written (never, by the
  // runtime), so a weight is used where it lies and the file is never changed.
  void* p = ::mmap(nullptr, size_t(st.st_size), PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  int err = errno;
  ::close(fd);
  if (p == MAP_FAILED) throw Error(path, std::string("cannot map: ") + std::strerror(err));
  auto b = std::shared_ptr<ArtifactBytes>(new ArtifactBytes());
  b->data_ = static_cast<char*>(p);
  b->size_ = size_t(st.st_size);
  b->mapped_ = true;
  return b;
}

// ---------------------------------------------------------------------------------------------
// Loading and running.

namespace {

struct LoadedGraph {
  std::vector<std::unique_ptr<ElfObject>> objects;    // CPU: the kernels' code
  std::vector<std::unique_ptr<cuda::Module>> modules; // CUDA: one module, every kernel
};

/// What runs use of one graph, replaced as a whole by a weight swap: a run holds the version it
/// started with, so runs in flight finish on the old weights (double buffering).
struct LiveGraph {
  std::shared_ptr<const Plan> plan;     // the plan with the weights of this version
  std::unique_ptr<CudaPlanRunner> cuda; // CUDA: its runner (device copies of the weights)
};

CudaRunnerOptions runner_options(const Plan& plan, int device) {
  CudaRunnerOptions o;
  o.cuda_graphs = plan.cuda_graphs;
  o.device = device;
  return o;
}

} // namespace

std::string check_input_guard(size_t i, const InputGuard& g, const TensorMeta& m) {
  std::string who = "input_" + std::to_string(i) + " '" + g.name + "': ";
  if (m.dtype != g.meta.dtype)
    return who + "dtype guard failed: expected " + std::string(dtype_name(g.meta.dtype)) +
           ", got " + std::string(dtype_name(m.dtype));
  if (m.sizes != g.meta.sizes)
    return who + "shape guard failed: expected " + format_meta(g.meta) + ", got " + format_meta(m);
  for (size_t d = 0; d < m.sizes.size(); ++d)
    if (m.sizes[d] > 1 && m.strides[d] != g.meta.strides[d])
      return who + "strides guard failed: expected " + format_meta_with_strides(g.meta) + ", got " +
             format_meta_with_strides(m);
  if (m.device.kind != g.meta.device.kind)
    return who + "device guard failed: expected " + device_name(g.meta.device) + ", got " +
           device_name(m.device);
  return {};
}

struct LoadedModel::Impl {
  CompiledArtifact a;
  std::string source;
  std::vector<LoadedGraph> graphs; // parallel to a.graphs
  std::unique_ptr<ThreadPool> pool;
  std::mutex pool_mu; // held by the run using `pool`; concurrent runs use their own thread
  std::mutex live_mu; // guards `live` (the pointers, not what they point to)
  std::vector<std::shared_ptr<LiveGraph>> live; // parallel to a.graphs
  std::mutex cuda_mu; // CUDA runners hold device buffers: their runs are serialized
  std::mutex spec_mu; // guards specialized_cache
  std::vector<TensorMeta> output_metas;
  int cuda_device = -1; // the ordinal a CUDA artifact runs on
  double load_ms = 0;
  /// Dynamic artifacts: the graph specialized to the last few bindings other than the plans'.
  std::vector<std::pair<SymBindings, std::shared_ptr<const Graph>>> specialized_cache;
  /// Size-generic artifacts: the plans at the last few values of the symbol other than the
  /// compiled one (guarded by spec_mu).
  std::vector<std::pair<int64_t, std::shared_ptr<LiveGraph>>> generic_cache;

  // The guards: static ones as compiled; a dynamic artifact's sizes by its symbols' ranges.
  std::string check_guards(const std::vector<TensorMeta>& inputs, SymBindings* b) const {
    const std::vector<InputGuard>& gs = a.inputs;
    if (inputs.size() != gs.size())
      return "expected " + std::to_string(gs.size()) + " inputs, got " +
             std::to_string(inputs.size());
    if (!a.symbolic) {
      for (size_t i = 0; i < gs.size(); ++i)
        if (std::string f = check_input_guard(i, gs[i], inputs[i]); !f.empty()) return f;
      return {};
    }
    if (std::string f = bind_symbols(*a.symbolic, inputs, b); !f.empty()) return f;
    for (size_t i = 0; i < gs.size(); ++i) { // dtype, strides, device at the sizes given
      InputGuard g = gs[i];
      g.meta.sizes = inputs[i].sizes;
      g.meta.strides = contiguous_strides(g.meta.sizes);
      if (std::string f = check_input_guard(i, g, inputs[i]); !f.empty()) return f;
    }
    return {};
  }

  // The dynamic graph at `b`; the last four are kept.
  std::shared_ptr<const Graph> specialized(const SymBindings& b) {
    std::lock_guard<std::mutex> lock(spec_mu);
    for (const auto& [key, g] : specialized_cache)
      if (key == b) return g;
    auto g = std::make_shared<const Graph>(specialize(*a.symbolic, b));
    if (specialized_cache.size() == 4) specialized_cache.erase(specialized_cache.begin());
    specialized_cache.push_back({b, g});
    return g;
  }

  // A size-generic artifact's inference plan at `b` (its one symbol's value), made from the
  // compiled plan's kernels and the generic numbers; the last four are kept. Its outputs are
  // checked against the graph specialized to `b`.
  std::shared_ptr<LiveGraph> generic_plan(const SymBindings& b) {
    const int64_t value = b.at(a.generic.symbol);
    {
      std::lock_guard<std::mutex> lock(spec_mu);
      for (const auto& [v, lg] : generic_cache)
        if (v == value) return lg;
    }
    std::vector<ArtifactGraph> gs = instantiate_size_generic(a, value, source);
    std::shared_ptr<const Graph> spec = specialized(b);
    Plan plan = std::move(gs.at(0).plan);
    if (plan.outputs.size() != spec->outputs.size())
      throw Error(source, "the plans at " + format_bindings(b) + " give the wrong outputs");
    for (size_t i = 0; i < plan.outputs.size(); ++i)
      if (plan.outputs[i].meta.sizes != spec->values[size_t(spec->outputs[i])].meta.sizes)
        throw Error(source, "the plans at " + format_bindings(b) + " give output " +
                                std::to_string(i) + " as " + format_meta(plan.outputs[i].meta) +
                                ", the graph " +
                                format_meta(spec->values[size_t(spec->outputs[i])].meta));
    const Plan& compiled = *snapshot().at(0)->plan; // its kernels are resolved
    for (PlanKernel& k : plan.kernels) {
      auto it = std::find_if(compiled.kernels.begin(), compiled.kernels.end(),
                             [&](const PlanKernel& c) { return c.name == k.name; });
      if (it == compiled.kernels.end()) throw Error(source, "no kernel '" + k.name + "'");
      k.fn = it->fn;
      k.cuda_function = it->cuda_function;
    }
    auto lg = std::make_shared<LiveGraph>();
    if (a.device == "cuda") {
      lg->plan = std::make_shared<const Plan>(std::move(plan));
      lg->cuda = std::make_unique<CudaPlanRunner>(*lg->plan, source,
                                                  runner_options(*lg->plan, cuda_device));
    } else {
      auto p = std::make_shared<Plan>(std::move(plan));
      onednn::prepare_plan(*p, source);
      lg->plan = std::move(p);
    }
    std::lock_guard<std::mutex> lock(spec_mu);
    for (const auto& [v, have] : generic_cache)
      if (v == value) return have; // another run made it meanwhile
    if (generic_cache.size() == 4) generic_cache.erase(generic_cache.begin());
    generic_cache.push_back({value, lg});
    return lg;
  }

  std::vector<TensorMeta> graph_output_metas(size_t i) const {
    const ArtifactGraph& g = a.graphs[i];
    std::vector<TensorMeta> out;
    if (g.kind == ArtifactGraph::Kind::Plan)
      for (const PlanView& v : g.plan.outputs) out.push_back(v.meta);
    else
      for (ValueId v : g.graph->outputs) out.push_back(g.graph->values[size_t(v)].meta);
    for (TensorMeta& m : out) {
      m.strides = contiguous_strides(m.sizes);
      m.storage_offset = 0;
      m.device = Device();
    }
    return out;
  }

  /// The current version of every graph (what a run starting now uses).
  std::vector<std::shared_ptr<LiveGraph>> snapshot() {
    std::lock_guard<std::mutex> lock(live_mu);
    return live;
  }

  std::vector<Tensor> run_graph(size_t i, const LiveGraph* lg, const std::vector<Tensor>& inputs,
                                std::vector<StepProfile>* profile = nullptr) {
    const ArtifactGraph& g = a.graphs[i];
    if (g.kind == ArtifactGraph::Kind::Interpreted) return interpret(*g.graph, inputs);
    if (lg->cuda) {
      std::lock_guard<std::mutex> lock(cuda_mu);
      return lg->cuda->run(inputs);
    }
    // The shared pool when it is free; a run concurrent with another uses its own thread alone
    // (each run has its own activations: execute_plan allocates them).
    std::unique_lock<std::mutex> lock(pool_mu, std::try_to_lock);
    if (lock.owns_lock()) return execute_plan(*lg->plan, inputs, *pool, source, profile);
    ThreadPool own(1);
    return execute_plan(*lg->plan, inputs, own, source, profile);
  }
};

LoadedModel::LoadedModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LoadedModel::~LoadedModel() = default;

std::unique_ptr<LoadedModel> LoadedModel::load(CompiledArtifact a, const std::string& source,
                                               int num_threads, int cuda_device) {
  auto impl = std::make_unique<Impl>();
  impl->a = std::move(a);
  impl->source = source;
  for (const std::string& op : impl->a.custom_ops)
    if (!find_custom_op(op))
      throw Error(source, "the artifact calls custom op '" + op +
                              "', which is not registered: load its plugin first");
  auto t0 = std::chrono::steady_clock::now();
  impl->graphs.resize(impl->a.graphs.size());
  impl->live.resize(impl->a.graphs.size());
  bool cuda = impl->a.device == "cuda";
  if (cuda) {
    try {
      impl->cuda_device = cuda::Context::get(cuda_device).ordinal();
    } catch (const cuda::CudaError& e) {
      throw Error(source, e.what());
    }
  }
  for (size_t i = 0; i < impl->a.graphs.size(); ++i) {
    ArtifactGraph& g = impl->a.graphs[i];
    LoadedGraph& lg = impl->graphs[i];
    impl->live[i] = std::make_shared<LiveGraph>();
    if (g.kind != ArtifactGraph::Kind::Plan) continue;
    if (!cuda) {
      for (const std::string& o : g.objects) lg.objects.push_back(load_elf_object(o, source));
      for (PlanKernel& k : g.plan.kernels) {
        k.fn = nullptr;
        for (const std::unique_ptr<ElfObject>& o : lg.objects)
          if (void* f = o->function(k.name)) {
            if (k.fn) throw Error(source, "kernel objects: two define '" + k.name + "'");
            k.fn = reinterpret_cast<KernelFn>(f);
          }
        if (!k.fn) throw Error(source, "kernel object: no function '" + k.name + "'");
      }
      // oneDNN's primitives and reordered weights: made when the artifact is loaded to run, not
      // when it is parsed (--link and the remote cache parse without running).
      auto plan = std::make_shared<Plan>(g.plan);
      onednn::prepare_plan(*plan, source);
      impl->live[i]->plan = std::move(plan);
      continue;
    }
    try {
      cuda::Context& ctx = cuda::Context::get(impl->cuda_device);
      if (!g.plan.kernels.empty()) lg.modules.push_back(ctx.load_module(g.ptx, g.role + ".ptx"));
      for (PlanKernel& pk : g.plan.kernels) pk.cuda_function = lg.modules.back()->function(pk.name);
    } catch (const cuda::CudaError& e) {
      throw Error(source, e.what());
    }
    // The runner uploads the weights from where they lie (the artifact's mapping).
    impl->live[i]->plan = std::make_shared<const Plan>(g.plan);
    impl->live[i]->cuda = std::make_unique<CudaPlanRunner>(
        *impl->live[i]->plan, source, runner_options(g.plan, impl->cuda_device));
  }
  if (!cuda) impl->pool = std::make_unique<ThreadPool>(num_threads);
  impl->output_metas = impl->graph_output_metas(0);
  if (impl->a.mode == "train") {
    impl->output_metas.resize(impl->a.num_user_outputs);
    for (const TensorMeta& m : impl->graph_output_metas(1)) impl->output_metas.push_back(m);
  }
  impl->load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return std::unique_ptr<LoadedModel>(new LoadedModel(std::move(impl)));
}

const CompiledArtifact& LoadedModel::artifact() const {
  return impl_->a;
}

const std::vector<TensorMeta>& LoadedModel::output_metas() const {
  return impl_->output_metas;
}

std::string LoadedModel::check_guards(const std::vector<Tensor>& inputs) const {
  std::vector<TensorMeta> metas;
  for (const Tensor& t : inputs) metas.push_back(t.meta());
  SymBindings b;
  return impl_->check_guards(metas, &b);
}

std::vector<TensorMeta> LoadedModel::output_metas_for(const std::vector<TensorMeta>& inputs) const {
  SymBindings b;
  if (std::string f = impl_->check_guards(inputs, &b); !f.empty()) throw Error(impl_->source, f);
  if (!impl_->a.symbolic || b == impl_->a.bindings) return impl_->output_metas;
  std::vector<TensorMeta> out;
  std::shared_ptr<const Graph> g = impl_->specialized(b);
  for (ValueId v : g->outputs) {
    TensorMeta m = g->values[size_t(v)].meta;
    m.strides = contiguous_strides(m.sizes);
    m.storage_offset = 0;
    m.device = Device();
    out.push_back(m);
  }
  return out;
}

CudaPlanRunner* LoadedModel::cuda_runner(size_t i) const {
  return impl_->snapshot().at(i)->cuda.get();
}

double LoadedModel::load_ms() const {
  return impl_->load_ms;
}

std::vector<Tensor> LoadedModel::run_graph(size_t i, const std::vector<Tensor>& inputs,
                                           std::vector<StepProfile>* profile) {
  assert(i < impl_->a.graphs.size() && "no such graph");
  std::vector<std::shared_ptr<LiveGraph>> live = impl_->snapshot();
  return impl_->run_graph(i, live[i].get(), inputs, profile);
}

NamedResults LoadedModel::run(const std::vector<Tensor>& inputs) {
  std::vector<TensorMeta> metas;
  for (const Tensor& t : inputs) metas.push_back(t.meta());
  SymBindings b;
  if (std::string f = impl_->check_guards(metas, &b); !f.empty()) throw Error(impl_->source, f);
  const CompiledArtifact& a = impl_->a;
  NamedResults out;
  if (a.symbolic && b != a.bindings && !a.generic.symbol.empty()) { // the plans at these sizes
    std::shared_ptr<LiveGraph> lg = impl_->generic_plan(b);
    std::vector<Tensor> r = impl_->run_graph(0, lg.get(), inputs);
    for (size_t i = 0; i < r.size(); ++i) out.emplace_back(a.outputs[i], r[i]);
    return out;
  }
  if (a.symbolic && b != a.bindings) { // sizes other than the plans': the interpreter
    std::vector<Tensor> r = interpret(*impl_->specialized(b), inputs);
    for (size_t i = 0; i < r.size(); ++i) out.emplace_back(a.outputs[i], r[i]);
    return out;
  }
  // One version of the weights for the whole run (forward and backward), even across a swap.
  std::vector<std::shared_ptr<LiveGraph>> live = impl_->snapshot();
  std::vector<Tensor> fw = impl_->run_graph(0, live[0].get(), inputs);
  if (a.mode != "train") {
    for (size_t i = 0; i < fw.size(); ++i) out.emplace_back(a.outputs[i], fw[i]);
    return out;
  }
  // The backward: the saved values, then output gradients of ones (as out.sum().backward()).
  std::vector<Tensor> bw_in(fw.begin() + long(a.num_user_outputs), fw.end());
  for (size_t k : a.tangent_output_index) {
    Tensor ones = Tensor::empty(fw[k].dtype(), fw[k].sizes());
    for (int64_t i = 0; i < ones.numel(); ++i) ones.store(i, 1.0);
    bw_in.push_back(ones);
  }
  std::vector<Tensor> grads = impl_->run_graph(1, live[1].get(), bw_in);
  for (size_t i = 0; i < a.num_user_outputs; ++i) out.emplace_back(a.outputs[i], fw[i]);
  for (size_t i = 0; i < grads.size(); ++i)
    out.emplace_back(a.outputs[a.num_user_outputs + i], grads[i]);
  return out;
}

int LoadedModel::cuda_device() const {
  return impl_->cuda_device;
}

void LoadedModel::run_device(const std::vector<uint64_t>& inputs,
                             const std::vector<uint64_t>& outputs, void* stream) {
  const CompiledArtifact& a = impl_->a;
  if (a.device != "cuda")
    throw Error(impl_->source, "a run on device buffers needs an artifact compiled for CUDA (this "
                               "one is for " +
                                   a.device + ")");
  if (a.mode == "train")
    throw Error(impl_->source, "a run on device buffers takes an inference artifact (this one "
                               "is train mode: run it with host buffers)");
  std::vector<std::shared_ptr<LiveGraph>> live = impl_->snapshot();
  if (a.graphs.empty() || !live[0]->cuda)
    throw Error(impl_->source, "a run on device buffers needs a compiled CUDA plan (this graph "
                               "runs on the reference interpreter)");
  std::lock_guard<std::mutex> lock(impl_->cuda_mu);
  live[0]->cuda->run_device(inputs, outputs, stream);
}

std::vector<std::pair<std::string, TensorMeta>> LoadedModel::swappable_weights() const {
  std::map<std::string, TensorMeta> named;
  for (const ArtifactGraph& g : impl_->a.graphs)
    if (g.kind == ArtifactGraph::Kind::Plan)
      for (size_t k = 0; k < g.constant_names.size(); ++k)
        if (!g.constant_names[k].empty())
          named.emplace(g.constant_names[k], g.plan.constant_slots[k].second.meta());
  return {named.begin(), named.end()};
}

void LoadedModel::swap_weights(const std::vector<std::pair<std::string, Tensor>>& weights,
                               const std::string& from) {
  const std::string where = from.empty() ? impl_->source : from;
  const CompiledArtifact& a = impl_->a;
  if (a.symbolic)
    throw Error(where, "cannot swap the weights of a dynamic artifact (its interpreter graph holds "
                       "them too)");
  std::map<std::string, TensorMeta> known;
  for (auto& [name, meta] : swappable_weights()) known.emplace(name, meta);
  std::map<std::string, Tensor> repl;
  for (const auto& [name, t] : weights) {
    auto it = known.find(name);
    if (it == known.end())
      throw Error(where, "weight '" + name +
                             "': the artifact has no such swappable weight (a parameter the "
                             "compiled code folded or does not use cannot be swapped)");
    if (t.dtype() != it->second.dtype || t.sizes() != it->second.sizes)
      throw Error(where, "weight '" + name + "': expected " + format_meta(it->second) + ", got " +
                             format_meta(t.meta()));
    // A plan binds a constant's whole storage: the bytes must start it. A lazily read weight
    // (a .safetensors file's) is read here, so that its errors are the swap's, not a run's.
    Tensor c = t.contiguous();
    if (c.numel() > 0) (void)c.raw_data();
    if (c.storage_offset() != 0) {
      Tensor own = Tensor::empty(c.dtype(), c.sizes());
      if (c.numel() > 0)
        std::memcpy(own.raw_data(), c.raw_data(), size_t(c.numel()) * dtype_size(c.dtype()));
      c = own;
    }
    if (!repl.emplace(name, c).second) throw Error(where, "weight '" + name + "' is given twice");
  }
  // The new version of every graph, built before anything changes (all or nothing).
  std::vector<std::shared_ptr<LiveGraph>> next = impl_->snapshot();
  for (size_t i = 0; i < a.graphs.size(); ++i) {
    const ArtifactGraph& g = a.graphs[i];
    if (g.kind != ArtifactGraph::Kind::Plan) continue;
    auto plan = std::make_shared<Plan>(*next[i]->plan);
    bool changed = false;
    for (size_t k = 0; k < g.constant_names.size(); ++k)
      if (auto it = repl.find(g.constant_names[k]); it != repl.end()) {
        plan->constant_slots[k].second = it->second;
        changed = true;
      }
    if (!changed) continue;
    // oneDNN holds the old weights reordered: prepare_plan makes every convolution afresh.
    if (!next[i]->cuda) onednn::prepare_plan(*plan, impl_->source);
    auto lg = std::make_shared<LiveGraph>();
    lg->plan = plan;
    if (next[i]->cuda) { // uploads the new weights (untested here: no GPU on the test machine)
      std::lock_guard<std::mutex> lock(impl_->cuda_mu);
      lg->cuda = std::make_unique<CudaPlanRunner>(*plan, impl_->source,
                                                  runner_options(*plan, impl_->cuda_device));
    }
    next[i] = lg;
  }
  std::lock_guard<std::mutex> lock(impl_->live_mu);
  impl_->live = std::move(next);
}

} // namespace fxc
