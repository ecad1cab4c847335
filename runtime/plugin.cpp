// Custom-op plugins at run time: dlopen, the registration callback, and the CPU kernel call.
#include "runtime/plugin.h"

#include "frontend/diag.h"
#include "runtime/kernels.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <stdexcept>

namespace fxc {

namespace fs = std::filesystem;

namespace {

/// What one fxc_plugin_init call registered so far.
struct Pending {
  std::string library;
  std::vector<CustomOp> ops;
  std::string error; ///< the first failed registration
};

void set_error(fxc_plugin_registry* r, const std::string& msg) {
  std::snprintf(r->error, sizeof r->error, "%s", msg.c_str());
}

int register_op(fxc_plugin_registry* r, const fxc_op_desc* desc) {
  if (!r || !r->impl) return 1;
  auto* p = static_cast<Pending*>(r->impl);
  std::string err;
  CustomOp op;
  if (!desc)
    err = "register_op was given no descriptor";
  else if (!make_custom_op(*desc, p->library, &op, &err))
    ;
  else {
    for (const CustomOp& o : p->ops)
      if (o.target == op.target) err = "op '" + op.name + "' is registered twice";
  }
  if (!err.empty()) {
    if (p->error.empty()) p->error = err;
    set_error(r, err);
    return 1;
  }
  p->ops.push_back(std::move(op));
  return 0;
}

std::mutex& loaded_mutex() {
  static std::mutex mu;
  return mu;
}

std::set<std::string>& loaded_files() {
  static std::set<std::string> files;
  return files;
}

} // namespace

void load_plugin(const std::string& path) {
  std::error_code ec;
  if (path.empty()) throw Error("fxc", "--plugin needs a file name");
  if (!fs::exists(path, ec)) throw Error(path, "cannot load plugin: no such file");
  if (!fs::is_regular_file(path, ec)) throw Error(path, "cannot load plugin: not a regular file");
  const std::string canon = fs::canonical(path, ec).string();
  std::lock_guard<std::mutex> lock(loaded_mutex());
  if (loaded_files().count(canon)) return;
  // A name without '/' would make dlopen search the library path instead of this file.
  const std::string open_path = path.find('/') == std::string::npos ? "./" + path : path;
  void* handle = dlopen(open_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    throw Error(path, std::string("cannot load plugin: ") + (why ? why : "dlopen failed"));
  }
  auto init = reinterpret_cast<fxc_plugin_init_fn>(dlsym(handle, FXC_PLUGIN_INIT_SYMBOL));
  if (!init) {
    dlclose(handle);
    throw Error(path, std::string("not an fxc plugin: it does not export '") +
                          FXC_PLUGIN_INIT_SYMBOL + "' (see include/fxc/plugin.h)");
  }
  Pending pending;
  pending.library = path;
  fxc_plugin_registry r;
  std::memset(&r, 0, sizeof r);
  r.api_version = FXC_PLUGIN_API_VERSION;
  r.register_op = register_op;
  r.impl = &pending;
  // The library stays loaded even when it fails: its initialiser may have left state behind.
  const int rc = init(&r);
  r.error[sizeof r.error - 1] = 0;
  if (!pending.error.empty()) throw Error(path, "plugin registration failed: " + pending.error);
  if (rc != 0)
    throw Error(path, "plugin initialisation failed (" + std::string(FXC_PLUGIN_INIT_SYMBOL) +
                          " returned " + std::to_string(rc) + ")" +
                          (r.error[0] ? std::string(": ") + r.error : std::string()));
  if (pending.ops.empty()) throw Error(path, "the plugin registered no ops");
  std::string err;
  if (!register_custom_ops(std::move(pending.ops), &err))
    throw Error(path, "plugin registration failed: " + err);
  loaded_files().insert(canon);
}

std::vector<Tensor> run_custom_op_cpu(const CustomOp& op, const KernelCall& call) {
  std::vector<Tensor> ins;
  for (size_t i = 0; i < op.schema.args.size(); ++i) {
    if (op.schema.args[i].type != ArgType::Tensor) continue;
    if (i >= call.tensors.size() || !call.tensors[i].defined())
      throw TensorError("argument '" + op.schema.args[i].name + "' has no tensor");
    ins.push_back(call.tensors[i].contiguous());
  }
  std::vector<const TensorMeta*> metas;
  for (const Tensor& t : ins) metas.push_back(&t.meta());
  fxc_op_args args;
  std::vector<TensorMeta> out_metas;
  try {
    args = custom_op_args(op, call.node.args, metas);
    out_metas = custom_op_output_metas(op, args, Device{});
  } catch (const std::invalid_argument& e) {
    throw TensorError(e.what());
  }
  std::vector<Tensor> outs;
  for (const TensorMeta& m : out_metas) outs.push_back(Tensor::empty(m.dtype, m.sizes));
  std::vector<const void*> in_ptrs;
  for (const Tensor& t : ins) in_ptrs.push_back(t.raw_data());
  std::vector<void*> out_ptrs;
  for (const Tensor& t : outs) out_ptrs.push_back(t.raw_data());
  char err[FXC_PLUGIN_ERROR_SIZE] = {0};
  if (op.cpu(&args, in_ptrs.data(), out_ptrs.data(), err) != 0) {
    err[FXC_PLUGIN_ERROR_SIZE - 1] = 0;
    throw TensorError(op.name + " CPU kernel (" + op.library +
                      "): " + (err[0] ? err : "failed without a message"));
  }
  if (call.float64)
    for (Tensor& t : outs)
      if (is_floating(t.dtype()) && t.dtype() != DType::F64) t = t.to(DType::F64);
  return outs;
}

bool run_custom_op_cuda(const Graph& g, const std::vector<uint64_t>& input_ptrs,
                        const std::vector<uint64_t>& output_ptrs, void* stream) {
  if (g.nodes.size() != 1) return false;
  const Node& n = g.nodes[0];
  const CustomOp* op = find_custom_op(n.target);
  if (!op || !op->cuda) return false;
  if (input_ptrs.size() != g.inputs.size() || output_ptrs.size() != n.outputs.size() ||
      g.outputs != n.outputs)
    return false;
  // Tensor arguments in schema order -> their device pointers.
  std::vector<const TensorMeta*> metas;
  std::vector<const void*> in_ptrs;
  for (size_t i = 0; i < op->schema.args.size() && i < n.args.size(); ++i) {
    if (op->schema.args[i].type != ArgType::Tensor) continue;
    const Arg& a = n.args[i];
    size_t k = 0;
    while (k < g.inputs.size() && g.inputs[k].value != a.tensor) ++k;
    if (a.kind != Arg::Kind::Tensor || k == g.inputs.size()) return false;
    metas.push_back(&g.values[size_t(a.tensor)].meta);
    in_ptrs.push_back(reinterpret_cast<const void*>(uintptr_t(input_ptrs[k])));
  }
  fxc_op_args args;
  std::vector<TensorMeta> out_metas;
  try {
    args = custom_op_args(*op, n.args, metas);
    out_metas = custom_op_output_metas(*op, args, Device{Device::CUDA, -1});
  } catch (const std::invalid_argument& e) {
    throw TensorError(e.what());
  }
  std::vector<void*> out_ptrs;
  for (size_t k = 0; k < out_metas.size(); ++k) {
    const TensorMeta& want = g.values[size_t(n.outputs[k])].meta;
    if (out_metas[k].dtype != want.dtype || out_metas[k].sizes != want.sizes)
      throw TensorError(op->name + " shape function: output " + std::to_string(k) + " is " +
                        format_meta(out_metas[k]) + " but the plan expects " + format_meta(want));
    out_ptrs.push_back(reinterpret_cast<void*>(uintptr_t(output_ptrs[k])));
  }
  char err[FXC_PLUGIN_ERROR_SIZE] = {0};
  const int rc = op->cuda(&args, in_ptrs.data(), out_ptrs.data(), stream, err);
  if (rc == FXC_PLUGIN_USE_CPU) return false;
  if (rc != 0) {
    err[FXC_PLUGIN_ERROR_SIZE - 1] = 0;
    throw TensorError(op->name + " CUDA kernel (" + op->library +
                      "): " + (err[0] ? err : "failed without a message"));
  }
  return true;
}

} // namespace fxc
