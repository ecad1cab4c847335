// Test helpers for the runtime tests: tensors from literals, single-op kernel calls, closeness.
#pragma once

#include "frontend/meta.h"
#include "frontend/schema.h"
#include "runtime/kernels.h"
#include "runtime/tensor.h"

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <variant>
#include <vector>

namespace fxc::test {

using Shape = std::vector<int64_t>;
using Vals = std::vector<double>;

inline Tensor T(DType dt, Shape sizes, const Vals& v) {
  return Tensor::from_values(dt, std::move(sizes), v);
}
inline Tensor F(Shape sizes, const Vals& v) {
  return T(DType::F32, std::move(sizes), v);
}
inline Tensor D(Shape sizes, const Vals& v) {
  return T(DType::F64, std::move(sizes), v);
}
inline Tensor L(Shape sizes, const Vals& v) {
  return T(DType::I64, std::move(sizes), v);
}
inline Tensor B(Shape sizes, const Vals& v) {
  return T(DType::Bool, std::move(sizes), v);
}

/// Deterministic pseudo-random values in [lo, hi).
inline Vals rand_vals(size_t n, uint64_t seed, double lo = -2, double hi = 2) {
  Vals v(n);
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (auto& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = lo + (hi - lo) * double(s >> 11) / double(1ull << 53);
  }
  return v;
}
inline Tensor R(DType dt, Shape sizes, uint64_t seed, double lo = -2, double hi = 2) {
  int64_t n = checked_numel(sizes);
  return T(dt, std::move(sizes), rand_vals(size_t(n), seed, lo, hi));
}

/// A transposed (non-contiguous) tensor with the given shape [a, b] and row-major values.
inline Tensor transposed(DType dt, int64_t a, int64_t b, const Vals& v) {
  Vals t(v.size());
  for (int64_t i = 0; i < a; ++i)
    for (int64_t j = 0; j < b; ++j) t[size_t(j * a + i)] = v[size_t(i * b + j)];
  Tensor base = T(dt, {b, a}, t);
  return base.as_strided({a, b}, {1, a}, 0);
}

/// One argument of an op call: a tensor, a tensor list, or a literal; `name` empty = positional.
struct In {
  std::string name;
  std::variant<Tensor, std::vector<Tensor>, Arg> v;
  In(Tensor t) : v(std::move(t)) {}
  In(std::vector<Tensor> t) : v(std::move(t)) {}
  In(Arg a) : v(std::move(a)) {}
  In(std::string n, Tensor t) : name(std::move(n)), v(std::move(t)) {}
  In(std::string n, std::vector<Tensor> t) : name(std::move(n)), v(std::move(t)) {}
  In(std::string n, Arg a) : name(std::move(n)), v(std::move(a)) {}
};
inline Arg I(int64_t v) {
  return Arg::of_int(v);
}
inline Arg Fl(double v) {
  return Arg::of_float(v);
}
inline Arg Bo(bool v) {
  return Arg::of_bool(v);
}
inline Arg Is(std::vector<int64_t> v) {
  return Arg::of_ints(std::move(v));
}
inline Arg Dt(DType t) {
  return Arg::of_dtype(t);
}
inline Arg S(std::string s) {
  return Arg::of_string(std::move(s));
}
inline Arg None() {
  return Arg::none();
}

/// Binds `args` to the schema of `target` and runs its reference kernel.
inline std::vector<Tensor> op(const std::string& target, std::vector<In> args,
                              bool float64 = false) {
  const OpSchema* schema = find_schema(target);
  REQUIRE_MESSAGE(schema, "no schema for " << target);
  std::vector<Tensor> values;
  std::vector<CallArg> call;
  for (In& a : args) {
    if (auto* t = std::get_if<Tensor>(&a.v)) {
      values.push_back(*t);
      call.push_back({a.name, Arg::of_tensor(ValueId(values.size() - 1))});
    } else if (auto* ts = std::get_if<std::vector<Tensor>>(&a.v)) {
      std::vector<ValueId> ids;
      for (const Tensor& t : *ts) {
        if (!t.defined()) {
          ids.push_back(kNoValue);
          continue;
        }
        values.push_back(t);
        ids.push_back(ValueId(values.size() - 1));
      }
      call.push_back({a.name, Arg::of_tensors(ids)});
    } else {
      call.push_back({a.name, std::get<Arg>(a.v)});
    }
  }
  Node node;
  node.name = "n";
  node.target = target;
  node.schema = schema;
  std::string err;
  REQUIRE_MESSAGE(bind_args(*schema, call, &node.args, &node.given, &err), err);
  KernelCall kc{node, {}, {}, float64};
  kc.tensors.resize(node.args.size());
  kc.lists.resize(node.args.size());
  for (size_t i = 0; i < node.args.size(); ++i) {
    const Arg& a = node.args[i];
    if (a.kind == Arg::Kind::Tensor) kc.tensors[i] = values[size_t(a.tensor)];
    if (a.kind == Arg::Kind::Tensors)
      for (ValueId v : a.tensors)
        kc.lists[i].push_back(v == kNoValue ? Tensor() : values[size_t(v)]);
  }
  std::vector<Tensor> out = run_kernel(kc);
  // The meta function of the op must predict the kernel's dtypes and shapes (not in float64
  // mode, which the metas do not model).
  MetaFn meta = find_meta(target);
  if (!float64 && meta) {
    Graph g;
    for (size_t i = 0; i < values.size(); ++i)
      g.add_value("v" + std::to_string(i), values[i].meta());
    std::vector<TensorMeta> metas;
    std::string meta_error;
    try {
      metas = meta(g, node);
    } catch (const std::exception& e) {
      meta_error = e.what();
    }
    // Metas may refuse what needs the data (boolean masks) or a CUDA device; kernels run anyway.
    if (meta_error.find("data-dependent") != std::string::npos ||
        meta_error.find("on CUDA") != std::string::npos)
      return out;
    CHECK_MESSAGE(meta_error.empty(),
                  target << ": the meta function fails where the kernel succeeds: " << meta_error);
    if (meta_error.empty()) {
      CHECK_MESSAGE(metas.size() == out.size(), target << ": meta returns " << metas.size()
                                                       << " results, the kernel " << out.size());
      for (size_t i = 0; i < std::min(metas.size(), out.size()); ++i)
        CHECK_MESSAGE((metas[i].dtype == out[i].dtype() && metas[i].sizes == out[i].sizes()),
                      target << " result " << i << ": meta says " << format_meta(metas[i])
                             << ", the kernel produced " << format_meta(out[i].meta()));
    }
  }
  return out;
}

/// The single result of a one-output op.
inline Tensor op1(const std::string& target, std::vector<In> args, bool float64 = false) {
  auto r = op(target, std::move(args), float64);
  REQUIRE(r.size() == 1);
  return r[0];
}

/// Message of the TensorError the op throws ("" when it does not throw).
inline std::string op_error(const std::string& target, std::vector<In> args) {
  try {
    op(target, std::move(args));
  } catch (const TensorError& e) {
    return e.what();
  }
  return "";
}

inline bool close(double a, double b, double rtol, double atol) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return std::fabs(a - b) <= atol + rtol * std::fabs(b);
}

/// Checks dtype, shape and every value of `t` against `expect`.
inline void check(const Tensor& t, DType dt, const Shape& sizes, const Vals& expect,
                  double rtol = 1e-6, double atol = 1e-6) {
  REQUIRE(t.defined());
  CHECK(dtype_name(t.dtype()) == dtype_name(dt));
  REQUIRE(t.sizes() == sizes);
  Vals got = t.to_vector();
  REQUIRE(got.size() == expect.size());
  for (size_t i = 0; i < got.size(); ++i)
    CHECK_MESSAGE(close(got[i], expect[i], rtol, atol),
                  "element " << i << ": got " << got[i] << ", expected " << expect[i]);
}

} // namespace fxc::test
