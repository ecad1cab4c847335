// The CUDA driver, opened with dlopen: each device's primary context with one stream on it,
// modules, launches.
//
// libcuda.so.1 is resolved at run time (no link-time dependency), so a binary built with this file
// runs on machines with no GPU and reports "no CUDA driver/device: <why>" when asked for CUDA.
// Every driver call is checked; a failure throws CudaError naming the call and the driver's
// error name and text. This header exposes no CUDA types: device pointers are integers and
// handles are opaque, so code that includes it needs no CUDA headers.
//
// Ordering: all work on a device (copies, launches, cuBLASLt, cuDNN) goes onto its context's one
// stream, so it runs in the order it was issued; copies to and from the host wait for their
// completion. A caller's stream is ordered with it by events (stream_wait_for, stream_signal).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace fxc::cuda {

/// A failed CUDA (or cuBLASLt, cuDNN) call, or CUDA not being usable at all.
class CudaError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// A device address (CUdeviceptr). 0 is never a valid allocation.
using DevicePtr = uint64_t;

/// What the driver reports about the device in use.
struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0; ///< compute capability, e.g. 9.0 on an H200
  int multiprocessors = 0;
  int64_t total_memory = 0; ///< bytes
  int driver_version = 0;   ///< e.g. 13000 for CUDA 13.0
  int max_threads_per_block = 0;
  int max_shared_per_block = 0; ///< bytes, without opting in to more
  int memory_clock_khz = 0;     ///< peak memory clock (0: the driver did not say)
  int memory_bus_bits = 0;      ///< global memory bus width (0: the driver did not say)

  /// Peak DRAM bandwidth in GB/s (two transfers per clock over the bus), 0 when unknown.
  double peak_gbps() const { return 2.0 * memory_clock_khz * 1e3 * (memory_bus_bits / 8.0) / 1e9; }

  /// "sm_90" for compute capability 9.0.
  std::string arch() const { return "sm_" + std::to_string(cc_major * 10 + cc_minor); }
};

/// Grid or block extent of a launch.
struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

class Context;

/// A loaded module (PTX JIT-compiled by the driver, or a cubin/fatbin image). Unloaded on
/// destruction; functions taken from it are valid while it lives.
class Module {
public:
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  ~Module();

  /// The kernel called `name` (its PTX .entry name). Throws CudaError naming the module when
  /// there is none.
  void* function(const std::string& name) const;
  /// The JIT's info log (ptxas's resource report for PTX); empty for cubins.
  const std::string& info_log() const { return info_log_; }
  const std::string& name() const { return name_; }

private:
  friend class Context;
  Module(Context& ctx, void* handle, std::string name, std::string info_log)
      : ctx_(ctx), handle_(handle), name_(std::move(name)), info_log_(std::move(info_log)) {}
  Context& ctx_;
  void* handle_;
  std::string name_;
  std::string info_log_;
};

/// A CUDA event on the context's stream, for timing device work.
class Event {
public:
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event();
  /// Records the event at the current end of the stream.
  void record();
  /// Milliseconds between `start` and this event, both recorded; waits for this event.
  float elapsed_ms_since(const Event& start) const;

private:
  friend class Context;
  Event(Context& ctx, void* handle) : ctx_(ctx), handle_(handle) {}
  Context& ctx_;
  void* handle_;
};

/// A CUDA context: the primary context of one device and one stream on it. There is one per
/// device, made on first use and kept for the life of the process.
class Context {
public:
  /// The context of the default device: `FXC_CUDA_DEVICE` (default 0). Throws CudaError("no
  /// CUDA driver/device: <why>") when libcuda cannot be opened, cuInit fails or there is no such
  /// device.
  static Context& get();
  /// The context of device `ordinal` (-1: the default device), as get() does.
  static Context& get(int ordinal);
  /// Empty when get() succeeds, else the message get() throws. Never throws.
  static std::string unavailable_reason();

  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ~Context();
  /// The resolved driver entry points (defined in cuda_driver.cpp).
  struct Api;

  const DeviceInfo& info() const { return info_; }
  int ordinal() const { return info_.ordinal; }
  /// The stream every operation here is issued on (a CUstream), for cuBLASLt and cuDNN.
  void* stream() const { return stream_; }
  /// Work queued on this context's stream from now on waits for the work queued so far on
  /// `other`, a stream of this device (a CUstream or cudaStream_t; null: the legacy default
  /// stream). Neither side waits on the host.
  void stream_wait_for(void* other);
  /// Work queued on `other` from now on waits for the work queued so far on this context's
  /// stream.
  void stream_signal(void* other);
  /// Makes the context current on the calling thread (each entry point does this itself).
  void make_current() const;

  /// Device memory straight from the driver (cuMemAlloc); see cuda_alloc.h for the cache.
  /// `bytes` of 0 is refused (assert); running out of memory throws CudaError.
  DevicePtr mem_alloc(size_t bytes);
  void mem_free(DevicePtr p);
  /// Free and total device memory in bytes.
  std::pair<size_t, size_t> mem_info() const;

  /// Copies between host and device through the stream; both wait until the copy is done.
  void copy_to_device(DevicePtr dst, const void* src, size_t bytes);
  void copy_to_host(void* dst, DevicePtr src, size_t bytes);
  /// Device-to-device copy and byte fill, queued on the stream.
  void copy_device(DevicePtr dst, DevicePtr src, size_t bytes);
  void fill_bytes(DevicePtr dst, uint8_t value, size_t bytes);
  /// Waits for everything queued; a kernel's asynchronous fault surfaces here as CudaError.
  void synchronize();

  /// Loads PTX text (JIT-compiled for this device), or a cubin/fatbin image when `image` starts
  /// with the ELF or fatbin magic. On failure the CudaError holds the JIT's error log. `name`
  /// is used in messages only.
  std::unique_ptr<Module> load_module(const std::string& image, const std::string& name);
  /// Launches `function` on the stream. `args` holds one pointer per kernel parameter, pointing
  /// at the parameter's value. A refused launch throws CudaError naming `what`.
  void launch(void* function, Dim3 grid, Dim3 block, unsigned shared_bytes, void** args,
              const std::string& what);
  /// launch() with the kernel's parameters passed by value; each must have the type (size) of
  /// its PTX parameter: DevicePtr for pointers, int32_t for .u32/.s32, and so on.
  template <class... Params>
  void launch_kernel(void* function, Dim3 grid, Dim3 block, unsigned shared_bytes,
                     const std::string& what, Params... params) {
    void* args[] = {static_cast<void*>(&params)..., nullptr};
    launch(function, grid, block, shared_bytes, args, what);
  }
  std::unique_ptr<Event> create_event();

  /// CUDA graphs: begin_capture() starts recording the work queued on the stream (thread-local
  /// capture mode) instead of running it; end_capture() stops and returns the graph (a CUgraph).
  /// instantiate_graph() makes it launchable (a CUgraphExec); launch_graph() queues one replay
  /// on the stream. destroy_graph() releases either or both (null is ignored; never throws).
  void begin_capture();
  void* end_capture();
  void* instantiate_graph(void* graph);
  void launch_graph(void* exec);
  void destroy_graph(void* graph, void* exec);

  /// Throws CudaError("<call> failed: <NAME> (<text>)") when `result` is not CUDA_SUCCESS.
  void check(int result, const char* call) const;
  /// The driver's name and text for a CUresult, e.g. "CUDA_ERROR_INVALID_VALUE (invalid argument)".
  std::string error_text(int result) const;

private:
  friend class Module;
  friend class Event;
  Context(std::shared_ptr<const Api> api, int ordinal);
  std::shared_ptr<const Api> api_;
  int device_ = 0;
  void* context_ = nullptr;
  void* stream_ = nullptr;
  DeviceInfo info_;
};

/// Opens the first library among `names` that dlopen finds (through LD_LIBRARY_PATH, the
/// loader cache and, for names with a '/', the path itself). Returns nullptr when none loads;
/// `tried` then lists each name with dlerror's reason. Shared by the cuBLASLt and cuDNN loaders.
void* open_library(const std::vector<std::string>& names, std::string* tried);

} // namespace fxc::cuda
