// Custom ops registered by plugins (include/fxc/plugin.h): their schemas, shape functions and
// kernels, looked up by normalised target ("mylib.scaled_softplus.default").
//
// find_schema falls back to this registry, so importers, the verifier, meta functions and the
// reference interpreter treat a registered custom op like an ATen op. Ops are never removed;
// pointers returned here stay valid for the life of the process. Thread-safe.
#pragma once

#include "frontend/graph.h"
#include "frontend/schema.h"
#include "fxc/plugin.h"

#include <string>
#include <string_view>
#include <vector>

namespace fxc {

struct CustomOp {
  std::string name;    ///< "mylib::scaled_softplus"
  std::string target;  ///< "mylib.scaled_softplus.default"
  std::string library; ///< the plugin file it came from (for messages)
  OpSchema schema;     ///< schema.target == target
  fxc_shape_fn shape = nullptr;
  fxc_cpu_kernel_fn cpu = nullptr;
  fxc_cuda_kernel_fn cuda = nullptr; ///< may be null
};

/// Checks `desc` (version, name, schema, functions) and returns the op it describes, or sets
/// *error ("op 'mylib::f': schema: ...") and returns false. Does not register it.
bool make_custom_op(const fxc_op_desc& desc, const std::string& library, CustomOp* out,
                    std::string* error);

/// Registers `ops` all together, or none of them when one is already registered (by this or
/// an earlier call); then sets *error naming the op and the library that registered it first.
bool register_custom_ops(std::vector<CustomOp> ops, std::string* error);

/// The registered op of a normalised target, or nullptr.
const CustomOp* find_custom_op(std::string_view target);

/// Every registered op, sorted by target.
std::vector<const CustomOp*> custom_ops();

/// The message for a node whose target has no schema: "unknown op 'aten.foo.default'" for
/// ATen targets, "unknown operator 'mylib::foo' (load its plugin with --plugin)" otherwise.
std::string unknown_op_message(std::string_view target);

/// The plugin's view of one call: the dtype and sizes of each tensor argument (`tensors`, one
/// per Tensor argument in schema order) and the bound non-tensor arguments of `args` (one per
/// schema argument). Throws std::invalid_argument when a tensor has too many dimensions or an
/// argument has an unexpected kind.
fxc_op_args custom_op_args(const CustomOp& op, const std::vector<Arg>& args,
                           const std::vector<const TensorMeta*>& tensors);

/// Runs the op's shape function; returns contiguous output metas on `device`. Throws
/// std::invalid_argument with the plugin's message, or when the plugin's answer is not a valid
/// tensor (bad dtype code, rank, negative or overflowing sizes).
std::vector<TensorMeta> custom_op_output_metas(const CustomOp& op, const fxc_op_args& a,
                                               Device device);

/// fxc_dtype code <-> DType.
int32_t to_plugin_dtype(DType t);
bool from_plugin_dtype(int32_t code, DType* out);

} // namespace fxc
