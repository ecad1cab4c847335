// Internal to the reference kernels (runtime/kernels.cpp and runtime/kernels/*.cpp): value
// access and result building, type promotion, the elementwise engine and the helpers several op
// families share. Each family file (pointwise, reduction, norm, linalg, pool, indexing, view,
// factory) holds its ops' kernels and their rows; kernels.cpp concatenates the rows into one
// table.
#pragma once

#include "runtime/kernels.h"

#include "frontend/schema.h"
#include "frontend/tensor_rules.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <span>
#include <sstream>

// Hot loops are optimised even in debug builds (GCC only; other compilers use the build's level).
#if defined(__GNUC__) && !defined(__clang__)
#define FXC_OPTIMIZED [[gnu::optimize("O3")]]
#else
#define FXC_OPTIMIZED
#endif

namespace fxc::kernel_detail {

using Shape = std::vector<int64_t>;
using Tensors = std::vector<Tensor>;

[[noreturn]] inline void fail(const std::string& msg) {
  throw TensorError(msg);
}

inline std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

inline std::string dname(DType t) {
  return std::string(dtype_name(t));
}

// PyTorch's dimension wrapping and broadcasting (frontend/tensor_rules.h), failing as a kernel.
inline int64_t wrap(int64_t d, int64_t rank) {
  try {
    return wrap_dim(d, rank);
  } catch (const std::out_of_range& e) {
    fail(e.what());
  }
}

inline Shape broadcast(const Shape& a, const Shape& b) {
  try {
    return broadcast_shapes(a, b);
  } catch (const std::invalid_argument& e) {
    fail(e.what());
  }
}

// A stride-0 view of t with the broadcast shape `shape` (t's shape must broadcast to it).
inline Tensor expand_to(const Tensor& t, const Shape& shape) {
  if (t.sizes() == shape) return t;
  size_t n = shape.size(), k = size_t(t.dim());
  if (k > n) fail("cannot broadcast " + shape_str(t.sizes()) + " to " + shape_str(shape));
  Shape st(n, 0);
  for (size_t i = 0; i < k; ++i) {
    size_t o = n - k + i;
    if (t.size(int64_t(i)) == shape[o])
      st[o] = t.stride(int64_t(i));
    else if (t.size(int64_t(i)) != 1)
      fail("cannot broadcast " + shape_str(t.sizes()) + " to " + shape_str(shape));
  }
  TensorMeta m = t.meta();
  m.sizes = shape;
  m.strides = st;
  return Tensor(t.storage(), m);
}

inline Tensor view_of(const Tensor& t, Shape sizes, Shape strides, int64_t offset) {
  TensorMeta m = t.meta();
  m.sizes = std::move(sizes);
  m.strides = std::move(strides);
  m.storage_offset = offset;
  return Tensor(t.storage(), m);
}

// The hot loops below (offsets, gathering values, storing results) are compiled with
// optimisation even in debug builds: they dominate the interpreter's run time. They only move
// and convert values, so optimisation cannot change results.

// Element offsets (relative to raw_data) of every index over the given dims, row-major.
FXC_OPTIMIZED inline std::vector<int64_t> dim_offsets(const Shape& sizes, const Shape& strides) {
  int64_t n = checked_numel(sizes);
  std::vector<int64_t> out(size_t(n), 0);
  if (n == 0) return out;
  size_t nd = sizes.size();
  std::vector<int64_t> idx(nd, 0);
  int64_t off = 0;
  for (int64_t i = 0; i < n; ++i) {
    out[size_t(i)] = off;
    for (size_t d = nd; d-- > 0;) {
      off += strides[d];
      if (++idx[d] < sizes[d]) break;
      off -= strides[d] * sizes[d];
      idx[d] = 0;
    }
  }
  return out;
}

inline std::vector<int64_t> all_offsets(const Tensor& t) {
  return dim_offsets(t.sizes(), t.strides());
}

template <class T>
FXC_OPTIMIZED void gather_as(const std::byte* base, const std::vector<int64_t>& off, double* dst) {
  for (size_t i = 0; i < off.size(); ++i) {
    T v;
    std::memcpy(&v, base + off[i] * int64_t(sizeof(T)), sizeof(T));
    dst[i] = double(v);
  }
}

// Values of t in row-major order, as double.
inline std::vector<double> values(const Tensor& t) {
  std::vector<int64_t> off = all_offsets(t);
  std::vector<double> v(off.size());
  const std::byte* base = off.empty() ? nullptr : t.raw_data();
  switch (t.dtype()) {
  case DType::F32:
    gather_as<float>(base, off, v.data());
    break;
  case DType::F64:
    gather_as<double>(base, off, v.data());
    break;
  case DType::I64:
    gather_as<int64_t>(base, off, v.data());
    break;
  case DType::I32:
    gather_as<int32_t>(base, off, v.data());
    break;
  default:
    for (size_t i = 0; i < off.size(); ++i) v[i] = t.load(off[i]);
  }
  return v;
}

template <class T> FXC_OPTIMIZED void scatter_as(std::byte* base, const std::vector<double>& v) {
  for (size_t i = 0; i < v.size(); ++i) {
    T x = T(v[i]);
    std::memcpy(base + i * sizeof(T), &x, sizeof(T));
  }
}

// A contiguous tensor of `dtype` from row-major double values (rounded on store).
inline Tensor make(DType dtype, Shape sizes, const std::vector<double>& v) {
  Tensor t = Tensor::empty(dtype, std::move(sizes));
  assert(int64_t(v.size()) == t.numel() && "value count differs from the shape");
  if (v.empty()) return t;
  switch (dtype) {
  case DType::F32:
    scatter_as<float>(t.raw_data(), v);
    break;
  case DType::F64:
    scatter_as<double>(t.raw_data(), v);
    break;
  default:
    for (size_t i = 0; i < v.size(); ++i) t.store(int64_t(i), v[i]);
  }
  return t;
}

// ---- Type promotion (PyTorch's result_type: dim tensors > 0-dim tensors > Python scalars) ----

inline DType result_type(const Tensors& ts, const std::vector<Arg>& scalars, const KernelCall& c) {
  ResultType r(c.default_float());
  for (const Tensor& t : ts) r.add_tensor(t.dtype(), t.dim());
  for (const Arg& a : scalars) r.add_number(a);
  return c.result_dtype(r.result());
}

inline int64_t cast_int(int64_t v, DType t);

// ---- Elementwise engine ----

using FloatFn = double (*)(const double*, const double*);
using IntFn = int64_t (*)(const int64_t*, const double*);

// out[i] = f(ins[0][i], ins[1][i], ...) over the broadcast shape. Inputs are converted to
// `compute` (rounded as that dtype would hold them); floating compute runs `ff` in double,
// integral/bool compute runs `fi` in int64. `extra` passes op constants to the functions.
inline Tensor elementwise(const Tensors& ins, DType compute, DType out_dtype, FloatFn ff, IntFn fi,
                          const double* extra = nullptr) {
  assert(ins.size() <= 4 && "elementwise supports at most 4 inputs");
  Shape shape;
  for (const Tensor& t : ins) shape = broadcast(shape, t.sizes());
  size_t k = ins.size();
  Tensors ex(k);
  for (size_t j = 0; j < k; ++j) ex[j] = expand_to(ins[j], shape);
  int64_t n = checked_numel(shape);
  if (is_floating(compute) || !fi) {
    std::vector<std::vector<double>> in(k);
    for (size_t j = 0; j < k; ++j) {
      in[j] = values(ex[j]);
      if (ex[j].dtype() != compute)
        for (double& v : in[j]) v = round_to_dtype(v, compute);
    }
    std::vector<double> out(static_cast<size_t>(n));
    double dv[4];
    for (size_t i = 0; i < out.size(); ++i) {
      for (size_t j = 0; j < k; ++j) dv[j] = in[j][i];
      out[i] = ff(dv, extra);
    }
    return make(out_dtype, shape, out);
  }
  Tensor out = Tensor::empty(out_dtype, shape);
  std::vector<std::vector<int64_t>> off(k);
  for (size_t j = 0; j < k; ++j) off[j] = all_offsets(ex[j]);
  int64_t iv[4];
  for (int64_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < k; ++j) {
      int64_t v = ex[j].load_int(off[j][size_t(i)]);
      iv[j] = ex[j].dtype() == compute ? v : cast_int(v, compute);
    }
    out.store_int(i, fi(iv, extra));
  }
  return out;
}

// An int64 as an integral/bool dtype would hold it (C++ conversion: wraps).
inline int64_t cast_int(int64_t v, DType t) {
  switch (t) {
  case DType::Bool:
    return v != 0;
  case DType::U8:
    return uint8_t(v);
  case DType::I8:
    return int8_t(v);
  case DType::I16:
    return int16_t(v);
  case DType::I32:
    return int32_t(v);
  default:
    return v;
  }
}

// Wraparound integer arithmetic (PyTorch integer ops wrap on overflow).
inline int64_t wrap_add(int64_t a, int64_t b) {
  return int64_t(uint64_t(a) + uint64_t(b));
}
inline int64_t wrap_sub(int64_t a, int64_t b) {
  return int64_t(uint64_t(a) - uint64_t(b));
}
inline int64_t wrap_mul(int64_t a, int64_t b) {
  return int64_t(uint64_t(a) * uint64_t(b));
}

inline double nan_max(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
}
inline double nan_min(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
}

[[noreturn]] inline void not_implemented(const char* kernel, DType dt) {
  fail(not_implemented_message(kernel, dt));
}

// A reduction layout: for output element o and reduced element i, the input offset is
// outer[o] + inner[i].
struct ReduceLayout {
  std::vector<int64_t> outer, inner;
  Shape out_shape; // with or without kept dims
};

inline ReduceLayout reduce_layout(const Shape& sizes, const Shape& strides,
                                  const std::vector<bool>& red, bool keepdim) {
  Shape osz, ost, isz, ist, out_shape;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (red[d]) {
      isz.push_back(sizes[d]);
      ist.push_back(strides[d]);
      if (keepdim) out_shape.push_back(1);
    } else {
      osz.push_back(sizes[d]);
      ost.push_back(strides[d]);
      out_shape.push_back(sizes[d]);
    }
  }
  return {dim_offsets(osz, ost), dim_offsets(isz, ist), out_shape};
}

inline ReduceLayout reduce_layout(const Tensor& t, const std::vector<bool>& red, bool keepdim) {
  return reduce_layout(t.sizes(), t.strides(), red, keepdim);
}

// Checks that the optional affine tensor has `n` elements.
inline void check_affine(const Tensor& t, int64_t n, const char* what) {
  if (t.defined() && t.numel() != n)
    fail(std::string(what) + " has " + std::to_string(t.numel()) + " elements, expected " +
         std::to_string(n));
}

inline Tensor unsqueeze_view(const Tensor& t, int64_t d) {
  Shape s = t.sizes(), st = t.strides();
  int64_t stride = d >= t.dim() ? 1 : t.size(d) * t.stride(d);
  s.insert(s.begin() + d, 1);
  st.insert(st.begin() + d, stride);
  return view_of(t, s, st, t.storage_offset());
}

// A per-spatial-dim parameter (stride, padding, ...) with n entries; one entry applies to all.
// Values are bounded so that size arithmetic with them cannot overflow.
inline Shape expand_param(const Shape& p, size_t n, const char* what) {
  if (p.size() != n && p.size() != 1)
    fail(std::string(what) + " must have 1 or " + std::to_string(n) + " elements, got " +
         std::to_string(p.size()));
  for (int64_t v : p)
    if (v < -(int64_t(1) << 20) || v > (int64_t(1) << 20))
      fail(std::string(what) + " value " + std::to_string(v) + " is out of range");
  return p.size() == n ? p : Shape(n, p[0]);
}

inline Shape infer_size(Shape shape, int64_t numel) {
  int64_t infer = -1;
  Shape known_dims;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) fail("only one dimension can be inferred");
      infer = int64_t(i);
    } else if (shape[i] < 0) {
      fail("invalid shape dimension " + std::to_string(shape[i]));
    } else {
      known_dims.push_back(shape[i]);
    }
  }
  int64_t known = checked_numel(known_dims);
  bool ok = infer >= 0 ? known != 0 && numel % known == 0 : known == numel;
  if (!ok)
    fail("shape '" + shape_str(shape) + "' is invalid for input of size " + std::to_string(numel));
  if (infer >= 0) shape[size_t(infer)] = numel / known;
  return shape;
}

inline Tensor reshape_impl(const Tensor& x, const Shape& size) {
  Shape shape = infer_size(size, x.numel());
  Shape st;
  if (compute_view_strides(x.sizes(), x.strides(), shape, &st))
    return view_of(x, shape, st, x.storage_offset());
  Tensor y = x.clone();
  return view_of(y, shape, contiguous_strides(shape), 0);
}

/// An in-place op's result `r`, computed out of place, written into self (PyTorch's checks of an
/// in-place result: castable to self's dtype, self's sizes).
inline Tensors write_back(const Tensor& self, const Tensor& r) {
  if (!can_cast(r.dtype(), self.dtype()))
    fail("result type " + dname(r.dtype()) + " can't be cast to the desired output type " +
         dname(self.dtype()));
  if (r.sizes() != self.sizes())
    fail("output with shape " + shape_str(self.sizes()) + " doesn't match the broadcast shape " +
         shape_str(r.sizes()));
  self.copy_from(r);
  return {self};
}

// A tensor of `size` filled with a Scalar argument (integers exactly).
inline Tensor filled(DType dt, const Shape& size, const Arg& value) {
  Tensor t = Tensor::empty(dt, size);
  Tensor v = Tensor::empty(dt, {});
  if (value.kind == Arg::Kind::Int && !is_floating(dt))
    v.store_int(0, value.i);
  else
    v.store(0, value.scalar());
  t.copy_from(v);
  return t;
}

// Each op family's rows of the kernel table.
std::span<const OpTable<KernelFn>::Row> pointwise_kernels();
std::span<const OpTable<KernelFn>::Row> reduction_kernels();
std::span<const OpTable<KernelFn>::Row> norm_kernels();
std::span<const OpTable<KernelFn>::Row> linalg_kernels();
std::span<const OpTable<KernelFn>::Row> pool_kernels();
std::span<const OpTable<KernelFn>::Row> backward_kernels();
std::span<const OpTable<KernelFn>::Row> indexing_kernels();
std::span<const OpTable<KernelFn>::Row> view_kernels();
std::span<const OpTable<KernelFn>::Row> factory_kernels();
std::span<const OpTable<KernelFn>::Row> random_kernels();
std::span<const OpTable<KernelFn>::Row> selection_kernels();
std::span<const OpTable<KernelFn>::Row> special_kernels();

} // namespace fxc::kernel_detail
