// `fxc --list-ops`: every declared op (frontend/ops.def) with the layers it has.
#pragma once

#include <string>

namespace fxc {

/// The table `fxc --list-ops` prints: one line per op with its meta function, eager kernel,
/// autograd (derivative, decomposition or not differentiable), inductor on the CPU and on CUDA
/// (lowered, decomposed, or an extern fallback), and its tags. docs/ops.md is this text
/// (tools/gen-ops-doc.sh).
std::string list_ops_text();

} // namespace fxc
