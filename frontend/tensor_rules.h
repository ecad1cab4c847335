// PyTorch's tensor rules, written once and used by meta functions, reference kernels,
// lowering, autograd and decompositions: type promotion (with wrapped numbers), broadcasting,
// dimension wrapping, contiguous strides and casting.
#pragma once

#include "frontend/dtype.h"
#include "frontend/graph.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fxc {

/// PyTorch's result_type (ATen/native/TypeProperties.cpp): operands fall into three priority
/// classes, tensors with dimensions, 0-dim tensors and wrapped numbers (Python scalars); each
/// class promotes within itself, and a lower class only matters when its category (bool <
/// integral < floating) is higher. A wrapped float takes the default dtype.
class ResultType {
public:
  explicit ResultType(DType default_float = DType::F32) : default_float_(default_float) {}
  void add_tensor(DType t, int64_t rank);
  void add_tensor(const TensorMeta& m) { add_tensor(m.dtype, int64_t(m.sizes.size())); }
  /// A Python number (Int, Float or Bool arg); None is ignored.
  void add_number(const Arg& a);
  /// Whether any operand was added.
  bool empty() const { return !dim_ && !zero_ && !wrapped_; }
  /// The promoted dtype; needs at least one operand.
  DType result() const;

private:
  DType default_float_;
  std::optional<DType> dim_, zero_, wrapped_;
};

/// The dtype a wrapped number has on its own: int64, bool, or `default_float` for a float.
DType wrapped_number_dtype(const Arg& a, DType default_float = DType::F32);

/// c10's ScalarType name of `t` ("Float", "Long"), as PyTorch's messages print a dtype.
std::string_view scalar_type_name(DType t);

/// PyTorch's AT_DISPATCH error for a kernel with no loop for `t`, with c10's ScalarType name:
/// "\"bitwise_and_cpu\" not implemented for 'Float'".
std::string not_implemented_message(std::string_view kernel, DType t);

/// c10::canCast: no floating -> integral or bool, no non-bool -> bool.
bool can_cast(DType from, DType to);

/// Broadcast shape of two shapes; throws std::invalid_argument naming both when they don't.
std::vector<int64_t> broadcast_shapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b);

/// Wraps a possibly negative dim into [0, rank) (a 0-dim tensor accepts 0 and -1); throws
/// std::out_of_range with PyTorch's message when out of range.
int64_t wrap_dim(int64_t dim, int64_t rank);

/// Row-major strides (sizes below 1 count as 1, as in PyTorch), or nullopt when a stride does
/// not fit in int64. contiguous_strides (frontend/graph.h) is this for sizes already checked.
std::optional<std::vector<int64_t>> checked_contiguous_strides(const std::vector<int64_t>& sizes);

} // namespace fxc
