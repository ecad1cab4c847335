// Reference kernels: plain, obviously-correct host implementations of every op in the schema
// table, one row per op keyed by normalised target ("aten.addmm.default").
//
// Kernels compute in double (f16/bf16 results round through f32 on store, as PyTorch's opmath
// does), accumulate reductions and dot products in double, follow PyTorch's type promotion,
// and return views that share storage for view ops and new contiguous tensors otherwise.
// In-place ops write into their `self` operand and return it. Failures throw TensorError.
#pragma once

#include "frontend/graph.h"
#include "frontend/ops.h"
#include "runtime/tensor.h"

#include <string_view>
#include <vector>

namespace fxc {

/// The operands of one call: the node (its normalised args) and the tensors its tensor
/// arguments refer to.
struct KernelCall {
  const Node& node;
  /// One entry per schema argument: the tensor of a Tensor argument (undefined otherwise,
  /// and for a None optional tensor).
  std::vector<Tensor> tensors;
  /// One entry per schema argument: the tensors of a Tensor[] / Tensor?[] argument (an
  /// undefined Tensor for each None entry); empty otherwise.
  std::vector<std::vector<Tensor>> lists;
  /// float64 reference mode: every floating dtype the op would produce is float64 instead.
  bool float64 = false;

  const Arg& arg(std::string_view name) const { return node.arg(name); }
  /// The tensor bound to the named argument (undefined for None).
  const Tensor& tensor(std::string_view name) const;
  const std::vector<Tensor>& list(std::string_view name) const;
  /// The dtype the op produces when PyTorch would produce `t`: F64 for floating dtypes in
  /// float64 mode, `t` otherwise.
  DType result_dtype(DType t) const { return float64 && is_floating(t) ? DType::F64 : t; }
  /// PyTorch's default floating dtype (f32), or f64 in float64 mode.
  DType default_float() const { return float64 ? DType::F64 : DType::F32; }
};

/// A kernel returns one tensor per schema return (a Tensor[] return expands to its
/// elements; ops returning nothing return an empty vector).
using KernelFn = std::vector<Tensor> (*)(const KernelCall&);

/// The kernel for a normalised target, or nullptr when there is none.
KernelFn find_kernel(std::string_view target);

/// The declared ops that have a reference kernel.
const OpLayer& kernel_layer();

/// Runs the kernel of `node` (whose schema must be set) on already-bound operands.
/// Throws TensorError when the op has no kernel or the kernel fails.
std::vector<Tensor> run_kernel(const KernelCall& call);

/// PyTorch's computeStride: strides for viewing (sizes, strides) as `new_sizes` without a
/// copy, or an empty optional-like result (returns false) when no such strides exist.
bool compute_view_strides(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                          const std::vector<int64_t>& new_sizes, std::vector<int64_t>* out);

} // namespace fxc
