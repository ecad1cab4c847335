// cuDNN via dlopen: conv2d shape checks, descriptors, algorithm choice, forward and bias.
#include "runtime/cudnn.h"

#include <cassert>
#include <climits>
#include <dlfcn.h>
#include <map>
#include <mutex>
#include <vector>

#include "runtime/cudnn_api.h"

namespace fxc::cuda {

namespace {

[[noreturn]] void bad(const std::string& msg) {
  throw CudaError("conv2d: " + msg);
}

void* dev(DevicePtr v) {
  return reinterpret_cast<void*>(uintptr_t(v));
}

} // namespace

std::array<int64_t, 4> conv2d_output_sizes(const Conv2dProblem& p) {
  auto in_range = [](int64_t v, int64_t lo, const char* name) {
    if (v < lo || v > INT32_MAX)
      bad(std::string(name) + " = " + std::to_string(v) + " is outside [" + std::to_string(lo) +
          ", 2^31-1]");
  };
  in_range(p.n, 1, "batch");
  in_range(p.c, 1, "input channels");
  in_range(p.h, 1, "input height");
  in_range(p.w, 1, "input width");
  in_range(p.k, 1, "output channels");
  in_range(p.r, 1, "kernel height");
  in_range(p.s, 1, "kernel width");
  in_range(p.stride_h, 1, "stride");
  in_range(p.stride_w, 1, "stride");
  in_range(p.pad_h, 0, "padding");
  in_range(p.pad_w, 0, "padding");
  in_range(p.dilation_h, 1, "dilation");
  in_range(p.dilation_w, 1, "dilation");
  in_range(p.groups, 1, "groups");
  if (p.c % p.groups != 0 || p.k % p.groups != 0)
    bad("channels " + std::to_string(p.c) + " -> " + std::to_string(p.k) + " do not divide into " +
        std::to_string(p.groups) + " groups");
  // All operands below are < 2^31, so these int64 products cannot overflow.
  int64_t out_h = (p.h + 2 * p.pad_h - p.dilation_h * (p.r - 1) - 1) / p.stride_h + 1;
  int64_t out_w = (p.w + 2 * p.pad_w - p.dilation_w * (p.s - 1) - 1) / p.stride_w + 1;
  if (p.h + 2 * p.pad_h < p.dilation_h * (p.r - 1) + 1 ||
      p.w + 2 * p.pad_w < p.dilation_w * (p.s - 1) + 1)
    bad("the kernel (" + std::to_string(p.r) + "x" + std::to_string(p.s) +
        ", dilated) is larger than the padded input (" + std::to_string(p.h + 2 * p.pad_h) + "x" +
        std::to_string(p.w + 2 * p.pad_w) + ")");
  // cuDNN's legacy descriptors take int strides: every tensor must have under 2^31 elements.
  auto numel_ok = [](int64_t a, int64_t b, int64_t c, int64_t d, const char* name) {
    __int128 v = __int128(a) * b * c * d;
    if (v > INT32_MAX) bad(std::string(name) + " has 2^31 or more elements");
  };
  numel_ok(p.n, p.c, p.h, p.w, "the input");
  numel_ok(p.k, p.c / p.groups, p.r, p.s, "the weight");
  numel_ok(p.n, p.k, out_h, out_w, "the output");
  return {p.n, p.k, out_h, out_w};
}

std::optional<Conv2dProblem> conv2d_problem(const TensorMeta& x, const TensorMeta& w,
                                            std::array<int64_t, 2> stride,
                                            std::array<int64_t, 2> padding,
                                            std::array<int64_t, 2> dilation, int64_t groups,
                                            bool nhwc) {
  bool dtype_ok = x.dtype == w.dtype &&
                  (x.dtype == DType::F32 || x.dtype == DType::F16 || x.dtype == DType::BF16);
  if (x.dim() != 4 || w.dim() != 4 || !dtype_ok)
    bad("expected 4-D f32, f16 or bf16 input and weight of one dtype, got " + format_meta(x) +
        " and " + format_meta(w));
  if (groups < 1 || w.sizes[1] * groups != x.sizes[1])
    bad("weight " + format_meta(w) + " with " + std::to_string(groups) +
        " groups does not take the " + std::to_string(x.sizes[1]) + " channels of " +
        format_meta(x));
  auto channels_last = [](const TensorMeta& t) {
    return is_contiguous_layout({t.sizes[0], t.sizes[2], t.sizes[3], t.sizes[1]},
                                {t.strides[0], t.strides[2], t.strides[3], t.strides[1]});
  };
  if (nhwc ? !channels_last(x) || !channels_last(w) : !x.is_contiguous() || !w.is_contiguous())
    return std::nullopt;
  Conv2dProblem p;
  p.nhwc = nhwc;
  p.dtype = x.dtype;
  p.n = x.sizes[0], p.c = x.sizes[1], p.h = x.sizes[2], p.w = x.sizes[3];
  p.k = w.sizes[0], p.r = w.sizes[2], p.s = w.sizes[3];
  p.stride_h = stride[0], p.stride_w = stride[1];
  p.pad_h = padding[0], p.pad_w = padding[1];
  p.dilation_h = dilation[0], p.dilation_w = dilation[1];
  p.groups = groups;
  conv2d_output_sizes(p); // the remaining checks
  return p;
}

#if defined(FXC_HAVE_CUDNN_HEADERS)

namespace {

constexpr const char* kNoDnn = "cuDNN not available: ";

std::unique_ptr<Cudnn::Api> load_dnn() {
  auto api = std::make_unique<Cudnn::Api>();
  std::string tried;
  api->lib = open_library({"libcudnn.so.9"}, &tried);
  if (!api->lib)
    throw CudaError(kNoDnn + tried +
                    " (put the folder holding libcudnn.so.9 on LD_LIBRARY_PATH; see docs/gpu.md)");
#define FXC_DNN_RESOLVE(fn)                                                                        \
  api->fn = reinterpret_cast<decltype(api->fn)>(dlsym(api->lib, #fn));                             \
  if (!api->fn) throw CudaError(std::string(kNoDnn) + "libcudnn.so.9 lacks " #fn);
  FXC_DNN_FUNCTIONS(FXC_DNN_RESOLVE)
#undef FXC_DNN_RESOLVE
  return api;
}

struct DnnSingleton {
  std::unique_ptr<Cudnn> dnn;
  std::string error;
};

} // namespace

Cudnn& Cudnn::get() {
  return get(Context::get()); // the "no CUDA driver/device" error comes first
}

Cudnn& Cudnn::get(Context& ctx) {
  // Never destroyed: at exit the library's own statics (registered when it was opened, after
  // this map was made) are torn down first, and destroying the handle then frees what is gone
  // (free(): invalid pointer in cublasLtDestroy, seen on the H200). The process's exit
  // releases the device memory with the contexts.
  static std::mutex mu;
  static auto& per_device = *new std::map<int, DnnSingleton>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = per_device.find(ctx.ordinal());
  if (it == per_device.end()) {
    DnnSingleton r;
    try {
      r.dnn.reset(new Cudnn(ctx, load_dnn()));
    } catch (const CudaError& e) {
      std::string msg = e.what();
      r.error = msg.rfind(kNoDnn, 0) == 0 ? msg : kNoDnn + msg;
    }
    it = per_device.emplace(ctx.ordinal(), std::move(r)).first;
  }
  if (!it->second.dnn) throw CudaError(it->second.error);
  return *it->second.dnn;
}

std::string Cudnn::unavailable_reason() {
  try {
    get();
    return "";
  } catch (const CudaError& e) {
    return e.what();
  }
}

Cudnn::Cudnn(Context& ctx, std::unique_ptr<Api> api) : ctx_(ctx), api_(std::move(api)) {
  version_ = api_->cudnnGetVersion();
  if (version_ < 90000)
    throw CudaError(std::string(kNoDnn) + "libcudnn.so.9 reports version " +
                    std::to_string(version_));
  cudnnHandle_t h = nullptr;
  check(api_->cudnnCreate(&h), "cudnnCreate");
  handle_ = h;
  try {
    check(api_->cudnnSetStream(h, static_cast<cudaStream_t>(ctx_.stream())), "cudnnSetStream");
  } catch (...) {
    api_->cudnnDestroy(h);
    throw;
  }
}

Cudnn::~Cudnn() {
  // Errors are ignored: at process exit the driver may already be shutting down.
  try {
    ctx_.make_current();
    ctx_.synchronize();
    if (workspace_) ctx_.mem_free(workspace_);
    for (DevicePtr p : retired_) ctx_.mem_free(p);
  } catch (const CudaError&) {
  }
  prepared_.clear();
  api_->cudnnDestroy(static_cast<cudnnHandle_t>(handle_));
}

void Cudnn::check(int status, const char* call) const {
  if (status == CUDNN_STATUS_SUCCESS) return;
  const char* text = api_->cudnnGetErrorString(cudnnStatus_t(status));
  throw CudaError(std::string(call) +
                  " failed: " + (text ? text : "status " + std::to_string(status)));
}

DevicePtr Cudnn::workspace(size_t bytes) {
  if (bytes == 0) return 0;
  if (bytes <= workspace_bytes_) return workspace_;
  // A CUDA graph captured earlier (another plan's, under --cuda-graphs) holds the old pointer and
  // is replayed later: the old workspace stays allocated until the handle goes away. Sizes grow
  // by powers of two, so the retired ones add up to less than the one in use.
  size_t grown = size_t(1) << 20;
  while (grown < bytes) grown <<= 1;
  DevicePtr fresh = ctx_.mem_alloc(grown);
  if (workspace_) retired_.push_back(workspace_);
  workspace_ = fresh;
  workspace_bytes_ = grown;
  return workspace_;
}

struct Cudnn::Prepared {
  const Api& D;
  cudnnTensorDescriptor_t xd = nullptr, yd = nullptr, bd = nullptr;
  cudnnFilterDescriptor_t wd = nullptr;
  cudnnConvolutionDescriptor_t cd = nullptr;
  // The algorithm of the direction this problem was prepared for (one of the three).
  cudnnConvolutionFwdAlgo_t algo = {};
  cudnnConvolutionBwdDataAlgo_t data_algo = {};
  cudnnConvolutionBwdFilterAlgo_t filter_algo = {};
  size_t ws_bytes = 0;
  explicit Prepared(const Api& api) : D(api) {}
  Prepared(const Prepared&) = delete;
  Prepared& operator=(const Prepared&) = delete;
  ~Prepared() {
    if (cd) D.cudnnDestroyConvolutionDescriptor(cd);
    if (wd) D.cudnnDestroyFilterDescriptor(wd);
    if (bd) D.cudnnDestroyTensorDescriptor(bd);
    if (yd) D.cudnnDestroyTensorDescriptor(yd);
    if (xd) D.cudnnDestroyTensorDescriptor(xd);
  }
};

size_t Cudnn::workspace_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return workspace_bytes_;
}

size_t Cudnn::prepared_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return prepared_.size();
}

namespace {

// cuDNN ranks the algorithms; the first that ran its checks, fits the workspace and keeps to the
// math allowed (no tensor-op math for exact float32).
template <typename Perf>
const Perf* choose_algo(const std::vector<Perf>& perf, int returned, bool tensor_ops) {
  for (int i = 0; i < returned; ++i)
    if (perf[size_t(i)].status == CUDNN_STATUS_SUCCESS &&
        perf[size_t(i)].memory <= Cudnn::kMaxWorkspaceBytes &&
        (tensor_ops || perf[size_t(i)].mathType != CUDNN_TENSOR_OP_MATH))
      return &perf[size_t(i)];
  return nullptr;
}

} // namespace

Cudnn::Prepared& Cudnn::prepare(const Conv2dProblem& p, ConvDirection dir) {
  std::array<int64_t, 18> key = {p.n,          p.c,      p.h,          p.w,
                                 p.k,          p.r,      p.s,          p.stride_h,
                                 p.stride_w,   p.pad_h,  p.pad_w,      p.dilation_h,
                                 p.dilation_w, p.groups, p.allow_tf32, int64_t(p.dtype),
                                 int64_t(dir), p.nhwc};
  auto it = prepared_.find(key);
  if (it != prepared_.end()) return *it->second;
  std::array<int64_t, 4> out = conv2d_output_sizes(p);
  const Api& D = *api_;
  cudnnHandle_t h = static_cast<cudnnHandle_t>(handle_);
  // Descriptors are released however this function leaves (`pp` owns them until it is kept).
  auto pp = std::make_unique<Prepared>(D);
  Prepared& r = *pp;
  bool half = p.dtype != DType::F32;
  cudnnDataType_t dt = p.dtype == DType::BF16  ? CUDNN_DATA_BFLOAT16
                       : p.dtype == DType::F16 ? CUDNN_DATA_HALF
                                               : CUDNN_DATA_FLOAT;
  cudnnTensorFormat_t format = p.nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  auto tensor = [&](cudnnTensorDescriptor_t& t, int64_t n, int64_t c, int64_t hh, int64_t ww) {
    check(D.cudnnCreateTensorDescriptor(&t), "cudnnCreateTensorDescriptor");
    check(D.cudnnSetTensor4dDescriptor(t, format, dt, int(n), int(c), int(hh), int(ww)),
          "cudnnSetTensor4dDescriptor");
  };
  tensor(r.xd, p.n, p.c, p.h, p.w);
  tensor(r.yd, out[0], out[1], out[2], out[3]);
  tensor(r.bd, 1, p.k, 1, 1);
  check(D.cudnnCreateFilterDescriptor(&r.wd), "cudnnCreateFilterDescriptor");
  check(D.cudnnSetFilter4dDescriptor(r.wd, dt, format, int(p.k), int(p.c / p.groups), int(p.r),
                                     int(p.s)),
        "cudnnSetFilter4dDescriptor");
  check(D.cudnnCreateConvolutionDescriptor(&r.cd), "cudnnCreateConvolutionDescriptor");
  // PyTorch's conv2d is a cross-correlation, as is CUDNN_CROSS_CORRELATION.
  check(D.cudnnSetConvolution2dDescriptor(r.cd, int(p.pad_h), int(p.pad_w), int(p.stride_h),
                                          int(p.stride_w), int(p.dilation_h), int(p.dilation_w),
                                          CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
        "cudnnSetConvolution2dDescriptor");
  check(D.cudnnSetConvolutionGroupCount(r.cd, int(p.groups)), "cudnnSetConvolutionGroupCount");
  // Half types run on the tensor cores (accumulating in float32); float32 only with TF32.
  bool tensor_ops = half || p.allow_tf32;
  check(D.cudnnSetConvolutionMathType(r.cd, tensor_ops ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH),
        "cudnnSetConvolutionMathType");

  int dn = 0, dc = 0, dh = 0, dw = 0;
  check(D.cudnnGetConvolution2dForwardOutputDim(r.cd, r.xd, r.wd, &dn, &dc, &dh, &dw),
        "cudnnGetConvolution2dForwardOutputDim");
  assert(dn == out[0] && dc == out[1] && dh == out[2] && dw == out[3] &&
         "cuDNN and conv2d_output_sizes disagree on the output shape");

  // Each direction: cuDNN's ranking (find), the first algorithm that fits, its workspace size.
  auto pick = [&](auto perf, const char* what, auto&& find, auto&& size) {
    int returned = 0;
    find(int(perf.size()), &returned, perf.data());
    const auto* chosen = choose_algo(perf, returned, tensor_ops);
    if (!chosen)
      bad(std::string(what) + "cuDNN offers no algorithm within " +
          std::to_string(kMaxWorkspaceBytes) + " workspace bytes");
    size(chosen->algo, &r.ws_bytes);
    return chosen->algo;
  };
  switch (dir) {
  case ConvDirection::Forward:
    r.algo = pick(
        std::vector<cudnnConvolutionFwdAlgoPerf_t>(CUDNN_CONVOLUTION_FWD_ALGO_COUNT), "",
        [&](int n, int* got, auto* out) {
          check(D.cudnnGetConvolutionForwardAlgorithm_v7(h, r.xd, r.wd, r.cd, r.yd, n, got, out),
                "cudnnGetConvolutionForwardAlgorithm_v7");
        },
        [&](auto algo, size_t* ws) {
          check(D.cudnnGetConvolutionForwardWorkspaceSize(h, r.xd, r.wd, r.cd, r.yd, algo, ws),
                "cudnnGetConvolutionForwardWorkspaceSize");
        });
    break;
  case ConvDirection::BackwardData:
    r.data_algo = pick(
        std::vector<cudnnConvolutionBwdDataAlgoPerf_t>(CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT),
        "backward data: ",
        [&](int n, int* got, auto* out) {
          check(
              D.cudnnGetConvolutionBackwardDataAlgorithm_v7(h, r.wd, r.yd, r.cd, r.xd, n, got, out),
              "cudnnGetConvolutionBackwardDataAlgorithm_v7");
        },
        [&](auto algo, size_t* ws) {
          check(D.cudnnGetConvolutionBackwardDataWorkspaceSize(h, r.wd, r.yd, r.cd, r.xd, algo, ws),
                "cudnnGetConvolutionBackwardDataWorkspaceSize");
        });
    break;
  case ConvDirection::BackwardFilter:
    r.filter_algo = pick(
        std::vector<cudnnConvolutionBwdFilterAlgoPerf_t>(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT),
        "backward filter: ",
        [&](int n, int* got, auto* out) {
          check(D.cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, r.xd, r.yd, r.cd, r.wd, n, got,
                                                                out),
                "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
        },
        [&](auto algo, size_t* ws) {
          check(
              D.cudnnGetConvolutionBackwardFilterWorkspaceSize(h, r.xd, r.yd, r.cd, r.wd, algo, ws),
              "cudnnGetConvolutionBackwardFilterWorkspaceSize");
        });
    break;
  }
  return *prepared_.emplace(key, std::move(pp)).first->second;
}

void Cudnn::launch(const Conv2dProblem& p, ConvDirection dir,
                   std::initializer_list<DevicePtr> operands,
                   const std::function<void(const Prepared&, void* workspace)>& call) {
  conv2d_output_sizes(p); // checks the problem
  for (DevicePtr v : operands)
    if (v == 0) bad("null operand");
  ctx_.make_current();
  std::lock_guard<std::mutex> lock(mu_);
  Prepared& r = prepare(p, dir);
  call(r, dev(workspace(r.ws_bytes)));
}

void Cudnn::conv2d_forward(const Conv2dProblem& p, DevicePtr x, DevicePtr w, DevicePtr bias,
                           DevicePtr y) {
  const Api& D = *api_;
  cudnnHandle_t h = static_cast<cudnnHandle_t>(handle_);
  float one = 1.0f, zero = 0.0f;
  launch(p, ConvDirection::Forward, {x, w, y}, [&](const Prepared& r, void* ws) {
    check(D.cudnnConvolutionForward(h, &one, r.xd, dev(x), r.wd, dev(w), r.cd, r.algo, ws,
                                    r.ws_bytes, &zero, r.yd, dev(y)),
          "cudnnConvolutionForward");
    if (bias)
      check(D.cudnnAddTensor(h, &one, r.bd, dev(bias), &one, r.yd, dev(y)), "cudnnAddTensor");
  });
}

void Cudnn::conv2d_backward_data(const Conv2dProblem& p, DevicePtr dy, DevicePtr w, DevicePtr dx) {
  const Api& D = *api_;
  cudnnHandle_t h = static_cast<cudnnHandle_t>(handle_);
  float one = 1.0f, zero = 0.0f;
  launch(p, ConvDirection::BackwardData, {dy, w, dx}, [&](const Prepared& r, void* ws) {
    check(D.cudnnConvolutionBackwardData(h, &one, r.wd, dev(w), r.yd, dev(dy), r.cd, r.data_algo,
                                         ws, r.ws_bytes, &zero, r.xd, dev(dx)),
          "cudnnConvolutionBackwardData");
  });
}

void Cudnn::conv2d_backward_filter(const Conv2dProblem& p, DevicePtr x, DevicePtr dy,
                                   DevicePtr dw) {
  const Api& D = *api_;
  cudnnHandle_t h = static_cast<cudnnHandle_t>(handle_);
  float one = 1.0f, zero = 0.0f;
  launch(p, ConvDirection::BackwardFilter, {x, dy, dw}, [&](const Prepared& r, void* ws) {
    check(D.cudnnConvolutionBackwardFilter(h, &one, r.xd, dev(x), r.yd, dev(dy), r.cd,
                                           r.filter_algo, ws, r.ws_bytes, &zero, r.wd, dev(dw)),
          "cudnnConvolutionBackwardFilter");
  });
}

#else // no cuDNN headers at build time

struct Cudnn::Api {};

Cudnn& Cudnn::get() {
  return get(Context::get()); // the "no CUDA driver/device" error when CUDA is missing altogether
}
Cudnn& Cudnn::get(Context&) {
  throw CudaError("cuDNN not available: fxc was built without cudnn.h");
}
std::string Cudnn::unavailable_reason() {
  try {
    get();
  } catch (const CudaError& e) {
    return e.what();
  }
  return "";
}
struct Cudnn::Prepared {};
Cudnn::~Cudnn() = default;
size_t Cudnn::prepared_count() const {
  return 0;
}
void Cudnn::conv2d_forward(const Conv2dProblem& p, DevicePtr, DevicePtr, DevicePtr, DevicePtr) {
  conv2d_output_sizes(p);
  throw CudaError("cuDNN not available: fxc was built without cudnn.h");
}
void Cudnn::conv2d_backward_data(const Conv2dProblem& p, DevicePtr, DevicePtr, DevicePtr) {
  conv2d_output_sizes(p);
  throw CudaError("cuDNN not available: fxc was built without cudnn.h");
}
void Cudnn::conv2d_backward_filter(const Conv2dProblem& p, DevicePtr, DevicePtr, DevicePtr) {
  conv2d_output_sizes(p);
  throw CudaError("cuDNN not available: fxc was built without cudnn.h");
}

#endif

} // namespace fxc::cuda
