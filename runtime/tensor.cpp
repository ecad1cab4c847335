// Host tensors: storage plus view metadata, element access for every dtype, f16/bf16 conversion.
#include "runtime/tensor.h"

#include <bit>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>

namespace fxc {

float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  if (exp == 0) { // zero or subnormal: man * 2^-24, exact in float
    float v = std::ldexp(float(man), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (man << 13));
  return std::bit_cast<float>(sign | ((exp - 15 + 127) << 23) | (man << 13));
}

uint16_t float_to_half(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint16_t sign = uint16_t((x >> 16) & 0x8000);
  uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return sign | 0x7e00 | uint16_t((ax >> 13) & 0x3ff); // NaN stays NaN
  if (ax >= 0x477ff000u) return sign | 0x7c00; // >= 65520 rounds to infinity
  if (ax >= 0x38800000u) {                     // normal half
    uint32_t e = (ax >> 23) - 127 + 15, m = ax & 0x7fffff;
    uint32_t h = (e << 10) | (m >> 13), rem = m & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h; // carries into the exponent correctly
    return sign | uint16_t(h);
  }
  // Subnormal half (or zero): round(|f| * 2^24) to nearest even.
  uint32_t e = ax >> 23;
  if (e == 0) return sign; // float subnormals are far below half's smallest subnormal
  uint32_t m = (ax & 0x7fffff) | 0x800000, shift = 126 - e;
  if (shift > 24) return sign;
  uint32_t h = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
  if (rem > half || (rem == half && (h & 1))) ++h;
  return sign | uint16_t(h);
}

float bf16_to_float(uint16_t b) {
  return std::bit_cast<float>(uint32_t(b) << 16);
}

uint16_t float_to_bf16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40); // quiet NaN
  uint32_t bias = 0x7fff + ((x >> 16) & 1);
  return uint16_t((x + bias) >> 16);
}

namespace {

// double -> int64 the way a C cast would, without undefined behaviour out of range.
int64_t to_int64(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9.2233720368547758e18) return std::numeric_limits<int64_t>::max();
  if (v <= -9.2233720368547758e18) return std::numeric_limits<int64_t>::min();
  return int64_t(v);
}

// f32 -> f64 over n contiguous elements; optimised even in debug builds (GCC), since
// float64 mode converts every weight this way. Conversion is exact, so optimisation is safe.
#if defined(__GNUC__) && !defined(__clang__)
[[gnu::optimize("O3")]]
#endif
void widen_f32(const std::byte* src, std::byte* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float f;
    std::memcpy(&f, src + i * 4, 4);
    double d = f;
    std::memcpy(dst + i * 8, &d, 8);
  }
}

} // namespace

double round_to_dtype(double v, DType dtype) {
  switch (dtype) {
  case DType::Bool:
    return v != 0 ? 1.0 : 0.0;
  case DType::U8:
    return double(uint8_t(to_int64(v)));
  case DType::I8:
    return double(int8_t(to_int64(v)));
  case DType::I16:
    return double(int16_t(to_int64(v)));
  case DType::I32:
    return double(int32_t(to_int64(v)));
  case DType::I64:
    return double(to_int64(v));
  case DType::F16:
    return half_to_float(float_to_half(float(v)));
  case DType::BF16:
    return bf16_to_float(float_to_bf16(float(v)));
  case DType::F32:
    return double(float(v));
  case DType::F64:
    return v;
  }
  return v;
}

int64_t checked_numel(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) {
    if (s < 0) throw TensorError("negative dimension " + std::to_string(s));
    if (s != 0 && n > std::numeric_limits<int64_t>::max() / s)
      throw TensorError("tensor size overflows");
    n *= s;
  }
  return n;
}

Tensor::Tensor(std::shared_ptr<Storage> storage, TensorMeta meta)
    : storage_(std::move(storage)), meta_(std::move(meta)) {
  assert(meta_.sizes.size() == meta_.strides.size() && "sizes and strides differ in rank");
}

Tensor Tensor::empty(DType dtype, std::vector<int64_t> sizes) {
  int64_t n = checked_numel(sizes);
  int64_t item = int64_t(dtype_size(dtype));
  if (n > kMaxBytes / item)
    throw TensorError("tensor of " + std::to_string(n) + " elements is too large");
  TensorMeta m;
  m.dtype = dtype;
  m.strides = contiguous_strides(sizes);
  m.sizes = std::move(sizes);
  return Tensor(std::make_shared<Storage>(size_t(n * item)), std::move(m));
}

Tensor Tensor::from_values(DType dtype, std::vector<int64_t> sizes,
                           const std::vector<double>& values) {
  Tensor t = empty(dtype, std::move(sizes));
  assert(int64_t(values.size()) == t.numel() && "value count differs from the shape");
  for (size_t i = 0; i < values.size(); ++i) t.store(int64_t(i), values[i]);
  return t;
}

Tensor Tensor::scalar(DType dtype, double v) {
  return from_values(dtype, {}, {v});
}

namespace {

// Throws unless a view with this metadata lies inside a storage of `nbytes`.
void check_in_bounds(const TensorMeta& m, size_t nbytes) {
  if (m.sizes.size() != m.strides.size())
    throw TensorError("view has " + std::to_string(m.sizes.size()) + " sizes but " +
                      std::to_string(m.strides.size()) + " strides");
  int64_t n = checked_numel(m.sizes);
  if (m.storage_offset < 0) throw TensorError("negative storage offset");
  if (n == 0) return;
  int64_t extent = 0;
  for (size_t d = 0; d < m.sizes.size(); ++d) {
    if (m.strides[d] < 0) throw TensorError("negative strides are not supported");
    if (m.sizes[d] > 1 &&
        m.strides[d] > (std::numeric_limits<int64_t>::max() - extent) / (m.sizes[d] - 1))
      throw TensorError("view extent overflows");
    extent += (m.sizes[d] - 1) * m.strides[d];
  }
  int64_t item = int64_t(dtype_size(m.dtype));
  int64_t elems = int64_t(nbytes) / item;
  if (m.storage_offset > elems || extent >= elems - m.storage_offset)
    throw TensorError("view " + format_meta_with_strides(m) + " with storage offset " +
                      std::to_string(m.storage_offset) + " needs more than the " +
                      std::to_string(elems) + " elements of its storage");
}

} // namespace

Tensor Tensor::from_weight(const WeightData& w) {
  assert(w.storage && "weight without storage");
  check_in_bounds(w.meta, w.storage->nbytes());
  return Tensor(w.storage, w.meta);
}

Tensor Tensor::as_strided(std::vector<int64_t> sizes, std::vector<int64_t> strides,
                          int64_t offset) const {
  TensorMeta m = meta_;
  m.sizes = std::move(sizes);
  m.strides = std::move(strides);
  m.storage_offset = offset;
  check_in_bounds(m, storage_->nbytes());
  return Tensor(storage_, std::move(m));
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return clone();
}

Tensor Tensor::to(DType dtype) const {
  Tensor out = empty(dtype, sizes());
  out.copy_from(*this);
  return out;
}

Tensor Tensor::clone() const {
  return to(dtype());
}

void Tensor::copy_from(const Tensor& src) const {
  // Broadcast src to this shape: align trailing dims, size-1 dims get stride 0.
  int64_t nd = dim(), sd = src.dim();
  if (sd > nd)
    throw TensorError("cannot copy " + format_meta(src.meta()) + " into " + format_meta(meta_));
  std::vector<int64_t> sstr(nd, 0);
  for (int64_t d = 0; d < sd; ++d) {
    int64_t od = nd - sd + d;
    if (src.size(d) == sizes()[od])
      sstr[od] = src.stride(d);
    else if (src.size(d) != 1)
      throw TensorError("cannot copy " + format_meta(src.meta()) + " into " + format_meta(meta_));
  }
  int64_t n = numel();
  if (n == 0) return;
  // Fast paths for dense copies (weights converted to f64, clones): same shape, both contiguous.
  if (src.sizes() == sizes() && src.is_contiguous() && is_contiguous()) {
    if (src.dtype() == dtype()) {
      std::memcpy(raw_data(), src.raw_data(), size_t(n) * dtype_size(dtype()));
      return;
    }
    if (src.dtype() == DType::F32 && dtype() == DType::F64) {
      widen_f32(src.raw_data(), raw_data(), n);
      return;
    }
  }
  std::vector<int64_t> idx(nd, 0);
  int64_t so = 0, dofs = 0;
  bool as_int = !is_floating(dtype()) && !is_floating(src.dtype());
  bool same = dtype() == src.dtype();
  size_t item = dtype_size(dtype());
  std::byte* dbase = raw_data();
  const std::byte* sbase = src.raw_data();
  for (int64_t i = 0; i < n; ++i) {
    if (same)
      std::memcpy(dbase + dofs * item, sbase + so * item, item);
    else if (as_int)
      store_int(dofs, src.load_int(so));
    else
      store(dofs, src.load(so));
    for (int64_t d = nd - 1; d >= 0; --d) {
      so += sstr[d];
      dofs += strides()[d];
      if (++idx[d] < sizes()[d]) break;
      so -= sstr[d] * sizes()[d];
      dofs -= strides()[d] * sizes()[d];
      idx[d] = 0;
    }
  }
}

std::vector<double> Tensor::to_vector() const {
  std::vector<double> v(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) v[size_t(i)] = load(offset_of(i));
  return v;
}

double Tensor::item() const {
  if (numel() != 1)
    throw TensorError("a tensor with " + std::to_string(numel()) +
                      " elements cannot be converted to a scalar");
  return load(offset_of(0));
}

std::byte* Tensor::raw_data() const {
  return storage_->data() + storage_offset() * int64_t(dtype_size(dtype()));
}

double Tensor::load(int64_t k) const {
  const std::byte* p = raw_data() + k * int64_t(dtype_size(dtype()));
  auto rd = [p]<class T>(T*) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
  };
  switch (dtype()) {
  case DType::Bool:
    return rd((uint8_t*)nullptr) != 0 ? 1.0 : 0.0;
  case DType::U8:
    return rd((uint8_t*)nullptr);
  case DType::I8:
    return rd((int8_t*)nullptr);
  case DType::I16:
    return rd((int16_t*)nullptr);
  case DType::I32:
    return rd((int32_t*)nullptr);
  case DType::I64:
    return double(rd((int64_t*)nullptr));
  case DType::F16:
    return half_to_float(rd((uint16_t*)nullptr));
  case DType::BF16:
    return bf16_to_float(rd((uint16_t*)nullptr));
  case DType::F32:
    return rd((float*)nullptr);
  case DType::F64:
    return rd((double*)nullptr);
  }
  return 0;
}

void Tensor::store(int64_t k, double v) const {
  std::byte* p = raw_data() + k * int64_t(dtype_size(dtype()));
  auto wr = [p](auto x) { std::memcpy(p, &x, sizeof(x)); };
  switch (dtype()) {
  case DType::Bool:
    wr(uint8_t(v != 0));
    return;
  case DType::U8:
    wr(uint8_t(to_int64(v)));
    return;
  case DType::I8:
    wr(int8_t(to_int64(v)));
    return;
  case DType::I16:
    wr(int16_t(to_int64(v)));
    return;
  case DType::I32:
    wr(int32_t(to_int64(v)));
    return;
  case DType::I64:
    wr(to_int64(v));
    return;
  case DType::F16:
    wr(float_to_half(float(v)));
    return;
  case DType::BF16:
    wr(float_to_bf16(float(v)));
    return;
  case DType::F32:
    wr(float(v));
    return;
  case DType::F64:
    wr(v);
    return;
  }
}

int64_t Tensor::load_int(int64_t k) const {
  if (is_floating(dtype())) return to_int64(load(k));
  const std::byte* p = raw_data() + k * int64_t(dtype_size(dtype()));
  auto rd = [p]<class T>(T*) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return int64_t(v);
  };
  switch (dtype()) {
  case DType::Bool:
    return rd((uint8_t*)nullptr) != 0;
  case DType::U8:
    return rd((uint8_t*)nullptr);
  case DType::I8:
    return rd((int8_t*)nullptr);
  case DType::I16:
    return rd((int16_t*)nullptr);
  case DType::I32:
    return rd((int32_t*)nullptr);
  case DType::I64:
    return rd((int64_t*)nullptr);
  default:
    return 0;
  }
}

void Tensor::store_int(int64_t k, int64_t v) const {
  if (is_floating(dtype())) return store(k, double(v));
  std::byte* p = raw_data() + k * int64_t(dtype_size(dtype()));
  auto wr = [p](auto x) { std::memcpy(p, &x, sizeof(x)); };
  switch (dtype()) {
  case DType::Bool:
    wr(uint8_t(v != 0));
    return;
  case DType::U8:
    wr(uint8_t(v));
    return;
  case DType::I8:
    wr(int8_t(v));
    return;
  case DType::I16:
    wr(int16_t(v));
    return;
  case DType::I32:
    wr(int32_t(v));
    return;
  case DType::I64:
    wr(v);
    return;
  default:
    return;
  }
}

int64_t Tensor::offset_of(int64_t linear) const {
  int64_t off = 0;
  for (int64_t d = dim() - 1; d >= 0; --d) {
    int64_t s = sizes()[d];
    if (s == 0) return 0;
    off += (linear % s) * strides()[d];
    linear /= s;
  }
  return off;
}

double Tensor::at(const std::vector<int64_t>& index) const {
  assert(int64_t(index.size()) == dim() && "index rank differs from the tensor's");
  int64_t off = 0;
  for (int64_t d = 0; d < dim(); ++d) {
    assert(index[d] >= 0 && index[d] < sizes()[d] && "index out of range");
    off += index[d] * strides()[d];
  }
  return load(off);
}

} // namespace fxc
