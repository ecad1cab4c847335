// Meta functions: output dtype/shape/strides of every op, one row per op (PyTorch's broadcasting,
// type promotion and view stride rules).
#pragma once

#include "frontend/graph.h"
#include "frontend/ops.h"
#include "frontend/tensor_rules.h"

#include <string>
#include <vector>

namespace fxc {

/// Computes the output metadata of `n` from the metadata of its inputs in `g`. Throws
/// fxc::Error (naming g.source and the node) when the operands are inconsistent, e.g.
/// "mat1 is f32[8, 64] but mat2 is f32[32, 10]". Views get PyTorch's strides and
/// storage offset relative to their base.
///
/// The rules are PyTorch's: dtypes follow torch.result_type (Python numbers, also where a
/// Tensor argument holds a number, promote like wrapped numbers); pointwise outputs take
/// TensorIterator's layout; preserve_format copies follow empty_like; reductions, matrix
/// products and factories are contiguous; convolution and pooling keep channels_last inputs
/// channels_last; the fused CPU attention kernel returns empty_like(query). Sizes or strides
/// that overflow int64 are errors, never undefined behaviour.
using MetaFn = std::vector<TensorMeta> (*)(const Graph& g, const Node& n);

/// The meta function for a normalised target, or nullptr.
MetaFn find_meta(std::string_view target);
/// The declared ops that have a meta function.
const OpLayer& meta_layer();

} // namespace fxc
