// oneDNN (libdnnl.so.2) opened with dlopen: CPU 1-D, 2-D and 3-D convolutions with fused
// post-ops, and their input and weight gradients (train mode).
//
// fxc never links libdnnl: the functions it uses are resolved into a table when the library is
// first asked for (types come from dnnl.h at build time). Where libdnnl.so.2 is absent (the GPU
// machine's image), unavailable_reason() says so, lowering keeps im2col + BLAS, and a plan that
// has oneDNN convolutions anyway (an .fxo built elsewhere) runs them with a direct loop.
//
// Primitives are made once per plan (prepare_plan, called when a plan is built or loaded): each
// convolution's primitive descriptor, primitive and, for weights bound at compile time, the
// weights reordered once into the layout oneDNN prefers. Activations cross the call's boundary
// in the call's layout: channels-last (NHWC, NDHWC; PlanExtern::channels_last, the default in
// inference) or NCHW (NCW, NCDHW); src and dst are reordered to and from a blocked layout inside
// the call only when oneDNN has no good kernel for that layout.
//
// Gradients (ConvBackwardData / ConvBackwardFilter calls, which decompose() keeps whole for the
// CPU with oneDNN, train mode): dx from dy and w, dw from x and dy, through oneDNN's
// backward-data and backward-weights primitives (made with a forward-training primitive
// descriptor as their hint, once per plan). Operands cross the call plain (NCHW, (g)oihw);
// inside it they are reordered into the blocked layouts oneDNN prefers unless it has a good
// kernel for the plain ones.
//
// Threads: Debian's libdnnl is built with OpenMP (libgomp). Every call sets the OpenMP thread
// count to the size of the plan's thread pool (--threads), and fxc asks libgomp for passive
// waiting (OMP_WAIT_POLICY=PASSIVE, unless the environment sets it) so that OpenMP workers do
// not spin on the cores the pool's kernels run on next. FXC_ONEDNN=0 turns oneDNN off.
#pragma once

#include "runtime/plan_executor.h"

#include <memory>
#include <string>
#include <vector>

namespace fxc::onednn {

/// Empty when libdnnl.so.2 is loaded with every function fxc uses; else why not ("FXC_ONEDNN=0",
/// "libdnnl.so.2: cannot open shared object file", "missing symbol dnnl_...").
const std::string& unavailable_reason();

/// One fused post-op of a convolution, as PlanExtern::post_ops spells it (space-separated):
///   relu | sigmoid | tanh | hardswish | silu | gelu_erf | gelu_tanh
///   linear:A:B (A·x + B) | clip:LO:HI (clamp) | sum (add the next extra operand, a tensor of
///   the result's shape)
/// Post-ops apply in order to conv(x, w) + bias.
struct PostOp {
  enum class Kind : uint8_t {
    Relu,
    Sigmoid,
    Tanh,
    Hardswish,
    Silu,
    GeluErf,
    GeluTanh,
    Linear,
    Clip,
    Sum
  };
  Kind kind = Kind::Relu;
  float a = 0, b = 0; ///< Linear: A, B; Clip: LO, HI
};
/// Parses a post-op list; throws fxc::Error on an unknown token.
std::vector<PostOp> parse_post_ops(const std::string& text);
/// The token of one post-op (floats written so that they read back exactly).
std::string post_op_token(const PostOp& op);

/// A convolution's shape over 1 to 3 spatial dims: x [N, C, *in], w [K, C / groups, *kernel],
/// out [N, K, *out]; stride, padding and dilation one value per spatial dim.
struct ConvShape {
  std::vector<int64_t> x, w, out;
  std::vector<int64_t> stride{1, 1}, padding{0, 0}, dilation{1, 1};
  int64_t groups = 1;
  bool bias = false;
  /// x, the result and `sum` operands channels-last (NHWC, NDHWC; the sizes above stay
  /// logical); the weight plain.
  bool channels_last = false;
  size_t spatial() const { return x.size() - 2; }
};

/// The shape of conv call `e` of a plan (CPU or CUDA): logical sizes, also of a channels-last
/// call's result buffer ([N, OH, OW, K] is out [N, K, OH, OW]); `bias` from the operand count.
ConvShape shape_of(const PlanExtern& e);

/// Empty when the shape is one PyTorch's convolution gives (ranks, channels and groups, every
/// output size from the window arithmetic); else what is wrong. Checked before any loop reads
/// operands of these sizes (lowering, artifact loading).
std::string shape_error(const ConvShape& s);

/// Whether oneDNN makes a float32 forward-inference primitive for the convolution with these
/// post-ops; empty, else why not. Used by lowering, so that what it fuses always runs.
std::string check_conv(const ConvShape& shape, const std::vector<PostOp>& post_ops);

/// The name of the oneDNN implementation a convolution runs ("jit:avx2", "jit_dw:avx2", ...;
/// "direct loop" without oneDNN), with its layout; for logs and tests.
std::string conv_impl_name(const ConvShape& shape, const std::vector<PostOp>& post_ops);

/// The forward convolution of a ConvBackwardData call (dy, w -> dx: x is dx's shape, out dy's)
/// or a ConvBackwardFilter call (x, dy -> dw: w is dw's shape); plain (NCHW) layouts, no bias.
ConvShape backward_shape_of(const PlanExtern& e);

/// Whether oneDNN makes a float32 backward-data (`data`: dx from dy and w) or backward-weights
/// (dw from x and dy) primitive for the convolution; empty, else why not. Used by decompose(),
/// so that a convolution_backward kept whole always runs on oneDNN.
std::string check_conv_backward(const ConvShape& shape, bool data);

/// The name of the oneDNN implementation of a convolution gradient ("jit:avx2", ...), with the
/// layouts it reads and writes; "direct loop (why)" without oneDNN.
std::string conv_backward_impl_name(const ConvShape& shape, bool data);

/// Makes the primitives of every oneDNN convolution of a CPU plan and reorders the weights that
/// are bound at compile time (constant slots). Does nothing without oneDNN. Throws fxc::Error
/// when oneDNN refuses a convolution it accepted at lowering time.
void prepare_plan(Plan& plan, const std::string& source = {});

/// Runs convolution call `e` of a CPU plan over the slots: through its prepared primitive (made
/// here when the plan was not prepared), or the direct loop without oneDNN. `threads`: the
/// OpenMP thread count (the plan pool's size); the direct loop runs on `pool`.
void run_conv(const PlanExtern& e, const std::vector<std::shared_ptr<Storage>>& slots,
              ThreadPool& pool, const std::string& source);

/// Runs ConvBackwardData / ConvBackwardFilter call `e` of a CPU plan: through its prepared
/// primitive (made here when the plan was not prepared), or the direct loop without oneDNN.
/// Operands and the result are contiguous (NCW, NCHW, NCDHW; the weight (g)oi(d)(h)w).
void run_conv_backward(const PlanExtern& e, const std::vector<std::shared_ptr<Storage>>& slots,
                       ThreadPool& pool, const std::string& source);

/// The direct loop of a convolution gradient (no oneDNN), float32, contiguous, accumulating in
/// double. `data`: dx = conv_backward_data(dy = a, w = b); else dw = conv_backward_weights(x = a,
/// dy = b). `out` is overwritten.
void conv_backward_direct(const ConvShape& s, bool data, const float* a, const float* b, float* out,
                          ThreadPool& pool);

/// The direct loop (no oneDNN): out = post_ops(scale · (conv(x, w) + bias) + shift), float32,
/// contiguous (NCW, NCHW or NCDHW) (bias, scale and shift per output channel, each may be null;
/// scale and shift together); `extra` are the operands of `sum` post-ops in order. Accumulates in
/// double.
void conv_direct(const ConvShape& s, const float* x, const float* w, const float* bias,
                 const float* scale, const float* shift, const std::vector<const float*>& extra,
                 const std::vector<PostOp>& post_ops, float* out, ThreadPool& pool);

/// Sets the OpenMP thread count oneDNN uses on this thread (omp_set_num_threads).
void set_threads(int threads);

} // namespace fxc::onednn
