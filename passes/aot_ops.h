// Shared plumbing of the AOT passes: typed wrappers over add_node and node-by-node graph copies.
//
// Autograd rules and decompositions both build graphs out of ATen ops; Emit gives them one-line
// spellings (e.mul(a, b), e.sum(x, {0}, true)) that all go through the graph builder, so every
// node they create is schema-bound and has its metadata inferred by the op's meta function.
#pragma once

#include "frontend/builder.h"
#include "frontend/graph.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fxc {

/// Appends ops to a graph. Nodes are named after `prefix` + "_" + the op's base name when a
/// prefix is given (decompositions: "gelu_mul"), else after the op ("mul_3"). `names`, when
/// given, is a NameCache of g that every name added to g goes through.
class Emit {
public:
  Emit(Graph& g, std::string prefix = {}, NameCache* names = nullptr)
      : g_(g), prefix_(std::move(prefix)), names_(names) {}

  Graph& graph() { return g_; }
  TensorMeta meta(ValueId v) const { return g_.values[v].meta; }
  std::vector<int64_t> sizes(ValueId v) const { return g_.values[v].meta.sizes; }
  DType dtype(ValueId v) const { return g_.values[v].meta.dtype; }
  int64_t dim(ValueId v) const { return g_.values[v].meta.dim(); }

  /// Any op by target; returns every output.
  std::vector<ValueId> call(std::string_view target, std::vector<CallArg> args);
  /// Any single-output op by target.
  ValueId op(std::string_view target, std::vector<CallArg> args);

  static CallArg t(ValueId v) { return {"", Arg::of_tensor(v)}; }
  static CallArg i(int64_t v) { return {"", Arg::of_int(v)}; }
  static CallArg f(double v) { return {"", Arg::of_float(v)}; }
  static CallArg b(bool v) { return {"", Arg::of_bool(v)}; }
  static CallArg ints(std::vector<int64_t> v) { return {"", Arg::of_ints(std::move(v))}; }
  static CallArg kw(std::string name, Arg a) { return {std::move(name), std::move(a)}; }

  // Pointwise.
  ValueId add(ValueId a, ValueId b);
  ValueId sub(ValueId a, ValueId b);
  ValueId mul(ValueId a, ValueId b);
  ValueId div(ValueId a, ValueId b);
  ValueId add_s(ValueId a, double s);
  ValueId mul_s(ValueId a, double s);
  ValueId div_s(ValueId a, double s);
  ValueId rsub_s(double s, ValueId a); ///< s - a
  ValueId pow_s(ValueId a, double e);
  ValueId unary(std::string_view name, ValueId a);           ///< "exp" -> aten.exp.default
  ValueId cmp_s(std::string_view name, ValueId a, double s); ///< "gt" -> aten.gt.Scalar
  ValueId cmp(std::string_view name, ValueId a, ValueId b);  ///< "eq" -> aten.eq.Tensor
  ValueId where(ValueId cond, ValueId a, ValueId b);
  ValueId where_s(ValueId cond, ValueId a, double other); ///< where(cond, a, other)
  ValueId cast(ValueId a, DType t); ///< _to_copy(a, dtype=t), or a when it already has t

  // Reductions.
  ValueId sum(ValueId a, std::vector<int64_t> dims, bool keepdim);
  ValueId mean(ValueId a, std::vector<int64_t> dims, bool keepdim);
  ValueId amax(ValueId a, std::vector<int64_t> dims, bool keepdim);
  /// Sums a broadcast gradient back to `sizes` (leading dims and dims that were 1).
  ValueId sum_to(ValueId a, const std::vector<int64_t>& sizes);

  // Views and data movement.
  ValueId view(ValueId a, std::vector<int64_t> sizes);
  ValueId reshape(ValueId a, std::vector<int64_t> sizes);
  ValueId permute(ValueId a, std::vector<int64_t> dims); ///< folds permutes of permutes
  ValueId transpose(ValueId a, int64_t d0, int64_t d1);  ///< as a permute
  ValueId expand(ValueId a, std::vector<int64_t> sizes);
  ValueId unsqueeze(ValueId a, int64_t d);
  ValueId slice(ValueId a, int64_t dim, int64_t start, int64_t end, int64_t step = 1);
  ValueId slice_scatter(ValueId base, ValueId src, int64_t dim, int64_t start, int64_t end,
                        int64_t step = 1);
  ValueId cat(std::vector<ValueId> xs, int64_t dim);
  /// int64 [start, end) by step on `device`.
  ValueId arange(int64_t start, int64_t end, int64_t step, const Device& device);
  /// Zeros of `sizes` with `like`'s dtype and device.
  ValueId zeros(std::vector<int64_t> sizes, const TensorMeta& like);
  /// `a` with `want`'s strides when `want` is a dense permuted layout (a copy in that order,
  /// viewed back); `a` itself when the strides already match or `want` is not dense.
  ValueId restride(ValueId a, const TensorMeta& want);
  /// Pads (positive) or crops (negative) `a` along `dim` by lo/hi elements.
  ValueId pad_dim(ValueId a, int64_t dim, int64_t lo, int64_t hi);

  // Matrix products.
  ValueId mm(ValueId a, ValueId b);
  ValueId bmm(ValueId a, ValueId b);

private:
  std::string hint(std::string_view target) const;
  Graph& g_;
  std::string prefix_;
  NameCache* names_;
};

/// Maps every value of a source graph to a value of a destination graph (kNoValue: unmapped).
using ValueMap = std::vector<ValueId>;

/// Starts `dst` with src's source, name and weights and a copy of each input (same names and
/// metadata) unless `keep_input` says otherwise; returns the map with those inputs filled in.
/// `names`, when given, is a NameCache of dst (here and in copy_node).
ValueMap copy_inputs(const Graph& src, Graph& dst, const std::vector<bool>& keep_input = {},
                     NameCache* names = nullptr);

/// Appends a copy of `n` (a node of src) to dst with its tensor arguments remapped through
/// `map` (all of which must be mapped); the outputs keep their names (made unique in dst) and
/// metadata, and are recorded in `map`.
void copy_node(const Graph& src, const Node& n, Graph& dst, ValueMap& map,
               NameCache* names = nullptr);

/// A fresh name in g: through `names` when given, else unique_name().
std::string fresh_value_name(const Graph& g, std::string_view hint, NameCache* names);

/// The node's arguments with every tensor reference rewritten through `map`.
std::vector<Arg> remap_args(const Node& n, const ValueMap& map);

/// Base name of a target: "aten.addmm.default" -> "addmm".
std::string op_base_name(std::string_view target);

/// Bytes a value occupies when materialised contiguously.
int64_t value_bytes(const TensorMeta& m);

} // namespace fxc
