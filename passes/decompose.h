// Decompositions: composite ATen ops rewritten into core pointwise, reduction and view ops.
//
// The table in decompose.cpp has one row per op (gelu, silu, softmax, layer_norm, batch_norm,
// scaled_dot_product_attention, linear, matmul, conv2d, dropout, ...). A row builds the op's
// value out of simpler ops with the graph builder, so every new node is schema-bound and has
// inferred metadata. Rows may emit ops that have rows themselves; decompose() repeats until no
// decomposable op is left. The aot_eager_decomp_partition backend applies it before building
// the joint graph; autograd uses decompose_if() to differentiate ops that have no derivative
// rule of their own (scaled_dot_product_attention, matmul) through their decomposition.
// In-place ops (relu_, add_, hardtanh_, ...) become their functional ops (functional_target).
// Tested by test/unit/decompose_test.cpp.
#pragma once

#include "frontend/graph.h"
#include "frontend/ops.h"

#include <functional>
#include <string_view>

namespace fxc {

/// A new graph computing the same outputs as `g`, with every op that has a decomposition
/// replaced by its decomposition (to a fixpoint). Inputs and weights keep their names; new
/// nodes are named after the node they replace ("gelu" -> "gelu_mul", ...), and the node
/// producing a replaced value takes that value's name when it is free.
/// Throws fxc::Error for ops whose decomposition cannot handle the node's arguments in a way
/// that changes meaning (dropout or batch_norm in training mode, dropout in attention).
Graph decompose(const Graph& g);

/// What decompose() keeps for a target library instead of decomposing it.
struct DecomposeOptions {
  /// Keep convolution_backward nodes that cuDNN computes (cudnn_conv_backward): inductor for
  /// CUDA with cuDNN lowers them to cudnnConvolutionBackwardData/Filter calls.
  bool keep_cudnn_conv_backward = false;
  /// Keep convolution_backward nodes that oneDNN computes (onednn_conv_backward): inductor for
  /// the CPU with oneDNN lowers them to its backward-data and backward-weights primitives.
  bool keep_onednn_conv_backward = false;
  /// Keep 3-D convolutions (not transposed) whole instead of rewriting them as 2-D ones over the
  /// frames: inductor for the CPU with oneDNN runs them natively (inference).
  bool keep_conv3d = false;
  /// Keep scaled_dot_product_attention nodes that cuDNN's fused attention computes
  /// (cudnn_attention): inductor for CUDA with cuDNN lowers them to one fused call (inference).
  bool keep_cudnn_attention = false;
};
Graph decompose(const Graph& g, const DecomposeOptions& opts);

/// Whether `n` is a convolution_backward that cuDNN computes: not transposed, 2-D (input, weight
/// and grad_output of rank 4 with one or two values per window argument), one dtype among f32,
/// f16 and bf16, groups dividing the channels.
bool cudnn_conv_backward(const Graph& g, const Node& n);
/// Whether `n` is a convolution_backward that oneDNN computes: not transposed, 1-D to 3-D
/// (input, weight and grad_output of one rank among 3, 4 and 5, one value or one per spatial dim
/// for each window argument), float32, the sizes PyTorch's window arithmetic gives, and oneDNN
/// (loaded here) makes the backward-data and backward-weights primitives output_mask asks for.
bool onednn_conv_backward(const Graph& g, const Node& n);
/// Whether `n` is a scaled_dot_product_attention that cuDNN's fused (flash) attention runs:
/// q, k, v of rank 4 ([B, H, S, D]) and one dtype, f16 or bf16, the same B and H (or, with
/// enable_gqa, k and v with a divisor of q's heads), head dims multiples of 8 up to 128, no
/// dropout, and an attn_mask (bool or float, broadcasting to [B, H, Sq, Skv]) only without
/// is_causal; the scale may be anything.
bool cudnn_attention(const Graph& g, const Node& n);
/// cudnn_attention()'s checks of q, k, v and the mask (null: none) alone.
bool cudnn_attention_shapes(const TensorMeta& q, const TensorMeta& k, const TensorMeta& v,
                            const TensorMeta* mask, bool gqa);

/// Same, decomposing only nodes for which `select` returns true (including nodes that a
/// selected decomposition emits).
Graph decompose_if(const Graph& g, const std::function<bool(const Node&)>& select);

/// Rewrites layer_norm, batch_norm (eval) and max_pool2d into native_layer_norm,
/// _native_batch_norm_legit_no_training and max_pool2d_with_indices, whose extra outputs
/// (mean/rstd, indices) are what the backward reads, as PyTorch's autograd does.
Graph to_autograd_forms(const Graph& g);

/// The functional op of an in-place op ("aten.relu_.default" -> "aten.relu.default", or PyTorch's
/// `_functional` variant where the plain name is another op's: "aten.normal_.default" ->
/// "aten.normal_functional.default") when it is declared, else empty. decompose() rewrites an
/// in-place node to it when the storage it mutates has no other alias (not a graph input, no
/// views), the result then standing for every later use of that storage; otherwise the node stays
/// (an extern call).
std::string functional_target(std::string_view target);

/// Whether decompose() rewrites this in-place op to a functional form (functional_target, or
/// fill_.Tensor as its value broadcast), on a value nothing else aliases or written through a
/// chain of slices and selects (scattered back into the base).
bool functionalizes(std::string_view target);

/// A composite op's decomposition as a graph of its own (frontend/composite.h: the hook that
/// gives ops without a meta function or kernel those of their decomposition).
Graph expand_composite(const Graph& g, const Node& n);

/// Whether the table has a row for this normalised target.
bool has_decomposition(std::string_view target);

/// The declared ops that have a decomposition, and those to_autograd_forms() rewrites.
const OpLayer& decomposition_layer();
const OpLayer& autograd_form_layer();

} // namespace fxc
