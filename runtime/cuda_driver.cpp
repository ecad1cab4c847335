// The CUDA driver API resolved with dlopen/dlsym: context, stream, memory, modules, launches.
#include "runtime/cuda_driver.h"

#include <cassert>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <mutex>

#if defined(FXC_HAVE_CUDA_HEADERS)
#include <cuda.h>
#endif

namespace fxc::cuda {

void* open_library(const std::vector<std::string>& names, std::string* tried) {
  std::string log;
  for (const std::string& name : names) {
    if (void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
    const char* why = dlerror();
    if (!log.empty()) log += "; ";
    log += why ? std::string(why) : name + ": not found";
  }
  if (tried) *tried = log;
  return nullptr;
}

#if defined(FXC_HAVE_CUDA_HEADERS)

namespace {

// Two-level stringification, so that the versioned names cuda.h maps to (cuMemAlloc ->
// cuMemAlloc_v2) are the symbols looked up.
#define FXC_CU_STR2(x) #x
#define FXC_CU_STR(x) FXC_CU_STR2(x)

// Every driver entry point fxc uses, one per row.
#define FXC_CUDA_FUNCTIONS(X)                                                                      \
  X(cuInit)                                                                                        \
  X(cuDriverGetVersion)                                                                            \
  X(cuGetErrorName)                                                                                \
  X(cuGetErrorString)                                                                              \
  X(cuDeviceGetCount)                                                                              \
  X(cuDeviceGet)                                                                                   \
  X(cuDeviceGetName)                                                                               \
  X(cuDeviceGetAttribute)                                                                          \
  X(cuDeviceTotalMem)                                                                              \
  X(cuDevicePrimaryCtxRetain)                                                                      \
  X(cuDevicePrimaryCtxRelease)                                                                     \
  X(cuCtxSetCurrent)                                                                               \
  X(cuStreamCreate)                                                                                \
  X(cuStreamDestroy)                                                                               \
  X(cuStreamSynchronize)                                                                           \
  X(cuStreamWaitEvent)                                                                             \
  X(cuMemAlloc)                                                                                    \
  X(cuMemFree)                                                                                     \
  X(cuMemGetInfo)                                                                                  \
  X(cuMemcpyHtoDAsync)                                                                             \
  X(cuMemcpyDtoHAsync)                                                                             \
  X(cuMemcpyDtoDAsync)                                                                             \
  X(cuMemsetD8Async)                                                                               \
  X(cuModuleLoadDataEx)                                                                            \
  X(cuModuleUnload)                                                                                \
  X(cuModuleGetFunction)                                                                           \
  X(cuLaunchKernel)                                                                                \
  X(cuEventCreate)                                                                                 \
  X(cuEventDestroy)                                                                                \
  X(cuEventRecord)                                                                                 \
  X(cuEventSynchronize)                                                                            \
  X(cuEventElapsedTime)                                                                            \
  X(cuStreamBeginCapture)                                                                          \
  X(cuStreamEndCapture)                                                                            \
  X(cuGraphInstantiate)                                                                            \
  X(cuGraphLaunch)                                                                                 \
  X(cuGraphDestroy)                                                                                \
  X(cuGraphExecDestroy)

constexpr const char* kNoCuda = "no CUDA driver/device: ";

} // namespace

struct Context::Api {
  void* lib = nullptr;
#define FXC_CU_MEMBER(fn) decltype(&::fn) fn = nullptr;
  FXC_CUDA_FUNCTIONS(FXC_CU_MEMBER)
#undef FXC_CU_MEMBER
};

namespace {

// Opens libcuda and resolves every entry point; throws CudaError with kNoCuda on failure.
std::unique_ptr<Context::Api> load_api() {
  auto api = std::make_unique<Context::Api>();
  std::string tried;
  api->lib = open_library({"libcuda.so.1"}, &tried);
  if (!api->lib) throw CudaError(kNoCuda + tried);
#define FXC_CU_RESOLVE(fn)                                                                         \
  api->fn = reinterpret_cast<decltype(api->fn)>(dlsym(api->lib, FXC_CU_STR(fn)));                  \
  if (!api->fn)                                                                                    \
    throw CudaError(std::string(kNoCuda) +                                                         \
                    "libcuda.so.1 lacks " FXC_CU_STR(fn) " (driver too old)");
  FXC_CUDA_FUNCTIONS(FXC_CU_RESOLVE)
#undef FXC_CU_RESOLVE
  return api;
}

// The device ordinal named by FXC_CUDA_DEVICE, 0 when unset.
int requested_ordinal() {
  const char* s = std::getenv("FXC_CUDA_DEVICE");
  if (!s || !*s) return 0;
  int v = -1;
  const char* end = s + std::strlen(s);
  auto [p, ec] = std::from_chars(s, end, v);
  if (ec != std::errc() || p != end || v < 0)
    throw CudaError(std::string(kNoCuda) + "FXC_CUDA_DEVICE='" + s + "' is not a device ordinal");
  return v;
}

// The driver's entry points (after cuInit) and every device's context made so far, or why
// none can be made.
struct Contexts {
  std::mutex mu;
  std::shared_ptr<const Context::Api> api;
  std::string api_error; // set when the driver cannot be used at all
  bool api_tried = false;
  std::map<int, std::unique_ptr<Context>> made;
  std::map<int, std::string> errors;
};

// Never destroyed, as cuBLASLt's and cuDNN's handles: libcuda is opened after this is made, so
// at exit its own statics would be torn down before a context's destructor called into it. The
// driver releases every context when the process ends.
Contexts& contexts() {
  static Contexts& c = *new Contexts();
  return c;
}

} // namespace

std::string Context::error_text(int result) const {
  const char* name = nullptr;
  const char* text = nullptr;
  api_->cuGetErrorName(CUresult(result), &name);
  api_->cuGetErrorString(CUresult(result), &text);
  std::string s = name ? name : "CUDA error " + std::to_string(result);
  if (text) s += std::string(" (") + text + ")";
  return s;
}

void Context::check(int result, const char* call) const {
  if (result == CUDA_SUCCESS) return;
  throw CudaError(std::string(call) + " failed: " + error_text(result));
}

Context::Context(std::shared_ptr<const Api> api, int ordinal) : api_(std::move(api)) {
  const Api& a = *api_;
  int count = 0;
  check(a.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (ordinal >= count)
    throw CudaError(std::string(kNoCuda) + "device " + std::to_string(ordinal) + " requested, " +
                    std::to_string(count) + " present");
  CUdevice dev = 0;
  check(a.cuDeviceGet(&dev, ordinal), "cuDeviceGet");
  device_ = dev;
  info_.ordinal = ordinal;
  char name[256] = {};
  check(a.cuDeviceGetName(name, sizeof(name) - 1, dev), "cuDeviceGetName");
  info_.name = name;
  auto attr = [&](CUdevice_attribute at, const char* what) {
    int v = 0;
    check(a.cuDeviceGetAttribute(&v, at, dev), what);
    return v;
  };
  info_.cc_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "cuDeviceGetAttribute(cc)");
  info_.cc_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "cuDeviceGetAttribute(cc)");
  info_.multiprocessors =
      attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "cuDeviceGetAttribute(multiprocessors)");
  info_.max_threads_per_block =
      attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "cuDeviceGetAttribute(threads)");
  info_.max_shared_per_block =
      attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, "cuDeviceGetAttribute(shared)");
  // Memory clock and bus width, for --report's share of peak bandwidth: asked without failing
  // (newer drivers may stop answering), 0 when unanswered.
  if (a.cuDeviceGetAttribute(&info_.memory_clock_khz, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, dev) !=
      CUDA_SUCCESS)
    info_.memory_clock_khz = 0;
  if (a.cuDeviceGetAttribute(&info_.memory_bus_bits, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH,
                             dev) != CUDA_SUCCESS)
    info_.memory_bus_bits = 0;
  size_t total = 0;
  check(a.cuDeviceTotalMem(&total, dev), "cuDeviceTotalMem");
  info_.total_memory = int64_t(total);
  check(a.cuDriverGetVersion(&info_.driver_version), "cuDriverGetVersion");

  CUcontext ctx = nullptr;
  check(a.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  context_ = ctx;
  try {
    check(a.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    CUstream stream = nullptr;
    check(a.cuStreamCreate(&stream, CU_STREAM_DEFAULT), "cuStreamCreate");
    stream_ = stream;
  } catch (...) {
    a.cuDevicePrimaryCtxRelease(dev);
    throw;
  }
}

Context::~Context() {
  // Errors are ignored: at process exit the driver may already be shutting down.
  api_->cuCtxSetCurrent(static_cast<CUcontext>(context_));
  if (stream_) api_->cuStreamDestroy(static_cast<CUstream>(stream_));
  api_->cuDevicePrimaryCtxRelease(CUdevice(device_));
}

Context& Context::get() {
  return get(-1);
}

Context& Context::get(int ordinal) {
  Contexts& cs = contexts();
  Context* ctx = nullptr;
  {
    std::lock_guard<std::mutex> lock(cs.mu);
    if (!cs.api_tried) {
      cs.api_tried = true;
      try {
        std::unique_ptr<Api> api = load_api();
        CUresult init = api->cuInit(0);
        if (init != CUDA_SUCCESS) {
          const char* name = nullptr;
          api->cuGetErrorName(init, &name);
          throw CudaError(std::string(kNoCuda) + "cuInit failed: " +
                          (name ? name : "CUDA error " + std::to_string(int(init))));
        }
        cs.api = std::move(api);
      } catch (const CudaError& e) {
        cs.api_error = e.what();
      }
    }
    if (!cs.api) throw CudaError(cs.api_error);
    if (ordinal < 0) ordinal = requested_ordinal();
    if (auto e = cs.errors.find(ordinal); e != cs.errors.end()) throw CudaError(e->second);
    auto it = cs.made.find(ordinal);
    if (it == cs.made.end()) {
      try {
        it = cs.made.emplace(ordinal, std::unique_ptr<Context>(new Context(cs.api, ordinal))).first;
      } catch (const CudaError& e) {
        std::string msg = e.what();
        msg = msg.rfind(kNoCuda, 0) == 0 ? msg : kNoCuda + msg;
        cs.errors[ordinal] = msg;
        throw CudaError(msg);
      }
    }
    ctx = it->second.get();
  }
  ctx->make_current();
  return *ctx;
}

std::string Context::unavailable_reason() {
  try {
    get();
    return "";
  } catch (const CudaError& e) {
    return e.what();
  }
}

void Context::make_current() const {
  check(api_->cuCtxSetCurrent(static_cast<CUcontext>(context_)), "cuCtxSetCurrent");
}

DevicePtr Context::mem_alloc(size_t bytes) {
  assert(bytes > 0 && "mem_alloc of zero bytes");
  make_current();
  CUdeviceptr p = 0;
  CUresult r = api_->cuMemAlloc(&p, bytes);
  if (r == CUDA_ERROR_OUT_OF_MEMORY)
    throw CudaError("cuMemAlloc of " + std::to_string(bytes) + " bytes failed: out of memory on " +
                    info_.name);
  check(r, "cuMemAlloc");
  return p;
}

void Context::mem_free(DevicePtr p) {
  make_current();
  check(api_->cuMemFree(CUdeviceptr(p)), "cuMemFree");
}

std::pair<size_t, size_t> Context::mem_info() const {
  make_current();
  size_t free_bytes = 0, total = 0;
  check(api_->cuMemGetInfo(&free_bytes, &total), "cuMemGetInfo");
  return {free_bytes, total};
}

void Context::copy_to_device(DevicePtr dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  make_current();
  CUstream s = static_cast<CUstream>(stream_);
  check(api_->cuMemcpyHtoDAsync(CUdeviceptr(dst), src, bytes, s), "cuMemcpyHtoDAsync");
  check(api_->cuStreamSynchronize(s), "cuStreamSynchronize (after a copy to the device)");
}

void Context::copy_to_host(void* dst, DevicePtr src, size_t bytes) {
  if (bytes == 0) return;
  make_current();
  CUstream s = static_cast<CUstream>(stream_);
  check(api_->cuMemcpyDtoHAsync(dst, CUdeviceptr(src), bytes, s), "cuMemcpyDtoHAsync");
  check(api_->cuStreamSynchronize(s), "cuStreamSynchronize (after a copy to the host)");
}

void Context::copy_device(DevicePtr dst, DevicePtr src, size_t bytes) {
  if (bytes == 0) return;
  make_current();
  check(api_->cuMemcpyDtoDAsync(CUdeviceptr(dst), CUdeviceptr(src), bytes,
                                static_cast<CUstream>(stream_)),
        "cuMemcpyDtoDAsync");
}

void Context::fill_bytes(DevicePtr dst, uint8_t value, size_t bytes) {
  if (bytes == 0) return;
  make_current();
  check(api_->cuMemsetD8Async(CUdeviceptr(dst), value, bytes, static_cast<CUstream>(stream_)),
        "cuMemsetD8Async");
}

void Context::synchronize() {
  make_current();
  check(api_->cuStreamSynchronize(static_cast<CUstream>(stream_)), "cuStreamSynchronize");
}

namespace {

// Makes `waiter` wait for the work queued so far on `signaller`: an event recorded on one and
// waited for on the other. The event is destroyed at once; the driver keeps it until the wait
// is done.
void join_streams(const Context& ctx, const Context::Api& api, CUstream signaller,
                  CUstream waiter) {
  ctx.make_current();
  CUevent e = nullptr;
  ctx.check(api.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  CUresult r = api.cuEventRecord(e, signaller);
  if (r == CUDA_SUCCESS) r = api.cuStreamWaitEvent(waiter, e, 0);
  api.cuEventDestroy(e);
  ctx.check(r, "ordering with the caller's stream (cuEventRecord, cuStreamWaitEvent)");
}

} // namespace

void Context::stream_wait_for(void* other) {
  join_streams(*this, *api_, static_cast<CUstream>(other), static_cast<CUstream>(stream_));
}

void Context::stream_signal(void* other) {
  join_streams(*this, *api_, static_cast<CUstream>(stream_), static_cast<CUstream>(other));
}

std::unique_ptr<Module> Context::load_module(const std::string& image, const std::string& name) {
  make_current();
  static const char kElf[4] = {0x7f, 'E', 'L', 'F'};
  static const char kFatbin[4] = {0x50, char(0xed), 0x55, char(0xba)};
  bool elf = image.size() >= 4 && std::memcmp(image.data(), kElf, 4) == 0;
  bool fatbin = image.size() >= 4 && std::memcmp(image.data(), kFatbin, 4) == 0;
  if (!elf && !fatbin && image.find('\0') != std::string::npos)
    throw CudaError("module '" + name + "': PTX text contains a NUL byte");
  if (image.empty()) throw CudaError("module '" + name + "': empty image");

  std::vector<char> info(16384, '\0'), error(16384, '\0');
  CUjit_option options[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_LOG_VERBOSE};
  void* values[] = {info.data(), reinterpret_cast<void*>(uintptr_t(info.size() - 1)), error.data(),
                    reinterpret_cast<void*>(uintptr_t(error.size() - 1)),
                    reinterpret_cast<void*>(uintptr_t(1))};
  CUmodule mod = nullptr;
  CUresult r = api_->cuModuleLoadDataEx(&mod, image.c_str(), 5, options, values);
  std::string info_log(info.data());
  if (r != CUDA_SUCCESS) {
    std::string log(error.data());
    std::string msg = "loading module '" + name + "' failed: " + error_text(r);
    if (!log.empty()) msg += "\nJIT log:\n" + log;
    throw CudaError(msg);
  }
  return std::unique_ptr<Module>(new Module(*this, mod, name, std::move(info_log)));
}

void Context::launch(void* function, Dim3 grid, Dim3 block, unsigned shared_bytes, void** args,
                     const std::string& what) {
  assert(function && "launch of a null function");
  CUresult r = api_->cuLaunchKernel(static_cast<CUfunction>(function), grid.x, grid.y, grid.z,
                                    block.x, block.y, block.z, shared_bytes,
                                    static_cast<CUstream>(stream_), args, nullptr);
  if (r != CUDA_SUCCESS)
    throw CudaError("launching '" + what + "' (grid " + std::to_string(grid.x) + "x" +
                    std::to_string(grid.y) + "x" + std::to_string(grid.z) + ", block " +
                    std::to_string(block.x) + "x" + std::to_string(block.y) + "x" +
                    std::to_string(block.z) + ", " + std::to_string(shared_bytes) +
                    " shared bytes) failed: " + error_text(r));
}

std::unique_ptr<Event> Context::create_event() {
  CUevent e = nullptr;
  check(api_->cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
  return std::unique_ptr<Event>(new Event(*this, e));
}

void Context::begin_capture() {
  make_current();
  check(api_->cuStreamBeginCapture(static_cast<CUstream>(stream_),
                                   CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
        "cuStreamBeginCapture");
}

void* Context::end_capture() {
  CUgraph g = nullptr;
  check(api_->cuStreamEndCapture(static_cast<CUstream>(stream_), &g), "cuStreamEndCapture");
  return g;
}

void* Context::instantiate_graph(void* graph) {
  CUgraphExec e = nullptr;
  check(api_->cuGraphInstantiate(&e, static_cast<CUgraph>(graph), 0), "cuGraphInstantiate");
  return e;
}

void Context::launch_graph(void* exec) {
  check(api_->cuGraphLaunch(static_cast<CUgraphExec>(exec), static_cast<CUstream>(stream_)),
        "cuGraphLaunch");
}

void Context::destroy_graph(void* graph, void* exec) {
  if (exec) api_->cuGraphExecDestroy(static_cast<CUgraphExec>(exec));
  if (graph) api_->cuGraphDestroy(static_cast<CUgraph>(graph));
}

Module::~Module() {
  ctx_.api_->cuCtxSetCurrent(static_cast<CUcontext>(ctx_.context_));
  ctx_.api_->cuModuleUnload(static_cast<CUmodule>(handle_));
}

void* Module::function(const std::string& name) const {
  CUfunction f = nullptr;
  CUresult r = ctx_.api_->cuModuleGetFunction(&f, static_cast<CUmodule>(handle_), name.c_str());
  if (r == CUDA_ERROR_NOT_FOUND)
    throw CudaError("module '" + name_ + "' has no kernel '" + name + "'");
  ctx_.check(r, "cuModuleGetFunction");
  return f;
}

Event::~Event() {
  ctx_.api_->cuEventDestroy(static_cast<CUevent>(handle_));
}

void Event::record() {
  ctx_.check(
      ctx_.api_->cuEventRecord(static_cast<CUevent>(handle_), static_cast<CUstream>(ctx_.stream_)),
      "cuEventRecord");
}

float Event::elapsed_ms_since(const Event& start) const {
  ctx_.check(ctx_.api_->cuEventSynchronize(static_cast<CUevent>(handle_)), "cuEventSynchronize");
  float ms = 0;
  ctx_.check(ctx_.api_->cuEventElapsedTime(&ms, static_cast<CUevent>(start.handle_),
                                           static_cast<CUevent>(handle_)),
             "cuEventElapsedTime");
  return ms;
}

#else // !FXC_HAVE_CUDA_HEADERS: this build cannot talk to a driver at all.

namespace {
constexpr const char* kNoHeaders =
    "no CUDA driver/device: fxc was built without the CUDA headers (cuda.h)";
} // namespace

struct Context::Api {};

Context& Context::get() {
  throw CudaError(kNoHeaders);
}
Context& Context::get(int) {
  throw CudaError(kNoHeaders);
}
std::string Context::unavailable_reason() {
  return kNoHeaders;
}
// No Context can exist in this build, so none of these is reachable; each still fails loudly.
Context::~Context() = default;
void Context::make_current() const {
  throw CudaError(kNoHeaders);
}
DevicePtr Context::mem_alloc(size_t) {
  throw CudaError(kNoHeaders);
}
void Context::mem_free(DevicePtr) {
  throw CudaError(kNoHeaders);
}
std::pair<size_t, size_t> Context::mem_info() const {
  throw CudaError(kNoHeaders);
}
void Context::copy_to_device(DevicePtr, const void*, size_t) {
  throw CudaError(kNoHeaders);
}
void Context::copy_to_host(void*, DevicePtr, size_t) {
  throw CudaError(kNoHeaders);
}
void Context::copy_device(DevicePtr, DevicePtr, size_t) {
  throw CudaError(kNoHeaders);
}
void Context::fill_bytes(DevicePtr, uint8_t, size_t) {
  throw CudaError(kNoHeaders);
}
void Context::synchronize() {
  throw CudaError(kNoHeaders);
}
void Context::stream_wait_for(void*) {
  throw CudaError(kNoHeaders);
}
void Context::stream_signal(void*) {
  throw CudaError(kNoHeaders);
}
std::unique_ptr<Module> Context::load_module(const std::string&, const std::string&) {
  throw CudaError(kNoHeaders);
}
void Context::launch(void*, Dim3, Dim3, unsigned, void**, const std::string&) {
  throw CudaError(kNoHeaders);
}
std::unique_ptr<Event> Context::create_event() {
  throw CudaError(kNoHeaders);
}
void Context::begin_capture() {
  throw CudaError(kNoHeaders);
}
void* Context::end_capture() {
  throw CudaError(kNoHeaders);
}
void* Context::instantiate_graph(void*) {
  throw CudaError(kNoHeaders);
}
void Context::launch_graph(void*) {
  throw CudaError(kNoHeaders);
}
void Context::destroy_graph(void*, void*) {}
void Context::check(int result, const char* call) const {
  if (result != 0) throw CudaError(std::string(call) + " failed: " + error_text(result));
}
std::string Context::error_text(int result) const {
  return "CUDA error " + std::to_string(result);
}
Module::~Module() = default;
void* Module::function(const std::string&) const {
  throw CudaError(kNoHeaders);
}
Event::~Event() = default;
void Event::record() {
  throw CudaError(kNoHeaders);
}
float Event::elapsed_ms_since(const Event&) const {
  throw CudaError(kNoHeaders);
}

#endif

} // namespace fxc::cuda
