// Internal to the meta functions (frontend/meta.cpp and frontend/meta/*.cpp): the layout and
// stride rules, the argument access of one node (Ctx) and the helpers several op families share.
// Each family file (pointwise, reduction, norm, linalg, pool, indexing, view, factory) holds its
// ops' meta functions and their rows; meta.cpp concatenates the rows into one table.
#pragma once

#include "frontend/meta.h"

#include "frontend/diag.h"
#include "frontend/schema.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <span>
#include <stdexcept>

namespace fxc::meta_detail {

using Sizes = std::vector<int64_t>;
using Metas = std::vector<TensorMeta>;

inline std::string join(const Sizes& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// Thrown when sizes or strides do not fit in int64; the table's wrapper turns it into an Error.
struct SizeOverflow {};

inline int64_t mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw SizeOverflow{};
  return r;
}

// Row-major strides; an overflow is the node's error (guarded below).
inline Sizes dense_strides(const Sizes& sizes) {
  if (auto st = checked_contiguous_strides(sizes)) return *st;
  throw SizeOverflow{};
}

// ---------------------------------------------------------------------------------------------
// Layout predicates and stride builders (c10/core/TensorImpl.h, c10/core/MemoryFormat.h).

inline int64_t numel_of(const Sizes& sz) {
  int64_t n = 1;
  for (int64_t s : sz) n = mul(n, s);
  return n;
}

inline bool is_contig(const Sizes& sz, const Sizes& st) {
  if (numel_of(sz) == 0) return true;
  int64_t z = 1;
  for (int64_t d = int64_t(sz.size()) - 1; d >= 0; --d) {
    if (sz[d] == 1) continue;
    if (st[d] != z) return false;
    z *= sz[d];
  }
  return true;
}

inline bool is_cl_contig(const Sizes& sz, const Sizes& st) {
  if (sz.size() != 4) return false;
  int64_t expected = 1;
  for (int d : {1, 3, 2, 0}) {
    if (sz[d] == 1) continue;
    if (st[d] != expected) return false;
    expected *= sz[d];
  }
  return true;
}

inline bool is_non_overlapping_and_dense(const Sizes& sz, const Sizes& st) {
  if (is_contig(sz, st) || is_cl_contig(sz, st)) return true;
  const size_t nd = sz.size();
  if (nd == 1) return sz[0] < 2 || st[0] == 1;
  std::vector<size_t> perm(nd);
  std::iota(perm.begin(), perm.end(), 0);
  std::stable_sort(perm.begin(), perm.end(), [&](size_t a, size_t b) {
    if (sz[a] < 2) return false;
    if (sz[b] < 2) return true;
    return st[a] < st[b];
  });
  int64_t require = 1;
  for (size_t i = 0; i < nd; ++i) {
    if (sz[perm[i]] < 2) return true;
    if (st[perm[i]] != require) return false;
    require *= sz[perm[i]];
  }
  return true;
}

// is_channels_last_strides_2d: the strides look like NHWC (used by suggest_memory_format).
inline bool strides_like_channels_last(const Sizes& sz, const Sizes& st) {
  if (sz.size() != 4 || st[1] == 0) return false;
  int64_t min = 0;
  for (int d : {1, 3, 2, 0}) {
    if (sz[d] == 0 || st[d] < min) return false;
    if (d == 0 && min == st[1]) return false;
    min = st[d];
    if (sz[d] > 1) min *= sz[d];
  }
  return true;
}

inline bool suggests_channels_last(const TensorMeta& t) {
  return strides_like_channels_last(t.sizes, t.strides);
}

inline Sizes channels_last_strides(const Sizes& sz) {
  assert(sz.size() == 4 && "channels_last needs rank 4");
  Sizes st(4);
  st[1] = 1;
  st[3] = sz[1];
  st[2] = mul(st[3], sz[3]);
  st[0] = mul(st[2], sz[2]);
  return st;
}

inline bool has_internal_overlap(const Sizes& sz, const Sizes& st) {
  if (is_non_overlapping_and_dense(sz, st)) return false;
  for (size_t i = 0; i < sz.size(); ++i)
    if (sz[i] > 1 && st[i] == 0) return true;
  return false;
}

// TensorIterator's dimension order (reorder_dimensions): the permutation from fastest to
// slowest dimension given each operand's strides (0 for broadcast dimensions).
inline std::vector<size_t> sort_dims(const std::vector<Sizes>& strides, const Sizes& shape) {
  const size_t nd = shape.size();
  std::vector<size_t> perm(nd);
  for (size_t i = 0; i < nd; ++i) perm[i] = nd - 1 - i;
  auto should_swap = [&](size_t d0, size_t d1) {
    for (const Sizes& st : strides) {
      int64_t s0 = st[d0], s1 = st[d1];
      if (s0 == 0 || s1 == 0) continue;
      if (s0 < s1) return -1;
      if (s0 > s1) return 1;
      if (shape[d0] > shape[d1]) return 1;
    }
    return 0;
  };
  for (size_t i = 1; i < nd; ++i) {
    size_t dim1 = i;
    for (size_t k = i; k-- > 0;) {
      int c = should_swap(perm[k], perm[dim1]);
      if (c > 0) {
        std::swap(perm[k], perm[dim1]);
        dim1 = k;
      } else if (c < 0) {
        break;
      }
    }
  }
  return perm;
}

// Dense strides laid out in `perm` order (fastest first). `clamp` treats sizes below 1 as 1.
inline Sizes strides_for_perm(const Sizes& shape, const std::vector<size_t>& perm, bool clamp) {
  Sizes st(shape.size());
  int64_t next = 1;
  for (size_t p : perm) {
    st[p] = next;
    next = mul(next, clamp ? std::max<int64_t>(shape[p], 1) : shape[p]);
  }
  return st;
}

inline bool is_reversed(const std::vector<size_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != perm.size() - 1 - i) return false;
  return true;
}

// infer_dense_strides: dense strides with the same layout permutation as (sz, st).
inline Sizes infer_dense_strides(const Sizes& sz, const Sizes& st) {
  return strides_for_perm(sz, sort_dims({st}, sz), true);
}

// The output layout of a TensorIterator over `ins` (already broadcast-compatible to `shape`):
// compute_fast_setup_type, then reorder_dimensions and allocate_or_resize_outputs.
inline Sizes iter_strides(const std::vector<const TensorMeta*>& ins, const Sizes& shape) {
  bool same_shape = true;
  for (const TensorMeta* t : ins)
    if (t->sizes != shape) same_shape = false;
  if (same_shape && !ins.empty()) {
    bool contig = true, cl = true, dense = true;
    for (const TensorMeta* t : ins) {
      contig &= is_contig(t->sizes, t->strides);
      cl &= is_cl_contig(t->sizes, t->strides);
      dense &= is_non_overlapping_and_dense(t->sizes, t->strides);
    }
    if (contig) return dense_strides(shape);
    if (cl) return channels_last_strides(shape);
    if (dense) {
      bool same_strides = true;
      for (const TensorMeta* t : ins) same_strides &= t->strides == ins.back()->strides;
      if (same_strides) return ins.back()->strides;
    }
  }
  const size_t nd = shape.size();
  if (nd <= 1) return dense_strides(shape);
  std::vector<Sizes> strides;
  for (const TensorMeta* t : ins) {
    Sizes st(nd, 0);
    size_t off = nd - t->sizes.size();
    for (size_t i = 0; i < t->sizes.size(); ++i)
      st[off + i] = t->sizes[i] == 1 && shape[off + i] != 1 ? 0 : t->strides[i];
    strides.push_back(std::move(st));
  }
  auto perm = sort_dims(strides, shape);
  if (is_reversed(perm)) return dense_strides(shape);
  return strides_for_perm(shape, perm, false);
}

inline TensorMeta make(DType dt, Sizes sizes, Device dev) {
  TensorMeta m;
  m.dtype = dt;
  m.strides = dense_strides(sizes);
  m.sizes = std::move(sizes);
  m.device = dev;
  return m;
}

inline TensorMeta make_strided(DType dt, Sizes sizes, Sizes strides, Device dev,
                               int64_t offset = 0) {
  TensorMeta m;
  m.dtype = dt;
  m.sizes = std::move(sizes);
  m.strides = std::move(strides);
  m.storage_offset = offset;
  m.device = dev;
  return m;
}

// empty_like(src) with memory_format=preserve.
inline TensorMeta empty_like_preserve(const TensorMeta& src, DType dt) {
  if (is_non_overlapping_and_dense(src.sizes, src.strides))
    return make_strided(dt, src.sizes, src.strides, src.device);
  return make_strided(dt, src.sizes, infer_dense_strides(src.sizes, src.strides), src.device);
}

// A tensor of `sizes` in memory format `mf` (Preserve means like `src`).
inline TensorMeta make_format(DType dt, const Sizes& sizes, Device dev, MemoryFormat mf,
                              const TensorMeta* src) {
  if (mf == MemoryFormat::Preserve && src) return empty_like_preserve(*src, dt);
  if (mf == MemoryFormat::ChannelsLast && sizes.size() == 4)
    return make_strided(dt, sizes, channels_last_strides(sizes), dev);
  return make(dt, sizes, dev);
}

// ---------------------------------------------------------------------------------------------
// Type promotion (c10/core/ScalarType.h promoteTypes, ATen/native/TypeProperties.cpp).

inline DType scalar_dtype(const Arg& a) {
  return wrapped_number_dtype(a);
}

inline bool is_scalar_kind(Arg::Kind k) {
  return k == Arg::Kind::Int || k == Arg::Kind::Float || k == Arg::Kind::Bool;
}

// ---------------------------------------------------------------------------------------------
// Argument access for one node, with errors naming the graph file and the node.

// A pointwise operand: a tensor, or a Python number (a "wrapped number" in PyTorch).
struct Operand {
  const TensorMeta* t = nullptr;
  Arg scalar;
};

inline const TensorMeta kScalarMeta = [] {
  TensorMeta m;
  m.dtype = DType::I64;
  return m;
}();

class Ctx {
public:
  Ctx(const Graph& g, const Node& n) : g_(g), n_(n) {
    schema_ = n.schema ? n.schema : find_schema(n.target);
    if (!schema_) fail("no schema for this op");
    if (n.args.size() != schema_->args.size())
      fail("has " + std::to_string(n.args.size()) + " arguments but the schema takes " +
           std::to_string(schema_->args.size()));
  }

  [[noreturn]] void fail(const std::string& msg) const {
    throw Error(g_.source, msg, n_.name, n_.target);
  }

  const Arg& arg(std::string_view name) const {
    int i = schema_->index_of(name);
    assert(i >= 0 && "meta function reads an argument the schema lacks");
    return n_.args[size_t(i)];
  }
  bool has(std::string_view name) const { return !arg(name).is_none(); }
  bool has_arg(std::string_view name) const { return schema_->index_of(name) >= 0; }

  const TensorMeta& meta_of(ValueId v, std::string_view name) const {
    if (v < 0 || size_t(v) >= g_.values.size())
      fail("argument '" + std::string(name) + "' refers to an unknown value");
    const TensorMeta& m = g_.values[size_t(v)].meta;
    if (m.strides.size() != m.sizes.size())
      fail("'" + g_.values[size_t(v)].name + "' has " + std::to_string(m.sizes.size()) +
           " sizes but " + std::to_string(m.strides.size()) + " strides");
    __int128 numel = 1;
    for (int64_t s : m.sizes) {
      if (s < 0) fail("'" + g_.values[size_t(v)].name + "' has a negative size " + join(m.sizes));
      numel *= s;
      if (numel > std::numeric_limits<int64_t>::max())
        fail("'" + g_.values[size_t(v)].name + "' has too many elements " + join(m.sizes));
    }
    return m;
  }
  const TensorMeta& tensor(std::string_view name) const {
    const Arg& a = arg(name);
    if (a.kind != Arg::Kind::Tensor) expected(name, "a tensor", a);
    return meta_of(a.tensor, name);
  }
  const TensorMeta* opt_tensor(std::string_view name) const {
    const Arg& a = arg(name);
    if (a.is_none()) return nullptr;
    return &tensor(name);
  }
  std::vector<const TensorMeta*> tensors(std::string_view name) const {
    const Arg& a = arg(name);
    if (a.kind != Arg::Kind::Tensors) expected(name, "a tensor list", a);
    std::vector<const TensorMeta*> out;
    for (ValueId v : a.tensors) out.push_back(v == kNoValue ? nullptr : &meta_of(v, name));
    return out;
  }
  // A tensor argument that may also hold a Python number (torch.export writes add(x, 1e-06)).
  Operand operand(std::string_view name) const {
    const Arg& a = arg(name);
    if (is_scalar_kind(a.kind)) return {nullptr, a};
    return {&tensor(name), {}};
  }
  Operand scalar_operand(std::string_view name) const {
    const Arg& a = arg(name);
    if (!is_scalar_kind(a.kind)) expected(name, "a number", a);
    return {nullptr, a};
  }
  int64_t int_(std::string_view name) const {
    const Arg& a = arg(name);
    if (a.kind != Arg::Kind::Int) expected(name, "an int", a);
    return a.i;
  }
  std::optional<int64_t> opt_int(std::string_view name) const {
    if (!has(name)) return std::nullopt;
    return int_(name);
  }
  double float_(std::string_view name) const {
    const Arg& a = arg(name);
    if (a.kind != Arg::Kind::Float && a.kind != Arg::Kind::Int) expected(name, "a float", a);
    return a.scalar();
  }
  bool bool_(std::string_view name) const {
    const Arg& a = arg(name);
    if (a.kind != Arg::Kind::Bool) expected(name, "a bool", a);
    return a.b;
  }
  const Sizes& ints(std::string_view name) const {
    const Arg& a = arg(name);
    if (a.kind != Arg::Kind::Ints) expected(name, "an int list", a);
    return a.ints;
  }
  // A fixed-length list such as int[2]: one value stands for all `n`.
  Sizes ints_n(std::string_view name, size_t n) const {
    const Sizes& v = ints(name);
    if (v.size() == n) return v;
    if (v.size() == 1) return Sizes(n, v[0]);
    fail("'" + std::string(name) + "' must have 1 or " + std::to_string(n) + " values, got " +
         join(v));
  }
  std::optional<DType> opt_dtype(std::string_view name) const {
    const Arg& a = arg(name);
    if (a.is_none()) return std::nullopt;
    if (a.kind != Arg::Kind::DType) expected(name, "a dtype", a);
    return a.dtype();
  }
  std::optional<Device> opt_device(std::string_view name) const {
    const Arg& a = arg(name);
    if (a.is_none()) return std::nullopt;
    if (a.kind != Arg::Kind::Device) expected(name, "a device", a);
    return a.device;
  }
  MemoryFormat memory_format(std::string_view name, MemoryFormat dflt) const {
    const Arg& a = arg(name);
    if (a.is_none()) return dflt;
    if (a.kind != Arg::Kind::MemoryFormat) expected(name, "a memory format", a);
    return MemoryFormat(a.i);
  }
  const std::string& str(std::string_view name) const {
    const Arg& a = arg(name);
    if (a.kind != Arg::Kind::String) expected(name, "a string", a);
    return a.s;
  }

  // maybe_wrap_dim: a rank-0 tensor accepts dims -1 and 0.
  int64_t dim(int64_t d, int64_t rank) const {
    try {
      return wrap_dim(d, rank);
    } catch (const std::out_of_range& e) {
      fail(e.what());
    }
  }
  std::vector<bool> dim_mask(const Sizes& dims, int64_t rank) const {
    std::vector<bool> mask(size_t(std::max<int64_t>(rank, 0)), false);
    for (int64_t d : dims) {
      int64_t w = dim(d, rank);
      if (rank == 0) continue;
      if (mask[size_t(w)])
        fail("dim " + std::to_string(w) + " appears multiple times in the list of dims");
      mask[size_t(w)] = true;
    }
    return mask;
  }

  std::string desc(std::string_view name) const {
    return std::string(name) + " is " + format_meta(tensor(name));
  }
  int64_t checked(__int128 v, std::string_view what) const {
    if (v < 0 || v > std::numeric_limits<int64_t>::max())
      fail(std::string(what) + " is out of range (" +
           (v < 0 ? std::string("negative") : std::string("too large")) + ")");
    return int64_t(v);
  }
  // Checks that sizes are non-negative and their product fits in int64.
  void check_sizes(const Sizes& sz) const {
    __int128 n = 1;
    for (int64_t s : sz) {
      if (s < 0)
        fail("trying to create a tensor with negative dimension " + std::to_string(s) + ": " +
             join(sz));
      n *= s;
      if (n > std::numeric_limits<int64_t>::max())
        fail("size " + join(sz) + " has too many elements");
    }
  }

private:
  [[noreturn]] void expected(std::string_view name, const char* what, const Arg& a) const {
    fail("argument '" + std::string(name) + "' must be " + what + ", got " +
         std::string(arg_kind_name(a.kind)));
  }
  const Graph& g_;
  const Node& n_;
  const OpSchema* schema_ = nullptr;
};

inline Sizes broadcast_all(const Ctx& c, const std::vector<const TensorMeta*>& ts) {
  Sizes shape;
  for (size_t i = 0; i < ts.size(); ++i) {
    try {
      shape = broadcast_shapes(shape, ts[i]->sizes);
    } catch (const std::invalid_argument&) {
      std::string msg = "cannot broadcast ";
      for (size_t k = 0; k <= i; ++k) msg += (k ? " with " : "") + format_meta(*ts[k]);
      c.fail(msg);
    }
  }
  return shape;
}

inline Device common_device(const Ctx& c, const std::vector<const TensorMeta*>& ts) {
  std::optional<Device> dev;
  for (const TensorMeta* t : ts) {
    if (t->sizes.empty() && t->device.kind == Device::CPU) continue; // CPU scalars mix freely
    if (dev && *dev != t->device)
      c.fail("expected all tensors on the same device, but found " + device_name(*dev) + " and " +
             device_name(t->device));
    dev = t->device;
  }
  if (dev) return *dev;
  return ts.empty() ? Device{} : ts.front()->device;
}

// PyTorch's AT_DISPATCH error for a kernel that has no loop for `dt`.
[[noreturn]] inline void not_implemented(const Ctx& c, std::string_view kernel, DType dt) {
  c.fail(not_implemented_message(kernel, dt));
}

inline void check_same_dtype(const Ctx& c, const TensorMeta& a, const char* an, const TensorMeta* b,
                             const char* bn) {
  if (b && a.dtype != b->dtype)
    c.fail(std::string(an) + " is " + format_meta(a) + " but " + bn + " is " + format_meta(*b) +
           " (dtypes differ)");
}

// meta_index_Tensor's output layout: dense, in the dimension order of the source restrided so
// that indexed dimensions are broadcast (stride 0).
inline TensorMeta index_layout(const TensorMeta& self, const Sizes& out, const Sizes& restrided) {
  if (self.numel() == 0) return make(self.dtype, out, self.device);
  bool contig = is_contig(out, restrided), cl = is_cl_contig(out, restrided);
  if (contig && !cl) return make(self.dtype, out, self.device);
  if (cl && !contig) return make_strided(self.dtype, out, channels_last_strides(out), self.device);
  return make_strided(self.dtype, out, strides_for_perm(out, sort_dims({restrided}, out), true),
                      self.device);
}

// Runs F, reporting sizes that overflow int64 as an error of the node.
template <MetaFn F> Metas guarded(const Graph& g, const Node& n) {
  try {
    return F(g, n);
  } catch (const SizeOverflow&) {
    throw Error(g.source, "sizes or strides overflow 64-bit integers", n.name, n.target);
  }
}

// Each op family's rows of the meta table.
std::span<const OpTable<MetaFn>::Row> pointwise_meta();
std::span<const OpTable<MetaFn>::Row> reduction_meta();
std::span<const OpTable<MetaFn>::Row> norm_meta();
std::span<const OpTable<MetaFn>::Row> linalg_meta();
std::span<const OpTable<MetaFn>::Row> pool_meta();
std::span<const OpTable<MetaFn>::Row> backward_meta();
std::span<const OpTable<MetaFn>::Row> indexing_meta();
std::span<const OpTable<MetaFn>::Row> view_meta();
std::span<const OpTable<MetaFn>::Row> factory_meta();
std::span<const OpTable<MetaFn>::Row> random_meta();
std::span<const OpTable<MetaFn>::Row> selection_meta();

} // namespace fxc::meta_detail
