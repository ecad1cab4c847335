// The eager interpreter: runs a Graph node by node over the reference kernels.
#pragma once

#include "frontend/graph.h"
#include "runtime/tensor.h"

#include <functional>
#include <vector>

namespace fxc {

struct InterpretOptions {
  /// Convert every floating tensor (weights, inputs, constants) to float64 first: the
  /// reference used by --check-accuracy.
  bool float64 = false;
  /// Called after each node with its outputs (for bisecting intermediates). May be empty.
  std::function<void(const Node&, const std::vector<Tensor>&)> on_node;
};

/// Runs `g` on the user inputs (in the order of g's UserInput entries); parameters, buffers
/// and constants come from g.weights. Each intermediate is released after its last use.
/// Returns the graph outputs. Throws fxc::Error (file + node) on kernel failures.
///
/// Each user input must have the dtype and shape of its graph value ("input 'x': expected
/// f32[64, 256], got f32[32, 256]"). Every result is checked against its value's dtype and
/// shape (f64 for floating values in float64 mode); fresh results take the strides recorded
/// in the graph, as PyTorch laid them out, so later views behave as in PyTorch. Weights that
/// an in-place node mutates are copied first, so g.weights is never modified.
///
/// A dynamic graph runs as it is: its symbols are bound from the inputs' sizes (bind_symbols),
/// each symbolic argument is evaluated before its node runs, and a data-dependent (unbacked)
/// symbol is bound from the result that first has it as a size (nonzero's row count), checked
/// against its range.
std::vector<Tensor> interpret(const Graph& g, const std::vector<Tensor>& user_inputs,
                              const InterpretOptions& opts = {});

} // namespace fxc
