// Autocast (--dtype=bf16|f16): a float32 graph rewritten as torch.autocast runs it.
//
// torch.autocast(device_type, dtype=torch.bfloat16) decides per op, from three lists in
// PyTorch's aten/src/ATen/autocast_mode.h (docs/autocast.md reproduces them):
// - lower precision (mm, bmm, addmm, baddbmm, linear, matmul, convolution in every form,
//   prelu, scaled_dot_product_attention, ...): every floating input (weights and biases too)
//   is cast to bf16 and the op runs, and returns, in bf16;
// - float32 (softmax, log_softmax, layer/group norm, pow, exp/log, sum/prod/cumsum, norms,
//   losses, upsampling, ...): bf16/f16 inputs are cast to f32, so the op accumulates in f32;
// - promote (addcmul, addcdiv, atan2, dot, index_put, scatter_add, ...): floating inputs are
//   cast to the widest of their dtypes.
// Every other op runs in the dtype its inputs give it under type promotion (bf16 + an f32
// parameter is f32, as in PyTorch). The lists are keyed by core ATen names as well
// (_softmax, native_layer_norm, native_group_norm, _native_batch_norm_legit_no_training,
// convolution, ...), so that both torch.export forms convert alike; fxc runs batch norm in f32
// too (PyTorch's kernels take bf16 input with f32 statistics; fxc's want one dtype).
//
// Casts are explicit aten._to_copy.default(x, dtype=...) nodes, inserted before their first
// consumer and shared by later ones (one cast of a weight serves every use); after them each
// node's output dtype is recomputed with its meta function. Shapes never change, and neither
// does the signature: user inputs and weights keep f32, outputs take the dtype autocast gives
// them (a bf16 matmul's output is bf16). Tested by test/unit/autocast_test.cpp,
// test/codegen/autocast-*.test and test/autocast.sh.
#pragma once

#include "frontend/dtype.h"
#include "frontend/graph.h"

#include <string>
#include <string_view>

namespace fxc {

/// How autocast treats one op (PyTorch's CastPolicy, less the policies it has no op for).
enum class CastPolicy {
  None,           ///< runs in the dtype its inputs have
  LowerPrecision, ///< floating inputs cast to the autocast dtype
  Fp32,           ///< bf16/f16 inputs cast to f32
  Promote,        ///< floating inputs cast to the widest of them
};

/// The policy of a normalised target ("aten.mm.default" -> LowerPrecision).
CastPolicy autocast_policy(std::string_view target);

/// What autocast() did, for the logs and the debug trace.
struct AutocastStats {
  bool converted = false; ///< false: the graph is not a float32 graph and came back unchanged
  int casts_to_lower = 0; ///< _to_copy nodes to the autocast dtype
  int casts_to_f32 = 0;   ///< _to_copy nodes to f32 (float32 and promote ops)
  int lower_ops = 0;      ///< nodes that now run in the autocast dtype
  int fp32_ops = 0;       ///< nodes of the float32 list, which now run in f32
  int casts() const { return casts_to_lower + casts_to_f32; }
  /// "autocast to bf16: 12 casts inserted (8 to bf16, 4 to f32); 6 ops run in bf16, 3 in f32"
  std::string summary(DType dtype) const;
};

/// `g` with torch.autocast's casts to `dtype` (bf16 or f16, asserted). Only a float32 graph is
/// converted: one with an f32 input or weight, or, without any floating input, an f32
/// intermediate; any other graph (already bf16, integers only) is returned unchanged. The
/// result is a valid graph (verify_graph) with the same inputs, outputs and value ids for every
/// value of `g`; converting it again changes nothing. Throws fxc::Error naming the node when an
/// op refuses the dtypes autocast gives it (as PyTorch would: scatter of f32 into bf16).
Graph autocast(const Graph& g, DType dtype, AutocastStats* stats = nullptr);

} // namespace fxc
