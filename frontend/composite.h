// Composite ops (PyTorch's CompositeImplicitAutograd): ops with no meta function or reference
// kernel of their own, whose output metadata and eager values are those of their decomposition
// (passes/decompose.cpp), as PyTorch's dispatcher expands them. The frontend and runtime layers
// sit below passes/, so the decomposition reaches them through this hook, which passes/
// installs (decompose.cpp's registration); find_meta() and run_kernel() fall back to it.
#pragma once

#include "frontend/graph.h"

#include <string_view>

namespace fxc {

struct CompositeHook {
  /// Whether the op is computed through its decomposition (declared, no meta row of its own).
  bool (*has)(std::string_view target) = nullptr;
  /// A graph whose inputs are the values `n` reads in `g` (same names and metadata, in the order
  /// of n's tensor arguments) and whose outputs are the node's results, built from its
  /// decomposition. Throws fxc::Error naming the node when the decomposition cannot take its
  /// arguments.
  Graph (*expand)(const Graph& g, const Node& n) = nullptr;
};

/// Installs the hook (once, by passes/decompose.cpp); later calls replace it.
void set_composite_hook(const CompositeHook& hook);
/// The installed hook, or nullptr before it is installed.
const CompositeHook* composite_hook();
/// Whether `target` is a composite op under the installed hook.
bool is_composite(std::string_view target);

} // namespace fxc
