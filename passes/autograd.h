// AOT autograd: derivative rules (one table row per op) and the joint forward+backward graph.
//
// build_joint_graph() walks a forward graph in reverse and, for every node on a path from a
// parameter or float user input to an output, calls the op's derivative rule; each rule builds
// its backward nodes with the graph builder, so the backward is itself a Graph made of ordinary
// ATen ops (mm, convolution, scatter_add, slice_scatter, ...) that the interpreter and the
// compiler run like any other. Ops without a rule of their own but with a decomposition
// (scaled_dot_product_attention, matmul) are decomposed first and differentiated through it.
// PyTorch's tools/autograd/derivatives.yaml is the reference for the formulas.
// Tested by test/unit/autograd_test.cpp (gradient checks against finite differences).
#pragma once

#include "frontend/graph.h"
#include "frontend/ops.h"

#include <string>
#include <string_view>
#include <vector>

namespace fxc {

/// The forward and backward computation in one graph.
///
/// Inputs: the forward graph's inputs (parameters, buffers, constants, user inputs, in their
/// order; weights shared), then one tangent per float forward output ("tangents_1", ...,
/// UserInput). Outputs: the forward's outputs, then one gradient per float parameter (in input
/// order) and per float user input. Parameters or inputs no gradient reaches get zeros.
struct JointGraph {
  Graph graph;
  size_t num_primals = 0;    ///< graph.inputs[0, num_primals) are the forward's inputs
  size_t num_fw_outputs = 0; ///< graph.outputs[0, num_fw_outputs) are the forward's outputs
  /// For each gradient output (graph.outputs[num_fw_outputs + k]): the index of its input in
  /// graph.inputs, and its name as PyTorch's gradient files spell it ("grad.fc1.weight",
  /// "grad.input_0" for user input 0).
  std::vector<size_t> grad_input_index;
  std::vector<std::string> grad_names;
  /// For each tangent input (graph.inputs[num_primals + k]): the forward output it seeds.
  std::vector<size_t> tangent_output_index;
};

/// Builds the joint graph of `fw` (an inference graph). Throws fxc::Error naming the node when
/// a gradient must flow through an op with no derivative rule, or through an argument the rule
/// does not support (batch norm in training mode, transposed convolution, ...).
JointGraph build_joint_graph(const Graph& fw);

/// Whether the derivative table has a row for this normalised target.
bool has_derivative(std::string_view target);
/// The declared ops that have a derivative rule.
const OpLayer& derivative_layer();

} // namespace fxc
