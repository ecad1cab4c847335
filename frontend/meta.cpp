// Meta functions: every op's output dtype, sizes, strides and offset, by PyTorch's rules.
#include "frontend/meta.h"

#include "frontend/custom_ops.h"
#include "frontend/diag.h"
#include "frontend/schema.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <stdexcept>

namespace fxc {

namespace {

using Sizes = std::vector<int64_t>;
using Metas = std::vector<TensorMeta>;

std::string join(const Sizes& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// Thrown when sizes or strides do not fit in int64; the table's wrapper turns it into an Error.
struct SizeOverflow {};

int64_t mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw SizeOverflow{};
  return r;
}

// Row-major strides; an overflow is the node's error (guarded below).
Sizes dense_strides(const Sizes& sizes) {
  if (auto st = checked_contiguous_strides(sizes)) return *st;
  throw SizeOverflow{};
}

// ---------------------------------------------------------------------------------------------
// Layout predicates and stride builders (c10/core/TensorImpl.h, c10/core/MemoryFormat.h).

int64_t numel_of(const Sizes& sz) {
  int64_t n = 1;
  for (int64_t s : sz) n = mul(n, s);
  return n;
}

bool is_contig(const Sizes& sz, const Sizes& st) {
  if (numel_of(sz) == 0) return true;
  int64_t z = 1;
  for (int64_t d = int64_t(sz.size()) - 1; d >= 0; --d) {
    if (sz[d] == 1) continue;
    if (st[d] != z) return false;
    z *= sz[d];
  }
  return true;
}

bool is_cl_contig(const Sizes& sz, const Sizes& st) {
  if (sz.size() != 4) return false;
  int64_t expected = 1;
  for (int d : {1, 3, 2, 0}) {
    if (sz[d] == 1) continue;
    if (st[d] != expected) return false;
    expected *= sz[d];
  }
  return true;
}

bool is_non_overlapping_and_dense(const Sizes& sz, const Sizes& st) {
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
bool strides_like_channels_last(const Sizes& sz, const Sizes& st) {
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

bool suggests_channels_last(const TensorMeta& t) {
  return strides_like_channels_last(t.sizes, t.strides);
}

Sizes channels_last_strides(const Sizes& sz) {
  assert(sz.size() == 4 && "channels_last needs rank 4");
  Sizes st(4);
  st[1] = 1;
  st[3] = sz[1];
  st[2] = mul(st[3], sz[3]);
  st[0] = mul(st[2], sz[2]);
  return st;
}

bool has_internal_overlap(const Sizes& sz, const Sizes& st) {
  if (is_non_overlapping_and_dense(sz, st)) return false;
  for (size_t i = 0; i < sz.size(); ++i)
    if (sz[i] > 1 && st[i] == 0) return true;
  return false;
}

// TensorIterator's dimension order (reorder_dimensions): the permutation from fastest to
// slowest dimension given each operand's strides (0 for broadcast dimensions).
std::vector<size_t> sort_dims(const std::vector<Sizes>& strides, const Sizes& shape) {
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
Sizes strides_for_perm(const Sizes& shape, const std::vector<size_t>& perm, bool clamp) {
  Sizes st(shape.size());
  int64_t next = 1;
  for (size_t p : perm) {
    st[p] = next;
    next = mul(next, clamp ? std::max<int64_t>(shape[p], 1) : shape[p]);
  }
  return st;
}

bool is_reversed(const std::vector<size_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != perm.size() - 1 - i) return false;
  return true;
}

// infer_dense_strides: dense strides with the same layout permutation as (sz, st).
Sizes infer_dense_strides(const Sizes& sz, const Sizes& st) {
  return strides_for_perm(sz, sort_dims({st}, sz), true);
}

// The output layout of a TensorIterator over `ins` (already broadcast-compatible to `shape`):
// compute_fast_setup_type, then reorder_dimensions and allocate_or_resize_outputs.
Sizes iter_strides(const std::vector<const TensorMeta*>& ins, const Sizes& shape) {
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

TensorMeta make(DType dt, Sizes sizes, Device dev) {
  TensorMeta m;
  m.dtype = dt;
  m.strides = dense_strides(sizes);
  m.sizes = std::move(sizes);
  m.device = dev;
  return m;
}

TensorMeta make_strided(DType dt, Sizes sizes, Sizes strides, Device dev, int64_t offset = 0) {
  TensorMeta m;
  m.dtype = dt;
  m.sizes = std::move(sizes);
  m.strides = std::move(strides);
  m.storage_offset = offset;
  m.device = dev;
  return m;
}

// empty_like(src) with memory_format=preserve.
TensorMeta empty_like_preserve(const TensorMeta& src, DType dt) {
  if (is_non_overlapping_and_dense(src.sizes, src.strides))
    return make_strided(dt, src.sizes, src.strides, src.device);
  return make_strided(dt, src.sizes, infer_dense_strides(src.sizes, src.strides), src.device);
}

// A tensor of `sizes` in memory format `mf` (Preserve means like `src`).
TensorMeta make_format(DType dt, const Sizes& sizes, Device dev, MemoryFormat mf,
                       const TensorMeta* src) {
  if (mf == MemoryFormat::Preserve && src) return empty_like_preserve(*src, dt);
  if (mf == MemoryFormat::ChannelsLast && sizes.size() == 4)
    return make_strided(dt, sizes, channels_last_strides(sizes), dev);
  return make(dt, sizes, dev);
}

// ---------------------------------------------------------------------------------------------
// Type promotion (c10/core/ScalarType.h promoteTypes, ATen/native/TypeProperties.cpp).

DType scalar_dtype(const Arg& a) { return wrapped_number_dtype(a); }

bool is_scalar_kind(Arg::Kind k) {
  return k == Arg::Kind::Int || k == Arg::Kind::Float || k == Arg::Kind::Bool;
}

// ---------------------------------------------------------------------------------------------
// Argument access for one node, with errors naming the graph file and the node.

// A pointwise operand: a tensor, or a Python number (a "wrapped number" in PyTorch).
struct Operand {
  const TensorMeta* t = nullptr;
  Arg scalar;
};

const TensorMeta kScalarMeta = [] {
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

// ---------------------------------------------------------------------------------------------
// Pointwise ops.

Sizes broadcast_all(const Ctx& c, const std::vector<const TensorMeta*>& ts) {
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

Device common_device(const Ctx& c, const std::vector<const TensorMeta*>& ts) {
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

// The output of a TensorIterator over `ops` with dtype `dt`.
TensorMeta iter_output(const Ctx& c, const std::vector<Operand>& ops, DType dt) {
  std::vector<const TensorMeta*> ts, tensors_only;
  for (const Operand& o : ops) {
    ts.push_back(o.t ? o.t : &kScalarMeta);
    if (o.t) tensors_only.push_back(o.t);
  }
  Sizes shape = broadcast_all(c, tensors_only);
  return make_strided(dt, shape, iter_strides(ts, shape), common_device(c, tensors_only));
}

DType result_type(const std::vector<Operand>& ops) {
  ResultType r;
  for (const Operand& o : ops) {
    if (o.t)
      r.add_tensor(*o.t);
    else
      r.add_number(o.scalar);
  }
  return r.result();
}

enum class Out { Same, Float, Bool };

template <Out K> Metas unary(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  DType dt = x.dtype;
  if (K == Out::Float && !is_floating(dt)) dt = DType::F32;
  if (K == Out::Bool) dt = DType::Bool;
  return {iter_output(c, {{&x, {}}}, dt)};
}

Metas neg(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  if (x.dtype == DType::Bool)
    c.fail("negation, the '-' operator, on a bool tensor is not supported; use logical_not");
  return {iter_output(c, {{&x, {}}}, x.dtype)};
}

Metas gelu(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const std::string& ap = c.str("approximate");
  if (ap != "none" && ap != "tanh")
    c.fail("approximate argument must be either none or tanh, got '" + ap + "'");
  const TensorMeta& x = c.tensor("self");
  return {iter_output(c, {{&x, {}}}, x.dtype)};
}

Metas inplace(const Graph& g, const Node& n) {
  Ctx c(g, n);
  return {c.tensor("self")};
}

void alpha_check(const Ctx& c, DType dt, const Arg& alpha) {
  if (alpha.kind == Arg::Kind::Bool && dt != DType::Bool)
    c.fail("boolean alpha only supported for boolean results");
  if (!is_floating(dt) && alpha.kind == Arg::Kind::Float)
    c.fail("for integral input tensors, argument alpha must not be a floating point number");
}

// Binary arithmetic: `other` is a tensor or a number; add/sub also take alpha.
enum class Bin { Arith, Sub, TrueDiv, Compare, Logical, Pow };

template <Bin K> Metas binary(const Graph& g, const Node& n) {
  Ctx c(g, n);
  Operand a = c.operand("self");
  const char* other_name = K == Bin::Pow ? "exponent" : "other";
  Operand b = c.operand(other_name);
  DType common = result_type({a, b});
  DType out = common;
  if (K == Bin::TrueDiv && !is_floating(common)) out = DType::F32;
  if (K == Bin::Compare || K == Bin::Logical) out = DType::Bool;
  if (K == Bin::Sub) {
    const bool ba = (a.t ? a.t->dtype : scalar_dtype(a.scalar)) == DType::Bool;
    const bool bb = (b.t ? b.t->dtype : scalar_dtype(b.scalar)) == DType::Bool;
    if (ba && bb)
      c.fail("subtraction, the '-' operator, with two bool tensors is not supported; use "
             "logical_xor");
    if (ba || bb)
      c.fail("subtraction, the '-' operator, with a bool tensor is not supported; use "
             "logical_not to invert a mask");
  }
  if ((K == Bin::Arith || K == Bin::Sub) && c.has_arg("alpha"))
    alpha_check(c, common, c.arg("alpha"));
  if (K == Bin::Pow && !b.t && is_integral(a.t ? a.t->dtype : DType::I64) &&
      b.scalar.kind == Arg::Kind::Int && b.scalar.i < 0)
    c.fail("integers to negative integer powers are not allowed");
  return {iter_output(c, {a, b}, out)};
}

Metas add_inplace(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& self = c.tensor("self");
  Operand other = c.operand("other");
  DType common = result_type({{&self, {}}, other});
  if (!can_cast(common, self.dtype))
    c.fail("result type " + std::string(dtype_name(common)) +
           " can't be cast to the desired output type " + std::string(dtype_name(self.dtype)));
  alpha_check(c, common, c.arg("alpha"));
  if (other.t) {
    Sizes shape = broadcast_all(c, {&self, other.t});
    if (shape != self.sizes)
      c.fail("output with shape " + join(self.sizes) + " doesn't match the broadcast shape " +
             join(shape));
  }
  return {self};
}

Metas fill_tensor(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& v = c.tensor("value");
  if (v.dim() != 0)
    c.fail("fill_ only supports a 0-dimension value tensor, but got one with " +
           std::to_string(v.dim()) + " dimensions");
  return {c.tensor("self")};
}

Metas where_self(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& cond = c.tensor("condition");
  if (cond.dtype != DType::Bool && cond.dtype != DType::U8)
    c.fail("where expected condition to be a boolean tensor, but got " + format_meta(cond));
  Operand a = c.operand("self"), b = c.operand("other");
  DType dt = result_type({a, b});
  return {iter_output(c, {{&cond, {}}, a, b}, dt)};
}

Metas where_scalar_other(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& cond = c.tensor("condition");
  if (cond.dtype != DType::Bool && cond.dtype != DType::U8)
    c.fail("where expected condition to be a boolean tensor, but got " + format_meta(cond));
  Operand a = c.operand("self"), b = c.scalar_operand("other");
  DType dt = result_type({a, b});
  return {iter_output(c, {{&cond, {}}, a, b}, dt)};
}

Metas masked_fill(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& mask = c.tensor("mask");
  if (mask.dtype != DType::Bool)
    c.fail("masked_fill only supports boolean masks, but got mask " + format_meta(mask));
  Sizes shape = broadcast_all(c, {&mask, &self});
  return {make(self.dtype, shape, common_device(c, {&self, &mask}))};
}

Metas clamp(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& self = c.tensor("self");
  bool lo = c.has("min"), hi = c.has("max");
  if (!lo && !hi) c.fail("clamp: at least one of 'min' or 'max' must not be None");
  DType dt = self.dtype;
  if (!is_floating(dt)) {
    ResultType r;
    r.add_tensor(self);
    if (lo) r.add_number(c.arg("min"));
    if (hi) r.add_number(c.arg("max"));
    dt = r.result();
  }
  return {iter_output(c, {{&self, {}}}, dt)};
}

Metas dropout(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("input");
  double p = c.float_("p");
  if (!(p >= 0 && p <= 1))
    c.fail("dropout probability has to be between 0 and 1, but got " + std::to_string(p));
  if (p == 0 || !c.bool_("train") || x.numel() == 0) return {x}; // returns the input itself
  return {iter_output(c, {{&x, {}}}, x.dtype)};
}

// ---------------------------------------------------------------------------------------------
// Op families of issue 18: integer division and remainders, rsub, bitwise and logical ops.

// PyTorch's AT_DISPATCH error for a kernel that has no loop for `dt`.
[[noreturn]] void not_implemented(const Ctx& c, std::string_view kernel, DType dt) {
  c.fail(not_implemented_message(kernel, dt));
}

// The rounding mode of div.Tensor_mode / div.Scalar_mode: "" for None (true division).
std::string rounding_mode(const Ctx& c) {
  if (!c.has("rounding_mode")) return "";
  const std::string& m = c.str("rounding_mode");
  if (m != "trunc" && m != "floor")
    c.fail("div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '" + m +
           "'");
  return m;
}

// div with a rounding mode: true division without one; trunc/floor keep the common dtype
// (integers stay integers) and have no loop for bool.
Metas div_mode(const Graph& g, const Node& n) {
  Ctx c(g, n);
  std::string mode = rounding_mode(c);
  if (mode.empty()) return binary<Bin::TrueDiv>(g, n);
  Operand a = c.operand("self"), b = c.operand("other");
  DType dt = result_type({a, b});
  if (dt == DType::Bool) not_implemented(c, mode == "trunc" ? "div_trunc_cpu" : "div_floor_cpu", dt);
  return {iter_output(c, {a, b}, dt)};
}

// floor_divide, remainder, fmod.Tensor: the common dtype, no loop for bool.
template <const char* Kernel> Metas int_division(const Graph& g, const Node& n) {
  Ctx c(g, n);
  Operand a = c.operand("self"), b = c.operand("other");
  DType dt = result_type({a, b});
  if (dt == DType::Bool) not_implemented(c, Kernel, dt);
  return {iter_output(c, {a, b}, dt)};
}
constexpr char kDivFloorCpu[] = "div_floor_cpu";
constexpr char kRemainderCpu[] = "remainder_cpu";
constexpr char kFmodCpu[] = "fmod_cpu";

// bitwise_and/or/xor (bool and integers) and the shifts (integers only).
template <const char* Kernel, bool AllowBool> Metas bitwise(const Graph& g, const Node& n) {
  Ctx c(g, n);
  Operand a = c.operand("self"), b = c.operand("other");
  DType dt = result_type({a, b});
  if (is_floating(dt) || (!AllowBool && dt == DType::Bool)) not_implemented(c, Kernel, dt);
  return {iter_output(c, {a, b}, dt)};
}
constexpr char kBitwiseAndCpu[] = "bitwise_and_cpu";
constexpr char kBitwiseOrCpu[] = "bitwise_or_cpu";
constexpr char kBitwiseXorCpu[] = "bitwise_xor_cpu";
constexpr char kLshiftCpu[] = "lshift_cpu";
constexpr char kRshiftCpu[] = "rshift_cpu";

Metas bitwise_not(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  if (is_floating(x.dtype)) not_implemented(c, "bitwise_not_cpu", x.dtype);
  return {iter_output(c, {{&x, {}}}, x.dtype)};
}
// End of the issue-18 op families.

// ---------------------------------------------------------------------------------------------
// Issue 18, unary math and special functions.

// floor, ceil, round, trunc: integers are returned as they are (a copy); bool has no loop.
template <const char* Kernel> Metas rounding(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  if (x.dtype == DType::Bool) not_implemented(c, Kernel, x.dtype);
  return {iter_output(c, {{&x, {}}}, x.dtype)};
}
constexpr char kFloorCpu[] = "floor_cpu";
constexpr char kCeilCpu[] = "ceil_cpu";
constexpr char kRoundCpu[] = "round_cpu";
constexpr char kTruncCpu[] = "trunc_cpu";

Metas round_decimals(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  const int64_t d = c.int_("decimals");
  if (x.dtype == DType::Bool || (!is_floating(x.dtype) && d != 0))
    not_implemented(c, kRoundCpu, x.dtype);
  return {iter_output(c, {{&x, {}}}, x.dtype)};
}

// pow.Scalar(Scalar self, Tensor exponent): the number is a wrapped scalar.
Metas pow_scalar(const Graph& g, const Node& n) {
  Ctx c(g, n);
  Operand base = c.scalar_operand("self");
  const TensorMeta& e = c.tensor("exponent");
  return {iter_output(c, {{&e, {}}}, result_type({base, {&e, {}}}))};
}

// clamp.Tensor: the common dtype of self and the bounds given.
Metas clamp_tensor(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& self = c.tensor("self");
  const TensorMeta* lo = c.opt_tensor("min");
  const TensorMeta* hi = c.opt_tensor("max");
  if (!lo && !hi) c.fail("torch.clamp: At least one of 'min' or 'max' must not be None");
  std::vector<Operand> ops = {{&self, {}}};
  if (lo) ops.push_back({lo, {}});
  if (hi) ops.push_back({hi, {}});
  DType dt = result_type(ops);
  if (dt == DType::Bool) not_implemented(c, "clamp_cpu", dt);
  return {iter_output(c, ops, dt)};
}
// End of the issue-18 unary math.

// ---------------------------------------------------------------------------------------------
// Issue 18, scans.

// cumsum: the input's sizes, contiguous; integers and bool accumulate in int64 unless a dtype
// is given.
Metas cumsum(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  c.dim(c.int_("dim"), x.dim());
  DType dt = x.dtype;
  if (auto d = c.opt_dtype("dtype"))
    dt = *d;
  else if (!is_floating(dt))
    dt = DType::I64;
  return {make(dt, x.sizes, x.device)};
}
// logcumsumexp: floating inputs only (its loop has no integer types).
Metas logcumsumexp(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  c.dim(c.int_("dim"), x.dim());
  if (!is_floating(x.dtype)) not_implemented(c, "logcumsumexp_out_cpu", x.dtype);
  return {make(x.dtype, x.sizes, x.device)};
}
// End of the issue-18 scans.

// ---------------------------------------------------------------------------------------------
// Reductions: contiguous outputs.

Sizes reduce_shape(const Sizes& in, const std::vector<bool>& mask, bool keepdim) {
  Sizes out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!mask[d])
      out.push_back(in[d]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

std::vector<bool> all_dims(int64_t rank) {
  return std::vector<bool>(size_t(rank), true);
}

// dim=None or dim=[] reduces every dimension.
std::vector<bool> reduce_mask(const Ctx& c, const TensorMeta& x, std::string_view name) {
  if (!c.has(name) || c.ints(name).empty()) return all_dims(x.dim());
  return c.dim_mask(c.ints(name), x.dim());
}

DType sum_dtype(const Ctx& c, const TensorMeta& x) {
  if (auto dt = c.opt_dtype("dtype")) return *dt;
  return is_floating(x.dtype) ? x.dtype : DType::I64;
}

Metas sum_default(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  return {make(sum_dtype(c, x), {}, x.device)};
}

Metas sum_dim(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  return {make(sum_dtype(c, x), reduce_shape(x.sizes, reduce_mask(c, x, "dim"), c.bool_("keepdim")),
               x.device)};
}

DType mean_dtype(const Ctx& c, const TensorMeta& x) {
  auto dt = c.opt_dtype("dtype");
  if (dt && !is_floating(*dt))
    c.fail("mean(): could not infer output dtype. Optional dtype must be a floating point dtype, "
           "got " +
           std::string(dtype_name(*dt)));
  if (!dt && !is_floating(x.dtype))
    c.fail(
        "mean(): could not infer output dtype. Input dtype must be a floating point dtype, got " +
        format_meta(x));
  return dt ? *dt : x.dtype;
}

Metas mean_default(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  return {make(mean_dtype(c, x), {}, x.device)};
}

Metas mean_dim(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  DType dt = mean_dtype(c, x);
  return {make(dt, reduce_shape(x.sizes, reduce_mask(c, x, "dim"), c.bool_("keepdim")), x.device)};
}

void zero_numel_check(const Ctx& c, const TensorMeta& x, const std::vector<bool>& mask,
                      const char* op) {
  for (size_t d = 0; d < mask.size(); ++d)
    if (mask[d] && x.sizes[d] == 0)
      c.fail(std::string(op) + "(): expected reduction dim " + std::to_string(d) +
             " to have non-zero size, input is " + format_meta(x));
  if (x.dim() == 0 && x.numel() == 0) c.fail(std::string(op) + "(): input is empty");
}

Metas amax(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  auto mask = reduce_mask(c, x, "dim");
  zero_numel_check(c, x, mask, "amax");
  return {make(x.dtype, reduce_shape(x.sizes, mask, c.bool_("keepdim")), x.device)};
}

Metas any_dim(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  auto mask = c.dim_mask({c.int_("dim")}, x.dim());
  DType dt = x.dtype == DType::U8 ? DType::U8 : DType::Bool;
  return {make(dt, reduce_shape(x.sizes, mask, c.bool_("keepdim")), x.device)};
}

Metas argmax(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  std::vector<bool> mask;
  if (auto d = c.opt_int("dim")) {
    mask = c.dim_mask({*d}, x.dim());
    zero_numel_check(c, x, mask, "argmax");
  } else {
    if (x.numel() == 0)
      c.fail("argmax(): expected reduction dim to be specified for input.numel() == 0");
    mask = all_dims(x.dim());
  }
  return {make(DType::I64, reduce_shape(x.sizes, mask, c.bool_("keepdim")), x.device)};
}

// _softmax / _log_softmax(self, dim, half_to_float)
Metas softmax_internal(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  c.dim(c.int_("dim"), x.dim());
  if (!is_floating(x.dtype)) c.fail("softmax needs a floating point input, got " + format_meta(x));
  bool half_to_float = c.bool_("half_to_float");
  if (half_to_float && (x.dtype != DType::F16 || x.device.kind != Device::CUDA))
    c.fail("half_to_float is only supported for f16 inputs on CUDA");
  return {make(half_to_float ? DType::F32 : x.dtype, x.sizes, x.device)};
}

// softmax.int / log_softmax.int(self, dim, dtype)
Metas softmax_int(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  c.dim(c.int_("dim"), x.dim());
  DType dt = c.opt_dtype("dtype").value_or(x.dtype);
  if (!is_floating(dt))
    c.fail("softmax needs a floating point input or dtype, got " + format_meta(x));
  return {make(dt, x.sizes, x.device)};
}

// ---------------------------------------------------------------------------------------------
// Normalisation.

void check_same_dtype(const Ctx& c, const TensorMeta& a, const char* an, const TensorMeta* b,
                      const char* bn) {
  if (b && a.dtype != b->dtype)
    c.fail(std::string(an) + " is " + format_meta(a) + " but " + bn + " is " + format_meta(*b) +
           " (dtypes differ)");
}

Metas native_layer_norm(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("input");
  const Sizes& ns = c.ints("normalized_shape");
  if (ns.empty()) c.fail("expected normalized_shape to have at least one element, got []");
  for (const char* w : {"weight", "bias"})
    if (const TensorMeta* t = c.opt_tensor(w); t && t->sizes != ns)
      c.fail(std::string("expected ") + w + " of the same shape as normalized_shape " + join(ns) +
             ", but " + w + " is " + format_meta(*t));
  const int64_t axis = x.dim() - int64_t(ns.size());
  if (axis < 0 || !std::equal(ns.begin(), ns.end(), x.sizes.begin() + axis))
    c.fail("given normalized_shape=" + join(ns) + ", expected input with shape [*, " +
           join(ns).substr(1) + ", but input is " + format_meta(x));
  Sizes stat(x.sizes.begin(), x.sizes.begin() + axis);
  stat.resize(x.sizes.size(), 1);
  // The decomposition keeps statistics in the input dtype on the CPU, in float32 elsewhere.
  DType stat_dt = x.device.kind == Device::CPU || !is_floating(x.dtype) || x.dtype == DType::F64
                      ? x.dtype
                      : DType::F32;
  // The CPU and CUDA kernels normalise input.contiguous() into a contiguous output.
  TensorMeta out = make(x.dtype, x.sizes, x.device);
  return {out, make(stat_dt, stat, x.device), make(stat_dt, stat, x.device)};
}

Metas layer_norm(const Graph& g, const Node& n) {
  Metas r = native_layer_norm(g, n);
  return {r[0]};
}

// Checks shared by batch_norm and _native_batch_norm_legit_no_training; returns the output.
Metas batch_norm_impl(const Ctx& c, bool training) {
  const TensorMeta& x = c.tensor("input");
  if (x.dim() < 2)
    c.fail("batch_norm expects an input with at least 2 dimensions, got " + format_meta(x));
  const int64_t C = x.sizes[1];
  for (const char* w : {"weight", "bias", "running_mean", "running_var"}) {
    const TensorMeta* t = c.opt_tensor(w);
    if (t && (t->dim() != 1 || t->sizes[0] != C))
      c.fail(std::string(w) + " should contain " + std::to_string(C) + " elements, but " + w +
             " is " + format_meta(*t));
  }
  if (!training && (!c.opt_tensor("running_mean") || !c.opt_tensor("running_var")))
    c.fail("running_mean and running_var must be defined in evaluation mode");
  // empty_like(input, input.suggest_memory_format())
  TensorMeta out = make_format(
      x.dtype, x.sizes, x.device,
      suggests_channels_last(x) ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous, nullptr);
  DType stat_dt = is_floating(x.dtype) && dtype_size(x.dtype) < 4 ? DType::F32 : x.dtype;
  Sizes stat = training || x.device.kind != Device::CPU ? Sizes{C} : Sizes{0};
  return {out, make(stat_dt, stat, x.device), make(stat_dt, stat, x.device)};
}

Metas batch_norm(const Graph& g, const Node& n) {
  Ctx c(g, n);
  return {batch_norm_impl(c, c.bool_("training"))[0]};
}

Metas batch_norm_no_training(const Graph& g, const Node& n) {
  Ctx c(g, n);
  return batch_norm_impl(c, false);
}

// ---------------------------------------------------------------------------------------------
// Matrix products: contiguous outputs.

void check_mm_dtypes(const Ctx& c, const char* a, const char* b) {
  if (c.tensor(a).dtype != c.tensor(b).dtype)
    c.fail(c.desc(a) + " but " + c.desc(b) + " (expected the same dtype)");
}

Sizes mm_shape(const Ctx& c, const char* a, const char* b) {
  const TensorMeta& x = c.tensor(a);
  const TensorMeta& y = c.tensor(b);
  if (x.dim() != 2) c.fail(std::string(a) + " must be a matrix, but " + c.desc(a));
  if (y.dim() != 2) c.fail(std::string(b) + " must be a matrix, but " + c.desc(b));
  if (x.sizes[1] != y.sizes[0]) c.fail(c.desc(a) + " but " + c.desc(b));
  check_mm_dtypes(c, a, b);
  return {x.sizes[0], y.sizes[1]};
}

Metas mm(const Graph& g, const Node& n) {
  Ctx c(g, n);
  Sizes s = mm_shape(c, "self", "mat2");
  return {make(c.tensor("self").dtype, s, c.tensor("self").device)};
}

Metas addmm(const Graph& g, const Node& n) {
  Ctx c(g, n);
  Sizes s = mm_shape(c, "mat1", "mat2");
  const TensorMeta& self = c.tensor("self");
  check_mm_dtypes(c, "self", "mat1");
  Sizes b;
  try {
    b = broadcast_shapes(self.sizes, s);
  } catch (const std::invalid_argument&) {
    c.fail(c.desc("self") + " but the product is " + join(s) + " (cannot broadcast)");
  }
  if (b != s) c.fail(c.desc("self") + " but the product is " + join(s) + " (cannot broadcast)");
  return {make(self.dtype, s, self.device)};
}

Metas bmm(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  const TensorMeta& y = c.tensor("mat2");
  if (x.dim() != 3) c.fail("batch1 must be a 3D tensor, but " + c.desc("self"));
  if (y.dim() != 3) c.fail("batch2 must be a 3D tensor, but " + c.desc("mat2"));
  if (x.sizes[0] != y.sizes[0] || x.sizes[2] != y.sizes[1])
    c.fail(c.desc("self") + " but " + c.desc("mat2"));
  check_mm_dtypes(c, "self", "mat2");
  return {make(x.dtype, {x.sizes[0], x.sizes[1], y.sizes[2]}, x.device)};
}

// torch.matmul's shape rules; every path in _matmul_impl returns a contiguous result.
TensorMeta matmul_meta(const Ctx& c, const TensorMeta& x, const TensorMeta& y,
                       const std::string& xd, const std::string& yd) {
  const int64_t d1 = x.dim(), d2 = y.dim();
  if (d1 == 0 || d2 == 0)
    c.fail("both arguments to matmul need to be at least 1D, but " + xd + " and " + yd);
  if (x.dtype != y.dtype) c.fail(xd + " but " + yd + " (expected the same dtype)");
  const int64_t k1 = x.sizes.back();
  const int64_t k2 = d2 > 1 ? y.sizes[size_t(d2 - 2)] : y.sizes[0];
  if (k1 != k2) c.fail(xd + " but " + yd);
  Sizes b1(x.sizes.begin(), x.sizes.begin() + std::max<int64_t>(d1 - 2, 0));
  Sizes b2(y.sizes.begin(), y.sizes.begin() + std::max<int64_t>(d2 - 2, 0));
  Sizes out;
  try {
    out = broadcast_shapes(b1, b2);
  } catch (const std::invalid_argument&) {
    c.fail(xd + " but " + yd + " (batch dimensions cannot be broadcast)");
  }
  if (d1 > 1) out.push_back(x.sizes[size_t(d1 - 2)]);
  if (d2 > 1) out.push_back(y.sizes.back());
  return make(x.dtype, out, x.device);
}

Metas matmul(const Graph& g, const Node& n) {
  Ctx c(g, n);
  return {matmul_meta(c, c.tensor("self"), c.tensor("other"), c.desc("self"), c.desc("other"))};
}

Metas linear(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("input");
  const TensorMeta& w = c.tensor("weight");
  if (w.dim() != 1 && w.dim() != 2) c.fail("weight must be 1-D or 2-D, but " + c.desc("weight"));
  TensorMeta wt = w;
  std::reverse(wt.sizes.begin(), wt.sizes.end());
  std::reverse(wt.strides.begin(), wt.strides.end());
  TensorMeta out = matmul_meta(c, x, wt, c.desc("input"), c.desc("weight"));
  if (const TensorMeta* b = c.opt_tensor("bias")) {
    check_same_dtype(c, x, "input", b, "bias");
    Sizes s;
    try {
      s = broadcast_shapes(b->sizes, out.sizes);
    } catch (const std::invalid_argument&) {
      c.fail(c.desc("bias") + " but the output is " + join(out.sizes));
    }
    if (s != out.sizes) c.fail(c.desc("bias") + " but the output is " + join(out.sizes));
  }
  return {out};
}

// ---------------------------------------------------------------------------------------------
// Convolution and pooling.

TensorMeta conv_meta(const Ctx& c, const TensorMeta& x, const TensorMeta& w, const TensorMeta* bias,
                     Sizes stride, Sizes pad, Sizes dil, bool transposed, Sizes out_pad,
                     int64_t groups) {
  const int64_t nd = x.dim();
  if (nd < 3) c.fail("expected a batched input with at least 3 dimensions, got " + format_meta(x));
  const size_t sp = size_t(nd - 2);
  if (w.dim() != nd)
    c.fail("expected " + std::to_string(w.dim()) + "-dimensional input for " +
           std::to_string(w.dim()) + "-dimensional weight " + join(w.sizes) + ", but got input " +
           format_meta(x));
  if (x.dtype != w.dtype)
    c.fail("input is " + format_meta(x) + " but weight is " + format_meta(w) + " (dtypes differ)");
  auto fit = [&](Sizes& v, const char* what) {
    if (v.size() == 1) v.assign(sp, v[0]);
    if (v.size() != sp)
      c.fail(std::string(what) + " " + join(v) + " does not match " + std::to_string(sp) +
             " spatial dimensions");
  };
  fit(stride, "stride");
  fit(pad, "padding");
  fit(dil, "dilation");
  if (transposed) fit(out_pad, "output_padding");
  for (size_t i = 0; i < sp; ++i) {
    if (stride[i] <= 0) c.fail("non-positive stride is not supported: " + join(stride));
    if (pad[i] < 0) c.fail("negative padding is not supported: " + join(pad));
    if (dil[i] <= 0) c.fail("dilation should be greater than zero: " + join(dil));
  }
  if (groups <= 0) c.fail("non-positive groups is not supported");
  int64_t out_ch;
  if (transposed) {
    if (x.sizes[1] != w.sizes[0])
      c.fail("given transposed=1 and weight " + join(w.sizes) + ", expected input " +
             join(x.sizes) + " to have " + std::to_string(w.sizes[0]) + " channels, but got " +
             std::to_string(x.sizes[1]));
    out_ch = c.checked(__int128(w.sizes[1]) * groups, "output channels");
  } else {
    if (w.sizes[0] % groups != 0)
      c.fail("given groups=" + std::to_string(groups) + ", expected weight " + join(w.sizes) +
             " to be divisible by " + std::to_string(groups) + " at dimension 0");
    if (__int128(w.sizes[1]) * groups != x.sizes[1])
      c.fail("given groups=" + std::to_string(groups) + " and weight " + join(w.sizes) +
             ", expected input " + join(x.sizes) + " to have " +
             std::to_string(__int128(w.sizes[1]) * groups > INT64_MAX ? -1 : w.sizes[1] * groups) +
             " channels, but got " + std::to_string(x.sizes[1]));
    out_ch = w.sizes[0];
  }
  if (bias && (bias->dim() != 1 || bias->sizes[0] != out_ch))
    c.fail("given weight " + join(w.sizes) + ", expected bias to be 1-dimensional with " +
           std::to_string(out_ch) + " elements, but bias is " + format_meta(*bias));
  if (bias && bias->dtype != x.dtype)
    c.fail("input is " + format_meta(x) + " but bias is " + format_meta(*bias) +
           " (dtypes differ)");
  Sizes out{x.sizes[0], out_ch};
  for (size_t i = 0; i < sp; ++i) {
    __int128 in = x.sizes[2 + i], k = w.sizes[2 + i];
    __int128 o;
    if (transposed) {
      o = (in - 1) * stride[i] - 2 * __int128(pad[i]) + __int128(dil[i]) * (k - 1) + out_pad[i] + 1;
    } else {
      __int128 eff = in + 2 * __int128(pad[i]) - __int128(dil[i]) * (k - 1) - 1;
      if (eff < 0)
        c.fail("calculated padded input size per channel is smaller than the kernel: input " +
               join(x.sizes) + ", weight " + join(w.sizes) + ", padding " + join(pad) +
               ", dilation " + join(dil));
      o = eff / stride[i] + 1;
    }
    if (o <= 0 || o > INT64_MAX)
      c.fail("calculated output size is too small or too large for input " + join(x.sizes) +
             " and weight " + join(w.sizes));
    out.push_back(int64_t(o));
  }
  if (x.sizes[1] == 0) out[1] = 0;
  c.check_sizes(out);
  bool cl = nd == 4 && (suggests_channels_last(x) ||
                        (x.device.kind == Device::CUDA && suggests_channels_last(w)));
  return cl ? make_strided(x.dtype, out, channels_last_strides(out), x.device)
            : make(x.dtype, out, x.device);
}

Metas convolution(const Graph& g, const Node& n) {
  Ctx c(g, n);
  return {conv_meta(c, c.tensor("input"), c.tensor("weight"), c.opt_tensor("bias"),
                    c.ints("stride"), c.ints("padding"), c.ints("dilation"), c.bool_("transposed"),
                    c.ints("output_padding"), c.int_("groups"))};
}

Metas conv2d(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("input");
  if (x.dim() != 3 && x.dim() != 4)
    c.fail("expected 3D (unbatched) or 4D (batched) input to conv2d, but " + c.desc("input"));
  TensorMeta in = x;
  if (x.dim() == 3) { // unbatched: unsqueeze(0), then squeeze the result
    in.sizes.insert(in.sizes.begin(), 1);
    in.strides.insert(in.strides.begin(), c.checked(__int128(x.sizes[0]) * x.strides[0], "stride"));
  }
  TensorMeta out =
      conv_meta(c, in, c.tensor("weight"), c.opt_tensor("bias"), c.ints_n("stride", 2),
                c.ints_n("padding", 2), c.ints_n("dilation", 2), false, {0, 0}, c.int_("groups"));
  if (x.dim() == 3) {
    out.sizes.erase(out.sizes.begin());
    out.strides.erase(out.strides.begin());
  }
  return {out};
}

struct PoolGeom {
  Sizes out;
  bool channels_last = false;
};

PoolGeom max_pool_geom(const Ctx& c) {
  const TensorMeta& x = c.tensor("self");
  const Sizes& k0 = c.ints("kernel_size");
  if (k0.size() != 1 && k0.size() != 2)
    c.fail("max_pool2d: kernel_size must either be a single int, or a tuple of two ints");
  Sizes k = c.ints_n("kernel_size", 2);
  Sizes st = c.ints("stride").empty() ? k : c.ints_n("stride", 2);
  Sizes pad = c.ints_n("padding", 2), dil = c.ints_n("dilation", 2);
  bool ceil_mode = c.bool_("ceil_mode");
  if (x.dim() != 3 && x.dim() != 4)
    c.fail("max_pool2d expects a 3D or 4D (batch mode) input, but " + c.desc("self"));
  for (int64_t d = x.dim() == 4 ? 1 : 0; d < x.dim(); ++d)
    if (x.sizes[size_t(d)] == 0)
      c.fail("max_pool2d expects a non-empty input, but " + c.desc("self"));
  for (int i = 0; i < 2; ++i) {
    if (k[i] <= 0) c.fail("kernel size should be greater than zero, but got " + join(k));
    if (st[i] <= 0) c.fail("stride should be greater than zero, but got " + join(st));
    if (dil[i] <= 0) c.fail("dilation should be greater than zero, but got " + join(dil));
    if (pad[i] < 0 || pad[i] > k[i] / 2)
      c.fail("pad should be at most half of the kernel size, but got padding " + join(pad) +
             " and kernel_size " + join(k));
  }
  PoolGeom r;
  r.out.assign(x.sizes.begin(), x.sizes.end() - 2);
  for (int i = 0; i < 2; ++i) {
    __int128 in = x.sizes[x.sizes.size() - 2 + i];
    __int128 num =
        in + 2 * __int128(pad[i]) - __int128(dil[i]) * (k[i] - 1) - 1 + (ceil_mode ? st[i] - 1 : 0);
    __int128 o = (num >= 0 ? num / st[i] : -((-num + st[i] - 1) / st[i])) + 1; // div_rtn
    if (ceil_mode && (o - 1) * st[i] >= in + pad[i]) --o;
    if (o < 1 || o > INT64_MAX)
      c.fail("given input " + join(x.sizes) + ", the calculated output size is too small");
    r.out.push_back(int64_t(o));
  }
  r.channels_last = x.dim() == 4 && suggests_channels_last(x);
  return r;
}

TensorMeta pool_out(DType dt, const PoolGeom& p, Device dev) {
  return p.channels_last ? make_strided(dt, p.out, channels_last_strides(p.out), dev)
                         : make(dt, p.out, dev);
}

Metas max_pool2d(const Graph& g, const Node& n) {
  Ctx c(g, n);
  PoolGeom p = max_pool_geom(c);
  const TensorMeta& x = c.tensor("self");
  return {pool_out(x.dtype, p, x.device)};
}

Metas max_pool2d_with_indices(const Graph& g, const Node& n) {
  Ctx c(g, n);
  PoolGeom p = max_pool_geom(c);
  const TensorMeta& x = c.tensor("self");
  return {pool_out(x.dtype, p, x.device), pool_out(DType::I64, p, x.device)};
}

Metas adaptive_avg_pool2d(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  Sizes os = c.ints_n("output_size", 2);
  if (os[0] < 0 || os[1] < 0)
    c.fail("adaptive_avg_pool2d: elements of output_size must be >= 0, got " + join(os));
  if (x.dim() != 3 && x.dim() != 4)
    c.fail("adaptive_avg_pool2d(): expected a 3D or 4D tensor, but " + c.desc("self"));
  for (int64_t d = 1; d < x.dim(); ++d)
    if (x.sizes[size_t(d)] == 0)
      c.fail("adaptive_avg_pool2d(): expected input to have non-zero size for non-batch "
             "dimensions, but " +
             c.desc("self"));
  PoolGeom p;
  p.out.assign(x.sizes.begin(), x.sizes.end() - 2);
  p.out.push_back(os[0]);
  p.out.push_back(os[1]);
  p.channels_last = x.dim() == 4 && suggests_channels_last(x);
  if (os[0] == 1 && os[1] == 1 && p.channels_last) // mean(-1, -2) restrided to {c, 1, c, c}
    return {make_strided(x.dtype, p.out, {x.sizes[1], 1, x.sizes[1], x.sizes[1]}, x.device)};
  return {pool_out(x.dtype, p, x.device)};
}

// ---------------------------------------------------------------------------------------------
// Attention.

Metas sdpa(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& q = c.tensor("query");
  const TensorMeta& k = c.tensor("key");
  const TensorMeta& v = c.tensor("value");
  const TensorMeta* mask = c.opt_tensor("attn_mask");
  if (q.dtype != k.dtype || q.dtype != v.dtype)
    c.fail("expected query, key and value to have the same dtype, but " + c.desc("query") + ", " +
           c.desc("key") + " and " + c.desc("value"));
  if (!is_floating(q.dtype))
    c.fail("scaled_dot_product_attention needs floating point inputs, but " + c.desc("query"));
  if (q.dim() < 2 || k.dim() < 2 || v.dim() < 2)
    c.fail("query, key and value must have at least 2 dimensions, but " + c.desc("query") + ", " +
           c.desc("key") + " and " + c.desc("value"));
  if (mask && c.bool_("is_causal"))
    c.fail("explicit attn_mask should not be set when is_causal=True");
  if (mask && mask->dtype != DType::Bool && mask->dtype != q.dtype)
    c.fail("attn_mask must be bool or match the query dtype, but " + c.desc("attn_mask"));
  if (q.sizes.back() != k.sizes.back())
    c.fail(c.desc("query") + " but " + c.desc("key") + " (head sizes differ)");
  if (k.sizes[k.sizes.size() - 2] != v.sizes[v.sizes.size() - 2])
    c.fail(c.desc("key") + " but " + c.desc("value") + " (sequence lengths differ)");
  const bool gqa = c.bool_("enable_gqa");
  // Shape: q[..., L, E] @ k^T -> [..., L, S] (+ mask) @ v[..., S, Ev] -> [..., L, Ev].
  Sizes qb(q.sizes.begin(), q.sizes.end() - 2), kb(k.sizes.begin(), k.sizes.end() - 2),
      vb(v.sizes.begin(), v.sizes.end() - 2);
  if (gqa && q.dim() >= 3 && k.dim() == q.dim() && v.dim() == q.dim()) {
    int64_t hq = q.sizes[q.sizes.size() - 3], hk = k.sizes[k.sizes.size() - 3],
            hv = v.sizes[v.sizes.size() - 3];
    if (hk == 0 || hv == 0 || hq % hk != 0 || hq % hv != 0)
      c.fail("with enable_gqa, the number of query heads must be a multiple of the key/value "
             "heads, but " +
             c.desc("query") + ", " + c.desc("key") + " and " + c.desc("value"));
    kb[kb.size() - 1] = hq;
    vb[vb.size() - 1] = hq;
  }
  Sizes batch;
  try {
    batch = broadcast_shapes(broadcast_shapes(qb, kb), vb);
  } catch (const std::invalid_argument&) {
    c.fail("batch dimensions of " + c.desc("query") + ", " + c.desc("key") + " and " +
           c.desc("value") + " cannot be broadcast");
  }
  Sizes out = batch;
  out.push_back(q.sizes[q.sizes.size() - 2]);
  out.push_back(v.sizes.back());
  if (mask) {
    Sizes scores = batch;
    scores.push_back(q.sizes[q.sizes.size() - 2]);
    scores.push_back(k.sizes[k.sizes.size() - 2]);
    Sizes b;
    try {
      b = broadcast_shapes(mask->sizes, scores);
    } catch (const std::invalid_argument&) {
      c.fail(c.desc("attn_mask") + " but the attention scores are " + join(scores) +
             " (cannot broadcast)");
    }
    if (b != scores)
      c.fail(c.desc("attn_mask") + " but the attention scores are " + join(scores) +
             " (cannot broadcast)");
  }
  // Which kernel runs decides the layout: the fused kernels give empty_like(query), the math
  // fallback a contiguous result.
  const bool four_d = q.dim() == 4 && k.dim() == 4 && v.dim() == 4;
  const bool same_heads = four_d && q.sizes[0] == k.sizes[0] && q.sizes[0] == v.sizes[0] &&
                          q.sizes[1] == k.sizes[1] && q.sizes[1] == v.sizes[1];
  if (q.device.kind == Device::CPU) {
    bool mask_ok = true;
    if (mask) {
      const Sizes& m = mask->sizes;
      int64_t L = q.sizes[2], S = k.sizes[2];
      mask_ok = m.size() >= 2 && (m[m.size() - 2] == L || m[m.size() - 2] == 1) &&
                (m.back() == S || m.back() == 1) &&
                (m.size() == 2 || (m.size() == 4 && (m[0] == 1 || m[0] == q.sizes[0]) &&
                                   (m[1] == 1 || m[1] == q.sizes[1])));
    }
    bool flash = four_d && same_heads && c.float_("dropout_p") == 0 && mask_ok &&
                 q.sizes.back() == v.sizes.back() && q.sizes[2] != 0 && k.sizes[2] != 0 &&
                 q.strides.back() == 1 && k.strides.back() == 1 && v.strides.back() == 1;
    if (flash) return {empty_like_preserve(q, q.dtype)};
  } else if (same_heads) {
    if (q.dtype != DType::F32 && q.dtype != DType::F64 && q.sizes.back() == v.sizes.back()) {
      // flash: empty_like(query.transpose(1, 2)).transpose(1, 2)
      TensorMeta qt = q;
      std::swap(qt.sizes[1], qt.sizes[2]);
      std::swap(qt.strides[1], qt.strides[2]);
      TensorMeta o = empty_like_preserve(qt, q.dtype);
      std::swap(o.sizes[1], o.sizes[2]);
      std::swap(o.strides[1], o.strides[2]);
      return {o};
    }
    // memory-efficient: empty(B, L, H, Ev).transpose(1, 2)
    Sizes blhe{out[0], out[2], out[1], out[3]};
    Sizes st = dense_strides(blhe);
    return {make_strided(q.dtype, out, {st[0], st[2], st[1], st[3]}, q.device)};
  }
  return {make(q.dtype, out, q.device)};
}

// ---------------------------------------------------------------------------------------------
// Indexing.

bool is_index_dtype(DType t) {
  return t == DType::I64 || t == DType::I32;
}

Metas embedding(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& w = c.tensor("weight");
  const TensorMeta& idx = c.tensor("indices");
  if (w.dim() != 2) c.fail("'weight' must be 2-D, but " + c.desc("weight"));
  if (!is_index_dtype(idx.dtype))
    c.fail("expected indices of dtype i64 or i32, but " + c.desc("indices"));
  Sizes out = idx.sizes;
  out.push_back(w.sizes[1]);
  return {make(w.dtype, out, w.device)};
}

Metas gather(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& idx = c.tensor("index");
  int64_t d = c.dim(c.int_("dim"), self.dim());
  if (idx.numel() != 0) {
    if (!is_index_dtype(idx.dtype))
      c.fail("gather(): expected an i64 or i32 index, but " + c.desc("index"));
    if (std::max<int64_t>(idx.dim(), 1) != std::max<int64_t>(self.dim(), 1))
      c.fail("index tensor must have the same number of dimensions as input tensor, but " +
             c.desc("index") + " and " + c.desc("self"));
    for (int64_t i = 0; i < idx.dim(); ++i)
      if (i != d && self.dim() > 0 && idx.sizes[size_t(i)] > self.sizes[size_t(i)])
        c.fail("size does not match at dimension " + std::to_string(i) + ": expected " +
               c.desc("index") + " to be no larger than " + c.desc("self") +
               " apart from dimension " + std::to_string(d));
  }
  return {make(self.dtype, idx.sizes, self.device)};
}

Metas scatter_add(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& idx = c.tensor("index");
  const TensorMeta& src = c.tensor("src");
  int64_t d = c.dim(c.int_("dim"), self.dim());
  if (idx.dtype != DType::I64)
    c.fail("scatter_add(): expected an i64 index, but " + c.desc("index"));
  if (src.dtype != self.dtype)
    c.fail(c.desc("self") + " but " + c.desc("src") + " (expected the same dtype)");
  if (idx.numel() != 0) {
    int64_t r = std::max<int64_t>(self.dim(), 1);
    if (std::max<int64_t>(idx.dim(), 1) != r || std::max<int64_t>(src.dim(), 1) != r)
      c.fail("index, self and src must have the same number of dimensions, but " + c.desc("index") +
             ", " + c.desc("self") + " and " + c.desc("src"));
    for (int64_t i = 0; i < idx.dim(); ++i) {
      if (idx.sizes[size_t(i)] > src.sizes[size_t(i)] ||
          (i != d && idx.sizes[size_t(i)] > self.sizes[size_t(i)]))
        c.fail("expected " + c.desc("index") + " to be no larger than " + c.desc("src") +
               " and, apart from dimension " + std::to_string(d) + ", than " + c.desc("self"));
    }
  }
  return {make(self.dtype, self.sizes, self.device)};
}

// meta_index_Tensor's output layout: dense, in the dimension order of the source restrided so
// that indexed dimensions are broadcast (stride 0).
TensorMeta index_layout(const TensorMeta& self, const Sizes& out, const Sizes& restrided) {
  if (self.numel() == 0) return make(self.dtype, out, self.device);
  bool contig = is_contig(out, restrided), cl = is_cl_contig(out, restrided);
  if (contig && !cl) return make(self.dtype, out, self.device);
  if (cl && !contig) return make_strided(self.dtype, out, channels_last_strides(out), self.device);
  return make_strided(self.dtype, out, strides_for_perm(out, sort_dims({restrided}, out), true),
                      self.device);
}

Metas index_select(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& idx = c.tensor("index");
  int64_t d = c.dim(c.int_("dim"), self.dim());
  if (idx.dim() > 1)
    c.fail("index_select(): index is supposed to be a vector, but " + c.desc("index"));
  if (!is_index_dtype(idx.dtype))
    c.fail("index_select(): expected an i64 or i32 index, but " + c.desc("index"));
  Sizes out = self.sizes;
  if (self.dim() == 0) {
    if (idx.numel() != 1)
      c.fail("index_select(): index to select a 0-dim tensor must have one element");
    return {make(self.dtype, out, self.device)};
  }
  out[size_t(d)] = idx.numel();
  // The fake-tensor implementation is self[:, ..., index]: aten.index's layout rule.
  Sizes restrided = self.strides;
  restrided[size_t(d)] = 0;
  return {index_layout(self, out, restrided)};
}

// aten.index.Tensor, following meta_index_Tensor (torch/_meta_registrations.py).
Metas index_tensor(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& self = c.tensor("self");
  auto idx = c.tensors("indices");
  if (idx.empty()) c.fail("at least one index must be provided");
  std::vector<const TensorMeta*> defined;
  for (size_t i = 0; i < idx.size(); ++i) {
    if (!idx[i]) continue;
    if (idx[i]->dtype == DType::Bool || idx[i]->dtype == DType::I8 || idx[i]->dtype == DType::U8)
      c.fail("index " + std::to_string(i) + " is a mask (" + format_meta(*idx[i]) +
             "); boolean mask indexing has a data-dependent shape and is not supported");
    if (!is_index_dtype(idx[i]->dtype))
      c.fail("tensors used as indices must be long, int, byte or bool tensors, but index " +
             std::to_string(i) + " is " + format_meta(*idx[i]));
    defined.push_back(idx[i]);
  }
  if (int64_t(idx.size()) > self.dim())
    c.fail("too many indices for tensor of dimension " + std::to_string(self.dim()) + " (got " +
           std::to_string(idx.size()) + ")");
  Sizes rep = broadcast_all(c, defined);
  std::vector<bool> is_idx(size_t(self.dim()), false);
  for (size_t i = 0; i < idx.size(); ++i) is_idx[i] = idx[i] != nullptr;
  // hasContiguousSubspace: the indexed dims are adjacent.
  int state = 0;
  bool contiguous_subspace = true;
  for (bool b : is_idx) {
    if (state == 0 && b)
      state = 1;
    else if (state == 1 && !b)
      state = 2;
    else if (state == 2 && b)
      contiguous_subspace = false;
  }
  // transposeToFront when not adjacent.
  std::vector<size_t> order;
  for (size_t i = 0; i < is_idx.size(); ++i)
    if (is_idx[i] || contiguous_subspace) order.push_back(i);
  if (!contiguous_subspace)
    for (size_t i = 0; i < is_idx.size(); ++i)
      if (!is_idx[i]) order.push_back(i);
  Sizes before, after, strides_before, strides_after;
  bool seen = false;
  for (size_t p : order) {
    if (is_idx[p]) {
      seen = true;
      continue;
    }
    (seen ? after : before).push_back(self.sizes[p]);
    (seen ? strides_after : strides_before).push_back(self.strides[p]);
  }
  Sizes out = before;
  out.insert(out.end(), rep.begin(), rep.end());
  out.insert(out.end(), after.begin(), after.end());
  c.check_sizes(out);
  // Restrided source: indexed dims become broadcast (stride 0) dims of the replacement shape.
  Sizes rst = strides_before;
  rst.insert(rst.end(), rep.size(), 0);
  rst.insert(rst.end(), strides_after.begin(), strides_after.end());
  return {index_layout(self, out, rst)};
}

// ---------------------------------------------------------------------------------------------
// Shape ops that copy: cat, roll, pad.

Metas cat(const Graph& g, const Node& n) {
  Ctx c(g, n);
  auto ts = c.tensors("tensors");
  if (ts.empty()) c.fail("torch.cat(): expected a non-empty list of tensors");
  for (size_t i = 0; i < ts.size(); ++i) {
    if (!ts[i]) c.fail("torch.cat(): tensor " + std::to_string(i) + " is None");
    if (ts[i]->dim() == 0)
      c.fail("zero-dimensional tensor (at position " + std::to_string(i) +
             ") cannot be concatenated");
  }
  auto skip = [](const TensorMeta* t) { return t->sizes == Sizes{0}; };
  const TensorMeta* first = nullptr;
  size_t first_i = 0;
  for (size_t i = 0; i < ts.size(); ++i)
    if (!skip(ts[i])) {
      first = ts[i];
      first_i = i;
      break;
    }
  ResultType rt;
  for (const TensorMeta* t : ts) rt.add_tensor(*t);
  DType dt = rt.result();
  Device dev = common_device(c, ts);
  if (!first) return {make(dt, {0}, dev)};
  int64_t d = c.dim(c.int_("dim"), first->dim());
  __int128 total = 0;
  for (size_t i = 0; i < ts.size(); ++i) {
    const TensorMeta* t = ts[i];
    if (skip(t)) continue;
    if (t->dim() != first->dim())
      c.fail("tensors must have the same number of dimensions: tensor " + std::to_string(first_i) +
             " is " + format_meta(*first) + " but tensor " + std::to_string(i) + " is " +
             format_meta(*t));
    for (int64_t k = 0; k < t->dim(); ++k)
      if (k != d && t->sizes[size_t(k)] != first->sizes[size_t(k)])
        c.fail("sizes of tensors must match except in dimension " + std::to_string(d) +
               ": tensor " + std::to_string(first_i) + " is " + format_meta(*first) +
               " but tensor " + std::to_string(i) + " is " + format_meta(*t));
    total += t->sizes[size_t(d)];
  }
  Sizes out = first->sizes;
  out[size_t(d)] = c.checked(total, "concatenated size");
  // cat_compute_output_memory_format: channels_last only when every input suggests it.
  bool cl = true;
  for (const TensorMeta* t : ts) cl &= suggests_channels_last(*t);
  return {make_format(dt, out, dev, cl ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous,
                      nullptr)};
}

Metas roll(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  const Sizes& shifts = c.ints("shifts");
  const Sizes& dims = c.ints("dims");
  if (shifts.empty()) c.fail("`shifts` required");
  if (dims.empty() && shifts.size() != 1)
    c.fail("shifts and dimensions must align: shifts " + join(shifts) + ", dims []");
  if (!dims.empty() && dims.size() != shifts.size())
    c.fail("shifts and dimensions must align: shifts " + join(shifts) + ", dims " + join(dims));
  for (int64_t d : dims) c.dim(d, x.dim());
  // Fake tensors run the reference implementation: one index_select per rolled dim, or a roll
  // of the flattened tensor viewed back when no dims are given.
  if (x.numel() == 0) return {empty_like_preserve(x, x.dtype)};
  if (dims.empty()) return {make(x.dtype, x.sizes, x.device)};
  TensorMeta cur = x;
  for (int64_t d : dims) {
    Sizes restrided = cur.strides;
    if (cur.dim() > 0) restrided[size_t(c.dim(d, cur.dim()))] = 0;
    cur = index_layout(cur, cur.sizes, restrided);
  }
  return {cur};
}

// constant_pad_nd's shape and layout; also used by pad(mode="constant").
TensorMeta constant_pad(const Ctx& c, const TensorMeta& x, const Sizes& pad) {
  if (pad.size() % 2 != 0)
    c.fail("length of pad must be even but instead it equals " + std::to_string(pad.size()));
  const int64_t l_pad = int64_t(pad.size() / 2);
  if (l_pad > x.dim())
    c.fail(
        "length of pad should be no more than twice the number of dimensions of the input; pad " +
        join(pad) + " but the input is " + format_meta(x));
  TensorMeta narrowed = x;
  Sizes out = x.sizes;
  bool all_non_positive = true;
  for (int64_t i = x.dim() - l_pad; i < x.dim(); ++i) {
    size_t pi = size_t(2 * (x.dim() - i - 1));
    __int128 o = __int128(x.sizes[size_t(i)]) + pad[pi] + pad[pi + 1];
    if (o < 0)
      c.fail("the input size " + std::to_string(x.sizes[size_t(i)]) + ", plus negative padding " +
             std::to_string(pad[pi]) + " and " + std::to_string(pad[pi + 1]) +
             " resulted in a negative output size at dimension " + std::to_string(i));
    out[size_t(i)] = c.checked(o, "padded size");
    if (pad[pi] > 0 || pad[pi + 1] > 0) all_non_positive = false;
    int64_t narrowed_size =
        x.sizes[size_t(i)] + std::min<int64_t>(pad[pi], 0) + std::min<int64_t>(pad[pi + 1], 0);
    narrowed.sizes[size_t(i)] = std::max<int64_t>(narrowed_size, 0);
  }
  c.check_sizes(out);
  if (all_non_positive) return empty_like_preserve(narrowed, x.dtype); // narrow(...).clone()
  return make_format(
      x.dtype, out, x.device,
      suggests_channels_last(x) ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous, nullptr);
}

Metas constant_pad_nd(const Graph& g, const Node& n) {
  Ctx c(g, n);
  return {constant_pad(c, c.tensor("self"), c.ints("pad"))};
}

Metas pad(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  const Sizes& p = c.ints("pad");
  const std::string& mode = c.str("mode");
  if (mode == "constant") return {constant_pad(c, x, p)};
  if (mode != "reflect" && mode != "replicate" && mode != "circular")
    c.fail("unrecognised padding mode '" + mode + "'");
  if (c.has("value")) c.fail("padding mode \"" + mode + "\" doesn't take in a value argument");
  if (p.size() % 2 != 0 || p.empty() || p.size() > 6)
    c.fail("padding " + join(p) + " must have 2, 4 or 6 values for mode \"" + mode + "\"");
  const int64_t l_pad = int64_t(p.size() / 2);
  if (x.dim() != l_pad + 1 && x.dim() != l_pad + 2)
    c.fail("expected a " + std::to_string(l_pad + 1) + "D or " + std::to_string(l_pad + 2) +
           "D input for padding " + join(p) + ", but the input is " + format_meta(x));
  Sizes out = x.sizes;
  for (int64_t i = 0; i < l_pad; ++i) {
    size_t d = size_t(x.dim() - 1 - i);
    int64_t a = p[size_t(2 * i)], b = p[size_t(2 * i + 1)];
    if (mode == "reflect" && (a >= x.sizes[d] || b >= x.sizes[d]))
      c.fail(
          "padding size should be less than the corresponding input dimension, but got padding (" +
          std::to_string(a) + ", " + std::to_string(b) + ") at dimension " + std::to_string(d) +
          " of input " + join(x.sizes));
    if (mode == "circular" && (a > x.sizes[d] || b > x.sizes[d]))
      c.fail("padding value causes wrapping around more than once: padding (" + std::to_string(a) +
             ", " + std::to_string(b) + ") at dimension " + std::to_string(d) + " of input " +
             join(x.sizes));
    __int128 o = __int128(x.sizes[d]) + a + b;
    if (o < 1)
      c.fail("input size " + std::to_string(x.sizes[d]) + " with padding (" + std::to_string(a) +
             ", " + std::to_string(b) + ") gives an output size below 1 at dimension " +
             std::to_string(d));
    out[d] = c.checked(o, "padded size");
  }
  c.check_sizes(out);
  return {make(x.dtype, out, x.device)};
}

// ---------------------------------------------------------------------------------------------
// Views: PyTorch's view geometry, relative to the base's storage.

TensorMeta view_of(const TensorMeta& base, Sizes sizes, Sizes strides, int64_t offset) {
  return make_strided(base.dtype, std::move(sizes), std::move(strides), base.device, offset);
}

// infer_size: resolves one -1 against numel.
Sizes infer_size(const Ctx& c, const Sizes& shape, int64_t numel) {
  __int128 newsize = 1;
  std::optional<size_t> infer;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == -1) {
      if (infer) c.fail("only one dimension can be inferred");
      infer = d;
    } else if (shape[d] >= 0) {
      newsize *= shape[d];
      if (newsize > std::numeric_limits<int64_t>::max())
        c.fail("shape '" + join(shape) + "' has too many elements");
    } else {
      c.fail("invalid shape dimension " + std::to_string(shape[d]));
    }
  }
  Sizes res = shape;
  if (numel == newsize || (infer && newsize > 0 && numel % int64_t(newsize) == 0)) {
    if (infer) {
      if (newsize == 0)
        c.fail("cannot reshape a tensor of 0 elements into shape " + join(shape) +
               " because the unspecified dimension size -1 can be any value and is ambiguous");
      res[*infer] = numel / int64_t(newsize);
    }
    return res;
  }
  c.fail("shape '" + join(shape) + "' is invalid for input of size " + std::to_string(numel));
}

// computeStride (ATen/TensorUtils.cpp): strides for viewing (oldshape, oldstride) as newshape.
std::optional<Sizes> compute_stride(const Sizes& oldshape, const Sizes& oldstride,
                                    const Sizes& newshape) {
  if (oldshape.empty()) return Sizes(newshape.size(), 1);
  const int64_t numel = numel_of(oldshape);
  if (numel == 0 && oldshape == newshape) return oldstride;
  Sizes newstride(newshape.size());
  if (numel == 0) {
    for (int64_t d = int64_t(newshape.size()) - 1; d >= 0; --d)
      newstride[size_t(d)] =
          d == int64_t(newshape.size()) - 1
              ? 1
              : mul(std::max<int64_t>(newshape[size_t(d + 1)], 1), newstride[size_t(d + 1)]);
    return newstride;
  }
  for (int64_t st : oldstride)
    if (st < 0 || st > (int64_t(1) << 62) / std::max<int64_t>(numel, 1)) return std::nullopt;
  int64_t view_d = int64_t(newshape.size()) - 1;
  int64_t chunk_base_stride = oldstride.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t td = int64_t(oldshape.size()) - 1; td >= 0; --td) {
    tensor_numel *= oldshape[size_t(td)];
    if (td == 0 || (oldshape[size_t(td - 1)] != 1 &&
                    oldstride[size_t(td - 1)] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || newshape[size_t(view_d)] == 1)) {
        newstride[size_t(view_d)] = view_numel * chunk_base_stride;
        view_numel *= newshape[size_t(view_d)];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (td > 0) {
        chunk_base_stride = oldstride[size_t(td - 1)];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return newstride;
}

Metas view(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  Sizes shape = infer_size(c, c.ints("size"), x.numel());
  auto st = compute_stride(x.sizes, x.strides, shape);
  if (!st)
    c.fail("view size " + join(shape) + " is not compatible with the input's size and stride (" +
           format_meta_with_strides(x) +
           "): at least one dimension spans across two contiguous subspaces; use reshape instead");
  return {view_of(x, shape, *st, x.storage_offset)};
}

TensorMeta reshape_meta(const Ctx& c, const TensorMeta& x, const Sizes& requested) {
  Sizes shape = infer_size(c, requested, x.numel());
  if (auto st = compute_stride(x.sizes, x.strides, shape))
    return view_of(x, shape, *st, x.storage_offset);
  return make(x.dtype, shape, x.device); // clone(contiguous_format) then view
}

Metas reshape(const Graph& g, const Node& n) {
  Ctx c(g, n);
  return {reshape_meta(c, c.tensor("self"), c.ints("shape"))};
}

Metas flatten(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  int64_t s = c.dim(c.int_("start_dim"), x.dim()), e = c.dim(c.int_("end_dim"), x.dim());
  if (s > e) c.fail("flatten() has invalid args: start_dim cannot come after end_dim");
  if (x.dim() == 0) return {reshape_meta(c, x, {1})};
  if (s == e) return {x};
  Sizes shape(x.sizes.begin(), x.sizes.begin() + s);
  __int128 prod = 1;
  for (int64_t d = s; d <= e; ++d) prod *= x.sizes[size_t(d)];
  shape.push_back(c.checked(prod, "flattened size"));
  shape.insert(shape.end(), x.sizes.begin() + e + 1, x.sizes.end());
  return {reshape_meta(c, x, shape)};
}

Metas unflatten(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  if (x.dim() == 0) c.fail("unflatten: cannot unflatten a 0-dim tensor");
  int64_t d = c.dim(c.int_("dim"), x.dim());
  const Sizes& sizes = c.ints("sizes");
  if (sizes.empty()) c.fail("unflatten: sizes must be non-empty");
  __int128 known = 1;
  int64_t inferred_dims = 0;
  for (int64_t s : sizes) {
    if (s < -1) c.fail("unflatten: invalid size " + std::to_string(s) + " in " + join(sizes));
    if (s == -1)
      ++inferred_dims;
    else
      known *= s;
    if (known > std::numeric_limits<int64_t>::max())
      c.fail("unflatten: sizes " + join(sizes) + " are too large");
  }
  if (inferred_dims == 0 && known != x.sizes[size_t(d)])
    c.fail("unflatten: provided sizes " + join(sizes) + " don't multiply up to the size of dim " +
           std::to_string(d) + " (" + std::to_string(x.sizes[size_t(d)]) + ") in the input tensor");
  Sizes inferred = infer_size(c, sizes, x.sizes[size_t(d)]);
  Sizes shape(x.sizes.begin(), x.sizes.begin() + d);
  shape.insert(shape.end(), inferred.begin(), inferred.end());
  shape.insert(shape.end(), x.sizes.begin() + d + 1, x.sizes.end());
  auto st = compute_stride(x.sizes, x.strides, shape);
  assert(st && "splitting one dimension is always a view");
  return {view_of(x, shape, *st, x.storage_offset)};
}

Metas permute(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  const Sizes& dims = c.ints("dims");
  if (int64_t(dims.size()) != x.dim())
    c.fail("permute: the number of dims " + join(dims) + " does not match the input's rank (" +
           format_meta(x) + ")");
  Sizes sz, st;
  std::vector<bool> seen(dims.size(), false);
  for (int64_t d : dims) {
    int64_t w = c.dim(d, x.dim());
    if (seen[size_t(w)]) c.fail("permute: repeated dim in " + join(dims));
    seen[size_t(w)] = true;
    sz.push_back(x.sizes[size_t(w)]);
    st.push_back(x.strides[size_t(w)]);
  }
  return {view_of(x, sz, st, x.storage_offset)};
}

Metas transpose(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  int64_t a = c.dim(c.int_("dim0"), x.dim()), b = c.dim(c.int_("dim1"), x.dim());
  TensorMeta out = x;
  if (x.dim() == 0) return {out};
  std::swap(out.sizes[size_t(a)], out.sizes[size_t(b)]);
  std::swap(out.strides[size_t(a)], out.strides[size_t(b)]);
  return {out};
}

Metas expand(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  const Sizes& sizes = c.ints("size");
  const int64_t nd = int64_t(sizes.size()), td = x.dim();
  if (nd < td)
    c.fail("expand: the number of sizes provided (" + std::to_string(nd) +
           ") must be greater or equal to the number of dimensions in the tensor (" +
           format_meta(x) + ")");
  Sizes osz(static_cast<size_t>(nd)), ost(static_cast<size_t>(nd), 0);
  for (int64_t i = nd - 1; i >= 0; --i) {
    int64_t off = nd - 1 - i, d = td - 1 - off;
    int64_t size = d >= 0 ? x.sizes[size_t(d)] : 1;
    int64_t stride = d >= 0 ? x.strides[size_t(d)]
                     : i + 1 < nd
                         ? c.checked(__int128(osz[size_t(i + 1)]) * ost[size_t(i + 1)], "stride")
                         : 0;
    int64_t target = sizes[size_t(i)];
    if (target == -1) {
      if (d < 0)
        c.fail("the expanded size of the tensor (-1) isn't allowed in a leading, non-existing "
               "dimension " +
               std::to_string(i));
      target = size;
    }
    if (target < 0) c.fail("expand: invalid size " + std::to_string(target) + " in " + join(sizes));
    if (size != target) {
      if (size != 1)
        c.fail("the expanded size of the tensor (" + std::to_string(target) +
               ") must match the existing size (" + std::to_string(size) +
               ") at non-singleton dimension " + std::to_string(i) + ": target sizes " +
               join(sizes) + ", tensor is " + format_meta(x));
      size = target;
      stride = 0;
    }
    osz[size_t(i)] = size;
    ost[size_t(i)] = td == 0 ? 0 : stride;
  }
  c.check_sizes(osz);
  return {view_of(x, osz, ost, x.storage_offset)};
}

// narrow/slice geometry on dimension d.
TensorMeta slice_meta(const Ctx& c, const TensorMeta& x, int64_t d, std::optional<int64_t> start,
                      std::optional<int64_t> end, int64_t step) {
  if (step <= 0) c.fail("slice step must be positive, got " + std::to_string(step));
  const int64_t size = x.sizes[size_t(d)];
  int64_t s = start.value_or(0), e = end.value_or(std::numeric_limits<int64_t>::max());
  if (s == std::numeric_limits<int64_t>::max()) s = 0;
  if (s < 0) s += size;
  if (e < 0) e += size;
  if (s < 0)
    s = 0;
  else if (s >= size)
    s = size;
  if (e < s)
    e = s;
  else if (e >= size)
    e = size;
  TensorMeta out = x;
  out.storage_offset =
      c.checked(__int128(x.storage_offset) + __int128(s) * x.strides[size_t(d)], "storage offset");
  out.sizes[size_t(d)] = int64_t((__int128(e) - s + step - 1) / step);
  out.strides[size_t(d)] = c.checked(__int128(x.strides[size_t(d)]) * step, "slice stride");
  return out;
}

Metas slice(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  if (x.dim() == 0) c.fail("slice() cannot be applied to a 0-dim tensor");
  int64_t d = c.dim(c.int_("dim"), x.dim());
  return {slice_meta(c, x, d, c.opt_int("start"), c.opt_int("end"), c.int_("step"))};
}

Metas slice_scatter(const Graph& g, const Node& n);

Metas select(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  if (x.dim() == 0) c.fail("select() cannot be applied to a 0-dim tensor");
  int64_t d = c.dim(c.int_("dim"), x.dim());
  int64_t i = c.int_("index"), size = x.sizes[size_t(d)];
  if (i < -size || i >= size)
    c.fail("select(): index " + std::to_string(i) + " out of range for tensor of size " +
           join(x.sizes) + " at dimension " + std::to_string(d));
  if (i < 0) i += size;
  TensorMeta out = x;
  out.storage_offset =
      c.checked(__int128(x.storage_offset) + __int128(i) * x.strides[size_t(d)], "storage offset");
  out.sizes.erase(out.sizes.begin() + d);
  out.strides.erase(out.strides.begin() + d);
  return {out};
}

Metas unsqueeze(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  int64_t d = c.dim(c.int_("dim"), x.dim() + 1);
  TensorMeta out = x;
  int64_t st =
      d >= x.dim() ? 1 : c.checked(__int128(x.sizes[size_t(d)]) * x.strides[size_t(d)], "stride");
  out.sizes.insert(out.sizes.begin() + d, 1);
  out.strides.insert(out.strides.begin() + d, st);
  return {out};
}

TensorMeta squeeze_meta(const TensorMeta& x, const std::vector<bool>& mask) {
  TensorMeta out = x;
  out.sizes.clear();
  out.strides.clear();
  for (size_t d = 0; d < x.sizes.size(); ++d) {
    if (mask[d] && x.sizes[d] == 1) continue;
    out.sizes.push_back(x.sizes[d]);
    out.strides.push_back(x.strides[d]);
  }
  return out;
}

Metas squeeze_dim(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  return {squeeze_meta(x, c.dim_mask({c.int_("dim")}, x.dim()))};
}

Metas squeeze_dims(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  return {squeeze_meta(x, c.dim_mask(c.ints("dim"), x.dim()))};
}

Metas split(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  if (x.dim() == 0) c.fail("split expects at least a 1-dimensional tensor");
  int64_t d = c.dim(c.int_("dim"), x.dim());
  int64_t s = c.int_("split_size"), size = x.sizes[size_t(d)];
  if (s < 0)
    c.fail("split expects split_size be non-negative, but got split_size=" + std::to_string(s));
  if (s == 0 && size != 0)
    c.fail("split_size can only be 0 if dimension size is 0, but got dimension size of " +
           std::to_string(size));
  int64_t pieces = s == 0 ? 1 : std::max<int64_t>(int64_t((__int128(size) + s - 1) / s), 1);
  Metas out;
  for (int64_t i = 0; i < pieces; ++i) {
    int64_t start = i * s, len = std::min(s, size - start);
    out.push_back(slice_meta(c, x, d, start, start + len, 1));
  }
  return out;
}

Metas split_with_sizes(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  if (x.dim() == 0) c.fail("split_with_sizes expects at least a 1-dimensional tensor");
  int64_t d = c.dim(c.int_("dim"), x.dim());
  const Sizes& sizes = c.ints("split_sizes");
  __int128 sum = 0;
  for (int64_t s : sizes) {
    if (s < 0)
      c.fail("split_with_sizes expects split_sizes have only non-negative entries, but got " +
             join(sizes));
    sum += s;
  }
  if (sum != x.sizes[size_t(d)])
    c.fail("split_with_sizes expects split_sizes to sum exactly to " +
           std::to_string(x.sizes[size_t(d)]) + " (input tensor's size at dimension " +
           std::to_string(d) + "), but got split_sizes=" + join(sizes));
  Metas out;
  int64_t start = 0;
  for (int64_t s : sizes) {
    out.push_back(slice_meta(c, x, d, start, start + s, 1));
    start += s;
  }
  return out;
}

Metas as_strided(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  const Sizes& sz = c.ints("size");
  const Sizes& st = c.ints("stride");
  if (sz.size() != st.size())
    c.fail("mismatch in length of strides and shape: size " + join(sz) + ", stride " + join(st));
  for (int64_t s : st)
    if (s < 0) c.fail("as_strided: negative strides are not supported, got strides " + join(st));
  c.check_sizes(sz);
  int64_t off = c.opt_int("storage_offset").value_or(x.storage_offset);
  if (off < 0) c.fail("as_strided: negative storage offset " + std::to_string(off));
  return {view_of(x, sz, st, off)};
}

Metas alias(const Graph& g, const Node& n) {
  Ctx c(g, n);
  return {c.tensor("self")};
}

Metas contiguous(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  MemoryFormat mf = c.memory_format("memory_format", MemoryFormat::Contiguous);
  if (mf == MemoryFormat::Preserve)
    c.fail("preserve memory format is unsupported by the contiguous operator");
  bool already = mf == MemoryFormat::ChannelsLast ? is_cl_contig(x.sizes, x.strides)
                                                  : is_contig(x.sizes, x.strides);
  if (already) return {x};
  return {make_format(x.dtype, x.sizes, x.device, mf, nullptr)};
}

// ---------------------------------------------------------------------------------------------
// Copies and conversions.

TensorMeta to_copy_meta(const Ctx& c, const TensorMeta& x, DType dt, Device dev, MemoryFormat mf) {
  if (mf == MemoryFormat::Preserve) {
    TensorMeta out = empty_like_preserve(x, dt);
    out.device = dev;
    return out;
  }
  if (mf == MemoryFormat::ChannelsLast && x.dim() != 4)
    c.fail("required rank 4 tensor to use channels_last format, but the input is " +
           format_meta(x));
  return make_format(dt, x.sizes, dev, mf, nullptr);
}

Metas to_copy(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  return {to_copy_meta(c, x, c.opt_dtype("dtype").value_or(x.dtype),
                       c.opt_device("device").value_or(x.device),
                       c.memory_format("memory_format", MemoryFormat::Preserve))};
}

Metas to_dtype(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  DType dt = *c.opt_dtype("dtype");
  MemoryFormat mf = c.memory_format("memory_format", MemoryFormat::Preserve);
  if (dt == x.dtype && !c.bool_("copy") && mf == MemoryFormat::Preserve) return {x};
  return {to_copy_meta(c, x, dt, x.device, mf)};
}

Metas clone(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  MemoryFormat mf = c.memory_format("memory_format", MemoryFormat::Preserve);
  if (mf == MemoryFormat::ChannelsLast && x.dim() != 4)
    c.fail("required rank 4 tensor to use channels_last format, but the input is " +
           format_meta(x));
  return {make_format(x.dtype, x.sizes, x.device, mf, &x)};
}

Metas lift_fresh_copy(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  return {empty_like_preserve(x, x.dtype)};
}

// clone_preserve_strides: same strides and offset unless the input overlaps itself.
TensorMeta clone_preserve_strides(const TensorMeta& x) {
  if (has_internal_overlap(x.sizes, x.strides)) return empty_like_preserve(x, x.dtype);
  return x;
}

Metas copy(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& src = c.tensor("src");
  Sizes b = broadcast_all(c, {&self, &src});
  if (b != self.sizes)
    c.fail(c.desc("src") + " but " + c.desc("self") + " (src must broadcast to self)");
  return {clone_preserve_strides(self)};
}

Metas slice_scatter(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& src = c.tensor("src");
  if (self.dim() == 0) c.fail("slice_scatter() cannot be applied to a 0-dim tensor");
  int64_t d = c.dim(c.int_("dim"), self.dim());
  TensorMeta sl = slice_meta(c, self, d, c.opt_int("start"), c.opt_int("end"), c.int_("step"));
  if (sl.sizes != src.sizes)
    c.fail("expected src to have a size equal to the slice of self: " + c.desc("src") +
           " but the slice is " + join(sl.sizes));
  // A fresh tensor (what torch.export records): self's strides when dense, offset 0.
  return {empty_like_preserve(self, self.dtype)};
}

// ---------------------------------------------------------------------------------------------
// Factories.

Device factory_device(const Ctx& c) {
  return c.opt_device("device").value_or(Device{});
}

Metas full(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const Sizes& sz = c.ints("size");
  c.check_sizes(sz);
  const Arg& v = c.arg("fill_value");
  DType dt = c.opt_dtype("dtype").value_or(scalar_dtype(v));
  return {make(dt, sz, factory_device(c))};
}

Metas zeros(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const Sizes& sz = c.ints("size");
  c.check_sizes(sz);
  return {make(c.opt_dtype("dtype").value_or(DType::F32), sz, factory_device(c))};
}

Metas scalar_tensor(const Graph& g, const Node& n) {
  Ctx c(g, n);
  return {make(c.opt_dtype("dtype").value_or(DType::F32), {}, factory_device(c))};
}

Metas new_zeros(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  const Sizes& sz = c.ints("size");
  c.check_sizes(sz);
  return {
      make(c.opt_dtype("dtype").value_or(x.dtype), sz, c.opt_device("device").value_or(x.device))};
}

Metas full_like(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  DType dt = c.opt_dtype("dtype").value_or(x.dtype);
  MemoryFormat mf = c.memory_format("memory_format", MemoryFormat::Preserve);
  TensorMeta out = make_format(dt, x.sizes, x.device, mf, &x);
  out.device = c.opt_device("device").value_or(x.device);
  return {out};
}

Metas arange(const Graph& g, const Node& n) {
  Ctx c(g, n);
  int si = n.schema ? n.schema->index_of("start") : -1;
  int pi = n.schema ? n.schema->index_of("step") : -1;
  Arg start = si >= 0 ? c.arg("start") : Arg::of_int(0);
  Arg end = c.arg("end");
  Arg step = pi >= 0 ? c.arg("step") : Arg::of_int(1);
  for (const Arg* a : {&start, &end, &step})
    if (!is_scalar_kind(a->kind))
      c.fail("arange expects numbers, got " + std::string(arg_kind_name(a->kind)));
  bool any_float = start.kind == Arg::Kind::Float || end.kind == Arg::Kind::Float ||
                   step.kind == Arg::Kind::Float;
  DType dt = c.opt_dtype("dtype").value_or(any_float ? DType::F32 : DType::I64);
  double xs = start.scalar(), xe = end.scalar(), xst = step.scalar();
  if (!std::isfinite(xs) || !std::isfinite(xe))
    c.fail("unsupported range: " + std::to_string(xs) + " -> " + std::to_string(xe));
  if (xst == 0) c.fail("step must be nonzero");
  if (!((xst > 0 && xe >= xs) || (xst < 0 && xe <= xs)))
    c.fail("upper bound and larger bound inconsistent with step sign");
  double size_d;
  if (!is_floating(dt)) {
    // Integer arange: the bounds are truncated to integers first.
    for (double v : {xs, xe, xst})
      if (!(std::fabs(v) < 9.2e18))
        c.fail("arange bounds or step out of range for " + std::string(dtype_name(dt)));
    __int128 is = __int128(std::trunc(xs)), ie = __int128(std::trunc(xe)),
             ist = __int128(std::trunc(xst));
    if (ist == 0) c.fail("step must be nonzero");
    __int128 sgn = ist > 0 ? 1 : -1;
    size_d = double((ie - is + ist - sgn) / ist);
  } else {
    size_d = std::ceil((xe - xs) / xst);
  }
  if (!(size_d >= 0 && size_d <= 9.2e18)) c.fail("invalid size, possible overflow?");
  return {make(dt, {int64_t(size_d)}, factory_device(c))};
}

// ---------------------------------------------------------------------------------------------
// Assertions.

Metas assert_tensor_metadata(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& a = c.tensor("a");
  if (c.has("size") && c.ints("size") != a.sizes)
    c.fail("tensor size mismatch: expected " + join(c.ints("size")) + ", got " + format_meta(a));
  if (c.has("stride") && c.ints("stride") != a.strides)
    c.fail("tensor stride mismatch: expected " + join(c.ints("stride")) + ", got " +
           join(a.strides));
  if (auto dt = c.opt_dtype("dtype"); dt && *dt != a.dtype)
    c.fail("tensor dtype mismatch: expected " + std::string(dtype_name(*dt)) + ", got " +
           format_meta(a));
  if (auto dev = c.opt_device("device"); dev && dev->kind != a.device.kind)
    c.fail("tensor device mismatch: expected " + device_name(*dev) + ", got " +
           device_name(a.device));
  return {};
}

// ---------------------------------------------------------------------------------------------
// The table: one row per op.

// Runs F, reporting sizes that overflow int64 as an error of the node.
template <MetaFn F> Metas guarded(const Graph& g, const Node& n) {
  try {
    return F(g, n);
  } catch (const SizeOverflow&) {
    throw Error(g.source, "sizes or strides overflow 64-bit integers", n.name, n.target);
  }
}

const OpTable<MetaFn>::Row kMeta[] = {
    {OpId::_assert_tensor_metadata, guarded<assert_tensor_metadata>},
    {OpId::_log_softmax, guarded<softmax_internal>},
    {OpId::_native_batch_norm_legit_no_training, guarded<batch_norm_no_training>},
    {OpId::_softmax, guarded<softmax_internal>},
    {OpId::_to_copy, guarded<to_copy>},
    {OpId::abs, guarded<unary<Out::Same>>},
    {OpId::adaptive_avg_pool2d, guarded<adaptive_avg_pool2d>},
    {OpId::add_Scalar, guarded<binary<Bin::Arith>>},
    {OpId::add_Tensor, guarded<binary<Bin::Arith>>},
    {OpId::add__Tensor, guarded<add_inplace>},
    {OpId::addmm, guarded<addmm>},
    {OpId::alias, guarded<alias>},
    {OpId::amax, guarded<amax>},
    {OpId::any_dim, guarded<any_dim>},
    {OpId::arange, guarded<arange>},
    {OpId::arange_start, guarded<arange>},
    {OpId::arange_start_step, guarded<arange>},
    {OpId::argmax, guarded<argmax>},
    {OpId::as_strided, guarded<as_strided>},
    {OpId::batch_norm, guarded<batch_norm>},
    {OpId::bmm, guarded<bmm>},
    {OpId::cat, guarded<cat>},
    {OpId::clamp, guarded<clamp>},
    {OpId::clone, guarded<clone>},
    {OpId::constant_pad_nd, guarded<constant_pad_nd>},
    {OpId::contiguous, guarded<contiguous>},
    {OpId::conv2d, guarded<conv2d>},
    {OpId::convolution, guarded<convolution>},
    {OpId::copy, guarded<copy>},
    {OpId::cos, guarded<unary<Out::Float>>},
    {OpId::div_Scalar, guarded<binary<Bin::TrueDiv>>},
    {OpId::div_Tensor, guarded<binary<Bin::TrueDiv>>},
    {OpId::dropout, guarded<dropout>},
    {OpId::embedding, guarded<embedding>},
    {OpId::eq_Scalar, guarded<binary<Bin::Compare>>},
    {OpId::eq_Tensor, guarded<binary<Bin::Compare>>},
    {OpId::erf, guarded<unary<Out::Float>>},
    {OpId::exp, guarded<unary<Out::Float>>},
    {OpId::expand, guarded<expand>},
    {OpId::fill__Scalar, guarded<inplace>},
    {OpId::fill__Tensor, guarded<fill_tensor>},
    {OpId::flatten_using_ints, guarded<flatten>},
    {OpId::fmod_Scalar, guarded<int_division<kFmodCpu>>},
    {OpId::full, guarded<full>},
    {OpId::full_like, guarded<full_like>},
    {OpId::gather, guarded<gather>},
    {OpId::ge_Scalar, guarded<binary<Bin::Compare>>},
    {OpId::ge_Tensor, guarded<binary<Bin::Compare>>},
    {OpId::gelu, guarded<gelu>},
    {OpId::gt_Scalar, guarded<binary<Bin::Compare>>},
    {OpId::gt_Tensor, guarded<binary<Bin::Compare>>},
    {OpId::hardsigmoid, guarded<unary<Out::Same>>},
    {OpId::hardswish, guarded<unary<Out::Same>>},
    {OpId::hardswish_, guarded<inplace>},
    {OpId::index_Tensor, guarded<index_tensor>},
    {OpId::index_select, guarded<index_select>},
    {OpId::layer_norm, guarded<layer_norm>},
    {OpId::le_Scalar, guarded<binary<Bin::Compare>>},
    {OpId::le_Tensor, guarded<binary<Bin::Compare>>},
    {OpId::lift_fresh_copy, guarded<lift_fresh_copy>},
    {OpId::linear, guarded<linear>},
    {OpId::log, guarded<unary<Out::Float>>},
    {OpId::log_softmax_int, guarded<softmax_int>},
    {OpId::logical_and, guarded<binary<Bin::Logical>>},
    {OpId::logical_not, guarded<unary<Out::Bool>>},
    {OpId::lt_Scalar, guarded<binary<Bin::Compare>>},
    {OpId::lt_Tensor, guarded<binary<Bin::Compare>>},
    {OpId::masked_fill_Scalar, guarded<masked_fill>},
    {OpId::matmul, guarded<matmul>},
    {OpId::max_pool2d, guarded<max_pool2d>},
    {OpId::max_pool2d_with_indices, guarded<max_pool2d_with_indices>},
    {OpId::maximum, guarded<binary<Bin::Arith>>},
    {OpId::mean, guarded<mean_default>},
    {OpId::mean_dim, guarded<mean_dim>},
    {OpId::min_other, guarded<binary<Bin::Arith>>},
    {OpId::minimum, guarded<binary<Bin::Arith>>},
    {OpId::mm, guarded<mm>},
    {OpId::mul_Scalar, guarded<binary<Bin::Arith>>},
    {OpId::mul_Tensor, guarded<binary<Bin::Arith>>},
    {OpId::native_layer_norm, guarded<native_layer_norm>},
    {OpId::ne_Scalar, guarded<binary<Bin::Compare>>},
    {OpId::ne_Tensor, guarded<binary<Bin::Compare>>},
    {OpId::neg, guarded<neg>},
    {OpId::new_zeros, guarded<new_zeros>},
    {OpId::pad, guarded<pad>},
    {OpId::permute, guarded<permute>},
    {OpId::pow_Tensor_Scalar, guarded<binary<Bin::Pow>>},
    {OpId::pow_Tensor_Tensor, guarded<binary<Bin::Pow>>},
    {OpId::reciprocal, guarded<unary<Out::Float>>},
    {OpId::relu, guarded<unary<Out::Same>>},
    {OpId::relu_, guarded<inplace>},
    {OpId::reshape, guarded<reshape>},
    {OpId::roll, guarded<roll>},
    {OpId::rsqrt, guarded<unary<Out::Float>>},
    {OpId::scalar_tensor, guarded<scalar_tensor>},
    {OpId::scaled_dot_product_attention, guarded<sdpa>},
    {OpId::scatter_add, guarded<scatter_add>},
    {OpId::select_int, guarded<select>},
    {OpId::sigmoid, guarded<unary<Out::Float>>},
    {OpId::sign, guarded<unary<Out::Same>>},
    {OpId::silu, guarded<unary<Out::Same>>},
    {OpId::silu_, guarded<inplace>},
    {OpId::sin, guarded<unary<Out::Float>>},
    {OpId::slice_Tensor, guarded<slice>},
    {OpId::slice_scatter, guarded<slice_scatter>},
    {OpId::softmax_int, guarded<softmax_int>},
    {OpId::split_Tensor, guarded<split>},
    {OpId::split_with_sizes, guarded<split_with_sizes>},
    {OpId::sqrt, guarded<unary<Out::Float>>},
    {OpId::squeeze_dim, guarded<squeeze_dim>},
    {OpId::squeeze_dims, guarded<squeeze_dims>},
    {OpId::sub_Tensor, guarded<binary<Bin::Sub>>},
    {OpId::sum, guarded<sum_default>},
    {OpId::sum_dim_IntList, guarded<sum_dim>},
    {OpId::tanh, guarded<unary<Out::Float>>},
    {OpId::to_dtype, guarded<to_dtype>},
    {OpId::transpose_int, guarded<transpose>},
    {OpId::unflatten_int, guarded<unflatten>},
    {OpId::unsqueeze, guarded<unsqueeze>},
    {OpId::view, guarded<view>},
    {OpId::where_ScalarOther, guarded<where_scalar_other>},
    {OpId::where_self, guarded<where_self>},
    {OpId::zeros, guarded<zeros>},
    // Issue 18 op families (integer division, rsub, bitwise, logical).
    {OpId::bitwise_and_Scalar, guarded<bitwise<kBitwiseAndCpu, true>>},
    {OpId::bitwise_and_Tensor, guarded<bitwise<kBitwiseAndCpu, true>>},
    {OpId::bitwise_left_shift_Tensor, guarded<bitwise<kLshiftCpu, false>>},
    {OpId::bitwise_left_shift_Tensor_Scalar, guarded<bitwise<kLshiftCpu, false>>},
    {OpId::bitwise_not, guarded<bitwise_not>},
    {OpId::bitwise_or_Scalar, guarded<bitwise<kBitwiseOrCpu, true>>},
    {OpId::bitwise_or_Tensor, guarded<bitwise<kBitwiseOrCpu, true>>},
    {OpId::bitwise_right_shift_Tensor, guarded<bitwise<kRshiftCpu, false>>},
    {OpId::bitwise_right_shift_Tensor_Scalar, guarded<bitwise<kRshiftCpu, false>>},
    {OpId::bitwise_xor_Scalar, guarded<bitwise<kBitwiseXorCpu, true>>},
    {OpId::bitwise_xor_Tensor, guarded<bitwise<kBitwiseXorCpu, true>>},
    {OpId::div_Scalar_mode, guarded<div_mode>},
    {OpId::div_Tensor_mode, guarded<div_mode>},
    {OpId::floor_divide, guarded<int_division<kDivFloorCpu>>},
    {OpId::floor_divide_Scalar, guarded<int_division<kDivFloorCpu>>},
    {OpId::fmod_Tensor, guarded<int_division<kFmodCpu>>},
    {OpId::logical_or, guarded<binary<Bin::Logical>>},
    {OpId::logical_xor, guarded<binary<Bin::Logical>>},
    {OpId::remainder_Scalar, guarded<int_division<kRemainderCpu>>},
    {OpId::remainder_Tensor, guarded<int_division<kRemainderCpu>>},
    {OpId::rsub_Scalar, guarded<binary<Bin::Sub>>},
    {OpId::rsub_Tensor, guarded<binary<Bin::Sub>>},
    {OpId::sub_Scalar, guarded<binary<Bin::Sub>>},
    {OpId::acos, guarded<unary<Out::Float>>},
    {OpId::acosh, guarded<unary<Out::Float>>},
    {OpId::asin, guarded<unary<Out::Float>>},
    {OpId::asinh, guarded<unary<Out::Float>>},
    {OpId::atan, guarded<unary<Out::Float>>},
    {OpId::atanh, guarded<unary<Out::Float>>},
    {OpId::cosh, guarded<unary<Out::Float>>},
    {OpId::expm1, guarded<unary<Out::Float>>},
    {OpId::log10, guarded<unary<Out::Float>>},
    {OpId::log1p, guarded<unary<Out::Float>>},
    {OpId::log2, guarded<unary<Out::Float>>},
    {OpId::sinh, guarded<unary<Out::Float>>},
    {OpId::tan, guarded<unary<Out::Float>>},
    {OpId::atan2, guarded<binary<Bin::TrueDiv>>},
    {OpId::ceil, guarded<rounding<kCeilCpu>>},
    {OpId::clamp_Tensor, guarded<clamp_tensor>},
    {OpId::floor, guarded<rounding<kFloorCpu>>},
    {OpId::isinf, guarded<unary<Out::Bool>>},
    {OpId::isnan, guarded<unary<Out::Bool>>},
    {OpId::pow_Scalar, guarded<pow_scalar>},
    {OpId::round, guarded<rounding<kRoundCpu>>},
    {OpId::round_decimals, guarded<round_decimals>},
    {OpId::trunc, guarded<rounding<kTruncCpu>>},
    {OpId::cumsum, guarded<cumsum>},
    {OpId::cumprod, guarded<cumsum>},
    {OpId::logcumsumexp, guarded<logcumsumexp>},
    // End of the issue-18 rows.
};

// A plugin's op (frontend/custom_ops.h): its shape function, on the device of the first tensor.
Metas custom_op_meta(const Graph& g, const Node& n) {
  const CustomOp* op = find_custom_op(n.target);
  if (!op) throw Error(g.source, unknown_op_message(n.target), n.name, n.target);
  std::vector<const TensorMeta*> tensors;
  for (size_t i = 0; i < op->schema.args.size() && i < n.args.size(); ++i) {
    if (op->schema.args[i].type != ArgType::Tensor) continue;
    const Arg& a = n.args[i];
    if (a.kind != Arg::Kind::Tensor || a.tensor < 0 || size_t(a.tensor) >= g.values.size())
      throw Error(g.source, "argument '" + op->schema.args[i].name + "' is not a tensor", n.name,
                  n.target);
    tensors.push_back(&g.values[size_t(a.tensor)].meta);
  }
  try {
    fxc_op_args args = custom_op_args(*op, n.args, tensors);
    return custom_op_output_metas(*op, args, tensors.empty() ? Device{} : tensors[0]->device);
  } catch (const std::invalid_argument& e) {
    throw Error(g.source, e.what(), n.name, n.target);
  }
}

const OpTable<MetaFn>& meta_table() {
  static const OpTable<MetaFn> table(kMeta);
  return table;
}

} // namespace

const OpLayer& meta_layer() { return meta_table(); }

MetaFn find_meta(std::string_view target) {
  if (MetaFn fn = meta_table().find(target)) return fn;
  return find_custom_op(target) ? custom_op_meta : nullptr;
}

} // namespace fxc
