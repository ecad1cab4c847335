// 2-D convolution forward and backward (data, filter) through cuDNN 9, opened with dlopen (the
// convolution extern kernel).
//
// cuDNN is not part of the CUDA toolkit: fxc finds libcudnn.so.9 by its soname through
// LD_LIBRARY_PATH and the loader cache only (on the GPU machine it ships with PyTorch, in
// site-packages/nvidia/cudnn/lib). The legacy cudnnConvolutionForward API is used, with the
// algorithm cuDNN's heuristics rank first among those whose workspace fits. Float32 convolutions
// use FMA math (exact float32, PyTorch's default) unless TF32 is allowed.
#pragma once

#include "frontend/dtype.h"
#include "frontend/graph.h"
#include "runtime/cuda_driver.h"

#include <array>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace fxc::cuda {

/// y = conv2d(x, w) (+ bias[k] broadcast over n, h, w), all contiguous NCHW of one dtype; the
/// weight is [k, c / groups, r, s], as PyTorch's.
struct Conv2dProblem {
  DType dtype = DType::F32;           ///< F32, F16 or BF16; accumulation is float32 for all three
  int64_t n = 0, c = 0, h = 0, w = 0; ///< input
  int64_t k = 0, r = 0, s = 0;        ///< output channels, kernel height and width
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;
  bool allow_tf32 = false;
  /// x, w and y channels-last (NHWC; w as [K, R, S, C / groups]); else all contiguous NCHW.
  bool nhwc = false;
};

/// The output sizes [n, k, out_h, out_w] (PyTorch's formula). Throws CudaError("conv2d: ...")
/// when a size is out of cuDNN's int32 range, channels do not divide by groups, or the output
/// would be empty. Runs on the host only.
std::array<int64_t, 4> conv2d_output_sizes(const Conv2dProblem& p);

/// The problem of PyTorch's conv2d(x, w, stride, padding, dilation, groups) (each pair {h, w}),
/// or nullopt when x or w is not laid out as asked: contiguous NCHW, or with `nhwc` channels-last
/// (x and w [N, C, H, W] / [K, C / groups, R, S] with NHWC strides). Throws CudaError("conv2d:
/// ...") when x and w are not 4-D of one dtype among f32, f16 and bf16, or the channels do not
/// match the groups.
std::optional<Conv2dProblem> conv2d_problem(const TensorMeta& x, const TensorMeta& w,
                                            std::array<int64_t, 2> stride,
                                            std::array<int64_t, 2> padding,
                                            std::array<int64_t, 2> dilation, int64_t groups,
                                            bool nhwc = false);

/// o = softmax(scale · q·kᵀ + bias) · v per batch and head, optionally causal (query i sees keys
/// j <= i, PyTorch's is_causal), f16 or bf16 with float32 accumulation, through cuDNN's fused
/// (flash) attention. q and o have h heads, k and v h_kv (a divisor of h: grouped-query
/// attention). Every tensor is given as dims [b, h, s, d] with element strides (any order; the
/// last dim unit-stride). The bias, when there is one, is [bias_b, bias_h, s_q, s_kv] (bias_b 1
/// or b, bias_h 1 or h), contiguous, in the I/O dtype.
struct AttentionProblem {
  DType dtype = DType::BF16;
  int64_t b = 0, h = 0, h_kv = 0, s_q = 0, s_kv = 0, d = 0, d_v = 0;
  std::array<int64_t, 4> q_strides{}, k_strides{}, v_strides{}, o_strides{};
  double scale = 1;
  bool causal = false;
  bool has_bias = false;
  int64_t bias_b = 1, bias_h = 1;
};

/// Why cuDNN's fused attention cannot run `p` ("" when it can, as far as fxc checks: dtype, head
/// dims, strides and 16-byte alignment; cuDNN may still refuse it at run time).
std::string attention_problem_error(const AttentionProblem& p);

/// `p` with the stride of every size-1 dim of q, k, v and o replaced by a canonical one (the
/// largest extent, stride times size, of the operand's other dims): such a dim is never stepped,
/// so any stride PyTorch left there (a view's leftover 1, say) describes the same tensor, and
/// cuDNN's alignment rule must not refuse it.
AttentionProblem with_canonical_unit_strides(AttentionProblem p);

class Cudnn {
public:
  /// The process's cuDNN handle bound to Context::get()'s stream (get(ctx): to ctx's; one per
  /// device). Throws CudaError("cuDNN not available: ...") when libcudnn.so.9 is not on the
  /// library path (or the context's "no CUDA driver/device" error first).
  static Cudnn& get();
  static Cudnn& get(Context& ctx);
  /// Empty when get() succeeds, else its message. Never throws.
  static std::string unavailable_reason();

  Cudnn(const Cudnn&) = delete;
  Cudnn& operator=(const Cudnn&) = delete;
  ~Cudnn();

  /// Queues y = conv2d(x, w) + bias on the context's stream; `bias` (k floats) may be 0.
  void conv2d_forward(const Conv2dProblem& p, DevicePtr x, DevicePtr w, DevicePtr bias,
                      DevicePtr y);
  /// Queues dx = d(conv2d(x, w))/dx applied to dy (cudnnConvolutionBackwardData): `p` is the
  /// forward problem, dy [n, k, out_h, out_w], dx [n, c, h, w] (overwritten).
  void conv2d_backward_data(const Conv2dProblem& p, DevicePtr dy, DevicePtr w, DevicePtr dx);
  /// Queues dw = d(conv2d(x, w))/dw applied to dy (cudnnConvolutionBackwardFilter): dw is
  /// [k, c / groups, r, s] (overwritten).
  void conv2d_backward_filter(const Conv2dProblem& p, DevicePtr x, DevicePtr dy, DevicePtr dw);
  /// Queues the fused attention of `p` (AttentionProblem) on the context's stream. The graph,
  /// its execution plan and workspace size are built on the first call of a problem and reused.
  void attention_forward(const AttentionProblem& p, DevicePtr q, DevicePtr k, DevicePtr v,
                         DevicePtr bias, DevicePtr o);
  /// cudnnGetVersion(), e.g. 91900 for 9.19.0.
  size_t version() const { return version_; }
  /// The largest workspace an algorithm may ask for.
  static constexpr size_t kMaxWorkspaceBytes = size_t(256) << 20;

  struct Api; ///< the resolved entry points (defined in cudnn.cpp)
  /// A problem's descriptors, algorithm and workspace size for one direction, made on its first
  /// call and reused by later calls with the same problem and direction.
  struct Prepared;
  enum class ConvDirection : uint8_t { Forward, BackwardData, BackwardFilter };
  /// Problems prepared so far.
  size_t prepared_count() const;
  /// Bytes of the workspace in use (0 before any algorithm asked for one).
  size_t workspace_bytes() const;

private:
  Cudnn(Context& ctx, std::unique_ptr<Api> api);
  void check(int status, const char* call) const;
  DevicePtr workspace(size_t bytes);
  Prepared& prepare(const Conv2dProblem& p, ConvDirection dir);
  /// Checks the problem and its operands (none null), prepares it for `dir` and runs `call` with
  /// its workspace, all under the lock.
  void launch(const Conv2dProblem& p, ConvDirection dir, std::initializer_list<DevicePtr> operands,
              const std::function<void(const Prepared&, void* workspace)>& call);
  Context& ctx_;
  std::unique_ptr<Api> api_;
  mutable std::mutex mu_;
  std::map<std::array<int64_t, 18>, std::unique_ptr<Prepared>> prepared_;
  /// Fused-attention execution plans by problem (cudnn_attention.cpp's AttentionPlan, owning its
  /// backend descriptors).
  std::map<std::vector<int64_t>, std::shared_ptr<void>> attention_plans_;
  void* handle_ = nullptr;
  DevicePtr workspace_ = 0;
  size_t workspace_bytes_ = 0;
  std::vector<DevicePtr> retired_; ///< smaller workspaces that captured graphs may still use
  size_t version_ = 0;
};

} // namespace fxc::cuda
