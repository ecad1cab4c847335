// Test helpers for the AOT passes: small graphs built in code, random tensors, gradient checks.
#pragma once

#include "frontend/builder.h"
#include "frontend/graph.h"
#include "frontend/verify.h"
#include "passes/decompose.h"
#include "passes/partition.h"
#include "runtime/interpreter.h"
#include "runtime/tensor.h"

#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace fxc::testing {

/// A graph under construction plus the user-input tensors to run it on.
struct TestGraph {
  Graph g;
  std::vector<Tensor> inputs;
  std::mt19937_64 rng{1234};

  TestGraph() { g.source = "test.fxg"; }

  std::vector<double> random_values(int64_t n, double lo, double hi) {
    std::uniform_real_distribution<double> dist(lo, hi);
    std::vector<double> v(static_cast<size_t>(n));
    for (double& x : v) x = dist(rng);
    return v;
  }

  static TensorMeta meta(DType t, std::vector<int64_t> sizes) {
    TensorMeta m;
    m.dtype = t;
    m.strides = contiguous_strides(sizes);
    m.sizes = std::move(sizes);
    return m;
  }

  /// A user input holding `values` (row-major).
  ValueId input_values(const std::string& name, DType t, std::vector<int64_t> sizes,
                       const std::vector<double>& values) {
    ValueId v = g.add_value(name, meta(t, sizes));
    g.inputs.push_back({v, InputKind::UserInput, name, true});
    inputs.push_back(Tensor::from_values(t, sizes, values));
    return v;
  }

  /// A user input of dtype `t` with uniform random values in [lo, hi).
  ValueId random_input(const std::string& name, DType t, std::vector<int64_t> sizes,
                       double lo = -1.0, double hi = 1.0) {
    return input_values(name, t, sizes, random_values(meta(t, sizes).numel(), lo, hi));
  }

  /// A float64 user input with uniform random values in [lo, hi).
  ValueId input(const std::string& name, std::vector<int64_t> sizes, double lo = -1.0,
                double hi = 1.0) {
    return random_input(name, DType::F64, std::move(sizes), lo, hi);
  }

  /// A parameter (or buffer) with random float64 values, stored in g.weights under `fqn`.
  ValueId weight(const std::string& fqn, std::vector<int64_t> sizes, double lo = -1.0,
                 double hi = 1.0, InputKind kind = InputKind::Parameter) {
    TensorMeta m = meta(DType::F64, sizes);
    std::string name = (kind == InputKind::Parameter ? "p_" : "b_") + fqn;
    for (char& c : name)
      if (c == '.') c = '_';
    ValueId v = g.add_value(name, m);
    g.inputs.push_back({v, kind, fqn, true});
    Tensor t = Tensor::from_values(DType::F64, sizes, random_values(m.numel(), lo, hi));
    g.weights[fqn] = WeightData{t.storage(), m, {}};
    return v;
  }

  ValueId op(std::string_view target, std::vector<CallArg> call) {
    return add_node1(g, target, std::move(call));
  }
  std::vector<ValueId> ops(std::string_view target, std::vector<CallArg> call) {
    return add_node(g, target, std::move(call));
  }
  void output(ValueId v) { g.outputs.push_back(v); }
};

inline CallArg T(ValueId v) {
  return {"", Arg::of_tensor(v)};
}
inline CallArg I(int64_t v) {
  return {"", Arg::of_int(v)};
}
inline CallArg F(double v) {
  return {"", Arg::of_float(v)};
}
inline CallArg B(bool v) {
  return {"", Arg::of_bool(v)};
}
inline CallArg Is(std::vector<int64_t> v) {
  return {"", Arg::of_ints(std::move(v))};
}
inline CallArg KW(std::string name, Arg a) {
  return {std::move(name), std::move(a)};
}

/// Whether decompose() would leave `g` as it is: every op is core or a kept composite
/// (an addmm Inductor keeps, an adaptive pool with an uneven split).
inline bool fully_decomposed(const Graph& g) {
  Graph again = decompose(g);
  if (again.nodes.size() != g.nodes.size()) return false;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (again.nodes[i].target != g.nodes[i].target) return false;
  return true;
}

/// sum_k <tangent_k, output_k> of the original graph (the scalar whose gradient is checked).
inline double weighted_output(const Graph& g, const std::vector<Tensor>& inputs,
                              const std::vector<Tensor>& tangents,
                              const std::vector<size_t>& tangent_output) {
  std::vector<Tensor> outs = interpret(g, inputs);
  double s = 0;
  for (size_t k = 0; k < tangents.size(); ++k) {
    std::vector<double> o = outs[tangent_output[k]].to_vector(), t = tangents[k].to_vector();
    for (size_t i = 0; i < o.size(); ++i) s += o[i] * t[i];
  }
  return s;
}

/// Runs the partitioned forward and backward graphs on random tangents and compares every
/// gradient with central finite differences of the original graph (float64 throughout).
/// Returns the AOT graphs for further checks.
inline AotGraphs check_gradients(TestGraph& tg,
                                 PartitionStrategy strategy = PartitionStrategy::MinCut,
                                 double eps = 1e-6, double tol = 1e-6) {
  AotGraphs aot = aot_autograd(tg.g, strategy);
  verify_graph(aot.forward);
  verify_graph(aot.backward);
  std::vector<Tensor> fw_out = interpret(aot.forward, tg.inputs);
  REQUIRE(fw_out.size() == aot.num_user_outputs + aot.saved.size());
  std::vector<Tensor> tangents, bw_in(fw_out.begin() + long(aot.num_user_outputs), fw_out.end());
  for (size_t k : aot.tangent_output_index) {
    const Tensor& o = fw_out[k];
    tangents.push_back(
        Tensor::from_values(o.dtype(), o.sizes(), tg.random_values(o.numel(), -1, 1)));
    bw_in.push_back(tangents.back());
  }
  std::vector<Tensor> grads = interpret(aot.backward, bw_in);
  REQUIRE(grads.size() == aot.grad_names.size());
  for (size_t k = 0; k < grads.size(); ++k) {
    const GraphInput& in = tg.g.inputs[aot.grad_input_index[k]];
    // The tensor to perturb: a user input, or the storage behind a weight.
    Tensor target;
    if (in.kind == InputKind::UserInput) {
      size_t u = 0;
      for (size_t j = 0; j < aot.grad_input_index[k]; ++j)
        u += tg.g.inputs[j].kind == InputKind::UserInput;
      target = tg.inputs[u];
    } else {
      target = Tensor::from_weight(tg.g.weights.at(in.fqn));
    }
    std::vector<double> analytic = grads[k].to_vector();
    REQUIRE(int64_t(analytic.size()) == target.numel());
    for (int64_t i = 0; i < target.numel(); ++i) {
      int64_t off = target.offset_of(i);
      double x0 = target.load(off);
      target.store(off, x0 + eps);
      double fp = weighted_output(tg.g, tg.inputs, tangents, aot.tangent_output_index);
      target.store(off, x0 - eps);
      double fm = weighted_output(tg.g, tg.inputs, tangents, aot.tangent_output_index);
      target.store(off, x0);
      double numeric = (fp - fm) / (2 * eps);
      INFO(aot.grad_names[k] << " element " << i << ": analytic " << analytic[size_t(i)]
                             << " numeric " << numeric);
      CHECK(std::abs(analytic[size_t(i)] - numeric) <= tol + 1e-5 * std::abs(numeric));
    }
  }
  return aot;
}

/// Causal attention's softmax: x [heads, n, n] with positions j > i set to -inf; `plus_x` adds
/// x itself after the softmax (then x's loads are used outside the mask too).
inline TestGraph causal_softmax_graph(DType t, int64_t heads, int64_t n, bool plus_x) {
  TestGraph tg;
  ValueId x = tg.input_values("x", t, {heads, n, n}, tg.random_values(heads * n * n, -4, 4));
  ValueId ar = tg.op("aten.arange.default", {I(n), KW("dtype", Arg::of_dtype(DType::I64))});
  ValueId mask = tg.op("aten.gt.Tensor", {T(tg.op("aten.unsqueeze.default", {T(ar), I(0)})),
                                          T(tg.op("aten.unsqueeze.default", {T(ar), I(1)}))});
  ValueId masked =
      tg.op("aten.masked_fill.Scalar", {T(x), T(mask), KW("value", Arg::of_float(-INFINITY))});
  ValueId y = tg.op("aten._softmax.default", {T(masked), I(-1), B(false)});
  if (plus_x) y = tg.op("aten.add.Tensor", {T(y), T(x)});
  tg.output(y);
  return tg;
}

} // namespace fxc::testing
