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

} // namespace fxc
