// nvJitLink via dlopen: one PTX input, linked into a cubin, with its logs in errors.
#include "runtime/nvjitlink.h"

#include <dlfcn.h>
#include <memory>
#include <vector>

#if defined(FXC_HAVE_CUDA_HEADERS) && __has_include(<nvJitLink.h>)
#define FXC_HAVE_NVJITLINK_HEADERS 1
#include <nvJitLink.h>
#endif

namespace fxc::cuda {

namespace {

constexpr const char* kNoLink = "nvJitLink: not available: ";

// "sm_" followed by digits and an optional 'a'.
bool valid_arch(const std::string& arch) {
  if (arch.rfind("sm_", 0) != 0 || arch.size() < 4 || arch.size() > 8) return false;
  size_t end = arch.back() == 'a' ? arch.size() - 1 : arch.size();
  for (size_t i = 3; i < end; ++i)
    if (arch[i] < '0' || arch[i] > '9') return false;
  return end > 3;
}

} // namespace

#if defined(FXC_HAVE_NVJITLINK_HEADERS)

namespace {

#define FXC_LINK_FUNCTIONS(X)                                                                      \
  X(nvJitLinkCreate)                                                                               \
  X(nvJitLinkDestroy)                                                                              \
  X(nvJitLinkAddData)                                                                              \
  X(nvJitLinkComplete)                                                                             \
  X(nvJitLinkGetLinkedCubinSize)                                                                   \
  X(nvJitLinkGetLinkedCubin)                                                                       \
  X(nvJitLinkGetErrorLogSize)                                                                      \
  X(nvJitLinkGetErrorLog)

struct LinkApi {
#define FXC_LINK_MEMBER(fn) decltype(&::fn) fn = nullptr;
  FXC_LINK_FUNCTIONS(FXC_LINK_MEMBER)
#undef FXC_LINK_MEMBER
};

// The resolved library, or the reason it is missing; opened once.
struct LinkLoad {
  std::unique_ptr<LinkApi> api;
  std::string error;
};

const LinkLoad& load() {
  static LinkLoad l = [] {
    LinkLoad r;
    std::string tried;
    void* lib =
        open_library({"libnvJitLink.so.13", "/usr/local/cuda/lib64/libnvJitLink.so.13"}, &tried);
    if (!lib) {
      r.error = kNoLink + tried;
      return r;
    }
    auto api = std::make_unique<LinkApi>();
#define FXC_LINK_RESOLVE(fn)                                                                       \
  api->fn = reinterpret_cast<decltype(api->fn)>(dlsym(lib, #fn));                                  \
  if (!api->fn) {                                                                                  \
    r.error = std::string(kNoLink) + "the library lacks " #fn;                                     \
    return r;                                                                                      \
  }
    FXC_LINK_FUNCTIONS(FXC_LINK_RESOLVE)
#undef FXC_LINK_RESOLVE
    r.api = std::move(api);
    return r;
  }();
  return l;
}

} // namespace

std::string nvjitlink_unavailable_reason() {
  return load().error;
}

std::string ptx_to_cubin(const std::string& ptx, const std::string& arch, const std::string& name) {
  if (!valid_arch(arch))
    throw CudaError("nvJitLink: '" + arch + "' is not a CUDA architecture (sm_90, sm_90a, ...)");
  if (ptx.find('\0') != std::string::npos)
    throw CudaError("nvJitLink: '" + name + "': PTX text contains a NUL byte");
  const LinkLoad& l = load();
  if (!l.api) throw CudaError(l.error);
  const LinkApi& L = *l.api;
  std::string arch_opt = "-arch=" + arch;
  const char* options[] = {arch_opt.c_str(), "-O3"};
  nvJitLinkHandle h = nullptr;
  nvJitLinkResult r = L.nvJitLinkCreate(&h, 2, options);
  if (r != NVJITLINK_SUCCESS)
    throw CudaError("nvJitLink: nvJitLinkCreate(" + arch_opt + ") failed with code " +
                    std::to_string(int(r)));
  struct Destroy {
    const LinkApi& L;
    nvJitLinkHandle& h;
    ~Destroy() { L.nvJitLinkDestroy(&h); }
  } destroy{L, h};
  auto fail = [&](const char* call, nvJitLinkResult code) {
    std::string msg = "nvJitLink: " + std::string(call) + " of '" + name + "' failed with code " +
                      std::to_string(int(code));
    size_t size = 0;
    if (L.nvJitLinkGetErrorLogSize(h, &size) == NVJITLINK_SUCCESS && size > 1) {
      std::vector<char> log(size + 1, '\0');
      if (L.nvJitLinkGetErrorLog(h, log.data()) == NVJITLINK_SUCCESS)
        msg += "\nlog:\n" + std::string(log.data());
    }
    throw CudaError(msg);
  };
  // The PTX goes in with its terminating NUL, as nvJitLink reads it as text; PTX is compiled
  // here already, so a bad one fails in nvJitLinkAddData (NVJITLINK_ERROR_PTX_COMPILE, 4).
  r = L.nvJitLinkAddData(h, NVJITLINK_INPUT_PTX, ptx.c_str(), ptx.size() + 1, name.c_str());
  if (r != NVJITLINK_SUCCESS) fail("nvJitLinkAddData", r);
  r = L.nvJitLinkComplete(h);
  if (r != NVJITLINK_SUCCESS) fail("nvJitLinkComplete", r);
  size_t size = 0;
  r = L.nvJitLinkGetLinkedCubinSize(h, &size);
  if (r != NVJITLINK_SUCCESS) fail("nvJitLinkGetLinkedCubinSize", r);
  std::string cubin(size, '\0');
  r = L.nvJitLinkGetLinkedCubin(h, cubin.data());
  if (r != NVJITLINK_SUCCESS) fail("nvJitLinkGetLinkedCubin", r);
  return cubin;
}

#else // no nvJitLink.h at build time

std::string nvjitlink_unavailable_reason() {
  return std::string(kNoLink) + "fxc was built without nvJitLink.h";
}

std::string ptx_to_cubin(const std::string&, const std::string& arch, const std::string&) {
  if (!valid_arch(arch))
    throw CudaError("nvJitLink: '" + arch + "' is not a CUDA architecture (sm_90, sm_90a, ...)");
  throw CudaError(nvjitlink_unavailable_reason());
}

#endif

} // namespace fxc::cuda
