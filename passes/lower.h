// Lowering: a Graph (after decompositions) to the loop-level IR.
#pragma once

#include "frontend/graph.h"
#include "frontend/ops.h"
#include "passes/loop_ir.h"

namespace fxc {

/// The layout of convolutions: cuDNN's on CUDA, oneDNN's on the CPU (--conv-layout;
/// LowerOptions::conv_layout).
enum class ConvLayout : uint8_t {
  Nchw, ///< the tensors as the graph has them
  /// Channels-last: x and the result NHWC (NDHWC for 3-D ones on the CPU; on CUDA the weight
  /// too), and the values computed from the result stored so as well, as torch.compile's layout
  /// optimization does; graph outputs keep their contiguous layout (a copy at the end where
  /// needed).
  Nhwc,
  /// CUDA: Nhwc unless the graph has a grouped convolution: cuDNN's depthwise kernels are slow in
  /// NHWC (H200, float32, batch 8: EfficientNet-B0 2.21 ms against 1.37 NCHW, ConvNeXt-Tiny
  /// 6.09 against 3.57), and so are generated ones for 7x7 windows. CPU: Nhwc.
  Auto,
};

struct LowerOptions {
  /// A pointwise value with two or more users is materialized when its body has more nodes
  /// than this; smaller bodies are recomputed (inlined) in every consumer.
  int inline_limit = 48;
  /// Testing only (--inject-bug): nodes of this op (base name, "relu") get a planted bug.
  std::string inject_op;
  /// "accuracy" adds 1 to the op's results here; "compile_error" and "runtime_error" are
  /// recorded in LoopProgram::injected for code generation and the plan to act on.
  std::string inject_kind;
  /// Lower for the CUDA plan: matmuls take f32/f16/bf16 (cuBLASLt), addmm's bias and a following
  /// relu (or tanh-approximated gelu) become the matmul's epilogue, and 2-D convolutions
  /// (f32/f16/bf16) become cuDNN calls when `cudnn` is set (else im2col + BLAS, logged with
  /// `no_cudnn_reason`).
  bool cuda = false;
  bool cudnn = false;
  std::string no_cudnn_reason;
  /// The layout of convolutions (ConvLayout): cuDNN's 2-D ones on CUDA, oneDNN's 2-D and 3-D
  /// ones on the CPU (inference; train graphs stay NCHW there).
  ConvLayout conv_layout = ConvLayout::Nchw;
  /// CPU: float32 convolutions of 1 to 3 spatial dims (grouped and depthwise included) become
  /// oneDNN calls with the bias, activations and a residual add that follow fused as post-ops
  /// (else im2col + BLAS, logged with `no_onednn_reason`).
  bool onednn = false;
  std::string no_onednn_reason = "not asked for";
  /// A train step's graph: 1x1 convolutions stay on oneDNN even where it runs them gemm-based
  /// (conv_onednn.cpp), so that the forward rounds as PyTorch's CPU path (oneDNN too) does and
  /// ReLU and max-pool choices, hence the gradients, follow PyTorch's.
  bool train = false;
};

/// Lowers every node of `g` to buffers of the loop IR.
///
/// Pointwise ops and views become value/index expressions that are inlined into their consumers
/// (views are pure index arithmetic); reductions (sum, mean, amax, any, softmax, layer norm,
/// max pooling) become reduction buffers with the producing pointwise chain as prologue;
/// mm/bmm/addmm/linear become BLAS extern calls whose bias and scaling become a pointwise
/// epilogue; any other op becomes a fallback extern call running the reference kernel, logged in
/// LoopProgram::log. A value is materialized when it is a graph output, an extern operand that
/// is not a strided view, or a large value with several users.
///
/// Requires value metadata (dtype, sizes) on every value. Throws fxc::Error (file, node) when a
/// node's arguments do not fit its op. Covered by test/unit/lower_test.cpp.
LoopProgram lower(const Graph& g, const LowerOptions& opts = {});

/// "addmm" for "aten.addmm.default", "softmax" for "aten._softmax.default".
std::string op_base_name(const std::string& target);

/// The declared ops that have a lowering rule (the others become extern fallback calls).
const OpLayer& lowering_layer();

} // namespace fxc
