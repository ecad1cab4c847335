// Custom-op plugins at run time: loading a plugin library, and running its ops' kernels.
#pragma once

#include "frontend/custom_ops.h"
#include "runtime/tensor.h"

#include <string>
#include <vector>

namespace fxc {

struct KernelCall; // runtime/kernels.h

/// Loads the plugin library at `path` (dlopen), checks it, and registers its ops
/// (frontend/custom_ops.h) — all of them or, on any failure, none. Loading the same file again
/// does nothing. Throws fxc::Error naming `path`: the file is missing or not a loadable library,
/// it lacks the fxc_plugin_init entry point, init fails, a descriptor has another API version,
/// a bad name or schema, or an op is already registered.
void load_plugin(const std::string& path);

/// Runs `op`'s CPU kernel on the call's operands (made contiguous): the shape function sizes the
/// outputs. In float64 mode floating results are returned as f64. Throws TensorError with the
/// plugin's message.
std::vector<Tensor> run_custom_op_cpu(const CustomOp& op, const KernelCall& call);

/// The CUDA path of a fallback extern whose one-node graph `g` calls a custom op: when the op has
/// a CUDA kernel, runs it on device buffers, input_ptrs[k] holding g.inputs[k] and
/// output_ptrs[k] g.outputs[k] (contiguous, in g's dtypes and sizes), queued on `stream`, and
/// returns true. Returns false when the caller must run the host path instead: `g` is not one
/// custom-op call, the op has no CUDA kernel, or the kernel answers FXC_PLUGIN_USE_CPU. Throws
/// TensorError with the plugin's message when the kernel fails.
bool run_custom_op_cuda(const Graph& g, const std::vector<uint64_t>& input_ptrs,
                        const std::vector<uint64_t>& output_ptrs, void* stream);

} // namespace fxc
