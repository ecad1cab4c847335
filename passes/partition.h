// Forward/backward partitioning of the joint graph: what the forward saves for the backward.
//
// Two strategies, as in torch/_functorch/partitioners.py:
// - Default: the forward computes every forward value; the backward reads whatever forward
//   values (and inputs) it needs, and all of those are saved.
// - MinCut: min_cut_rematerialization_partition, simplified. Every live value of the joint
//   graph becomes an edge in->out whose capacity is its size in bytes; uses are infinite edges;
//   inputs and values of ops too costly to recompute (matmuls, convolutions, reductions,
//   indexing, ...) hang off the source, values that depend on the tangents off the sink. A
//   max-flow/min-cut (Dinic) then picks the cheapest set of values to save; everything between
//   the saved values and the backward is recomputed there (cheap pointwise and view chains).
// Tested by test/unit/partition_test.cpp.
#pragma once

#include "frontend/graph.h"
#include "passes/autograd.h"

#include <string>
#include <string_view>
#include <vector>

namespace fxc {

enum class PartitionStrategy { Default, MinCut };

/// "default" or "min-cut rematerialization".
std::string_view partition_strategy_name(PartitionStrategy s);

struct SavedValue {
  std::string name; ///< the value's name in the joint graph (and the backward's input name)
  TensorMeta meta;
  int64_t bytes = 0;
};

/// The two graphs a training step runs.
struct AotGraphs {
  /// Inputs: the original graph's inputs (with its weights). Outputs: the user outputs, then
  /// the saved values in `saved` order.
  Graph forward;
  /// Inputs (all UserInput): the saved values in `saved` order, then one tangent per float user
  /// output ("tangents_1", ...). Outputs: one gradient per float parameter (input order), then
  /// per float user input, named by `grad_names`.
  Graph backward;
  size_t num_user_outputs = 0;
  std::vector<SavedValue> saved;
  int64_t saved_bytes = 0;
  /// What the default partitioner saves on the same joint graph (equal to the above for the
  /// default strategy), so that the log shows both numbers.
  int64_t default_saved_values = 0;
  int64_t default_saved_bytes = 0;
  /// Names of forward nodes the backward computes again instead of reading a saved value.
  std::vector<std::string> recomputed;
  std::vector<std::string> recomputed_targets; ///< their ops, "aten.tanh.default"
  std::vector<std::string> grad_names;         ///< "grad.fc1.weight", "grad.input_0", ...
  std::vector<size_t> grad_input_index;        ///< the original input of each gradient
  std::vector<size_t> tangent_output_index;    ///< forward output each tangent seeds
  /// Deterministic text for aot/aot_model___0_debug.log: the joint graph, each saved value with
  /// its bytes, each recomputed node, the total saved bytes and what the default partitioner
  /// would save, then the forward and backward graphs.
  std::string log;
};

/// Splits a joint graph into forward and backward graphs with the given strategy.
AotGraphs partition_joint(const JointGraph& jg, PartitionStrategy strategy);

/// build_joint_graph() followed by partition_joint(). With `decompose_graphs`
/// (aot_eager_decomp_partition, inductor) the forward is decomposed before differentiating
/// and the joint graph again before partitioning, so both graphs hold only core ops. Throws
/// what build_joint_graph and decompose throw.
AotGraphs aot_autograd(const Graph& forward, PartitionStrategy strategy,
                       bool decompose_graphs = false);

} // namespace fxc
