// The gradients of a (non-transposed) convolution as graphs of convolutions: the derivative rule
// of convolution (passes/autograd.cpp) and the decomposition of convolution_backward
// (passes/decompose.cpp) share them.
#pragma once
#include "passes/aot_ops.h"

#include <cstdint>
#include <vector>

namespace fxc {

/// d(input) of a convolution of an input of `in_sizes` with weight `w` whose output gradient is
/// `g`: the stride-dilated, re-padded gradient convolved with the spatially flipped weight whose
/// in/out channels are swapped within each group.
ValueId conv_input_grad(Emit& e, ValueId g, ValueId w, const std::vector<int64_t>& in_sizes,
                        const std::vector<int64_t>& s, const std::vector<int64_t>& p,
                        const std::vector<int64_t>& d, int64_t groups);

/// d(weight) of a convolution of `x` with a weight of `w_sizes` whose output gradient is `g`:
/// per group, the input (batch as channels) convolved with the gradient as the weight.
ValueId conv_weight_grad(Emit& e, ValueId x, ValueId g, const std::vector<int64_t>& w_sizes,
                         const std::vector<int64_t>& s, const std::vector<int64_t>& p,
                         const std::vector<int64_t>& d, int64_t groups);

/// The input gradient of a max pooling (a kernel size per spatial dim; stride, padding and
/// dilation as the op's arguments: one value for every spatial dim or one each, an empty stride
/// the kernel, an empty padding 0, an empty dilation 1) of an input of `in_sizes` from its output
/// gradient `g` and `indices` (flat over the spatial dims), in gather form: each input element sums
/// the gradients of the output windows that can cover it (ceil(((k-1)d+1)/s) per dim) whose index
/// names it. Unlike scatter_add (which the lowering turns into a reduction over a whole output
/// plane for each input element) this is a pointwise kernel. kNoValue when the windows overlap too
/// much (more than 64 covering candidates): scatter_add then.
ValueId max_pool_input_grad(Emit& e, ValueId g, ValueId indices,
                            const std::vector<int64_t>& in_sizes,
                            const std::vector<int64_t>& kernel_size,
                            const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                            const std::vector<int64_t>& dilation);

/// [rows, dim]: each row r the sum of the rows of `src` ([k, dim]) whose index in `ids` ([k],
/// integer) is r (an embedding's weight gradient). For float32/16 and bfloat16 with rows * k up
/// to 2^26, a one-hot [rows, k] matrix times src (a GEMM: the lowering's scatter_add is a
/// reduction over all k positions for each of the rows * dim elements); else scatter_add.
ValueId index_add_rows(Emit& e, int64_t rows, ValueId ids, ValueId src);

} // namespace fxc
