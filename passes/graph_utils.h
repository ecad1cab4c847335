// Generic graph surgery: dead-code elimination, unused-input removal, subgraph extraction.
//
// Every function here returns a new, compact Graph (values renumbered, producers fixed up)
// together with a map from the old graph's ValueIds to the new ones, so callers that keep
// side tables indexed by ValueId can follow values across rewrites. Node and value names,
// targets, arguments and metadata are copied unchanged; the relative order of nodes, values
// and inputs is preserved, so the output is deterministic.
#pragma once

#include "frontend/graph.h"

#include <vector>

namespace fxc {

/// A rewritten graph and where each value of the old graph went (kNoValue: removed).
struct GraphRemap {
  Graph graph;
  std::vector<ValueId> value_map; ///< indexed by old ValueId
};

/// What extract_subgraph keeps.
struct SubgraphSpec {
  std::vector<bool> keep_node;  ///< one entry per node of the source graph
  std::vector<ValueId> outputs; ///< source values the new graph returns, in order
  /// Source values produced by dropped nodes that become new UserInput graph inputs (named
  /// after the value, appended after the existing inputs in this order). Their metadata is
  /// copied; callers that change it should re-run shape propagation.
  std::vector<ValueId> new_inputs;
};

/// Builds the graph made of the kept nodes (in their original order), every original input,
/// the promoted `new_inputs`, and `outputs`. Requires that every value a kept node or an
/// output uses is an original input, an output of a kept node, or listed in `new_inputs`
/// (asserted). Weights of every kept input are kept.
GraphRemap extract_subgraph(const Graph& g, const SubgraphSpec& spec);

/// Nodes whose results reach a graph output, directly or through other nodes. With
/// `keep_side_effects`, nodes without outputs (asserts) and in-place ops count as roots too.
std::vector<bool> live_nodes(const Graph& g, bool keep_side_effects = true);

/// Removes the nodes live_nodes() does not mark. Inputs are all kept.
GraphRemap eliminate_dead_code(const Graph& g, bool keep_side_effects = true);

/// Removes graph inputs that no node and no output uses, and the weights of removed
/// parameters, buffers and constants that no remaining input shares.
GraphRemap remove_unused_inputs(const Graph& g);

/// Turns every Parameter, Buffer and Constant input into a UserInput named after its value
/// and drops its entry from g.weights. `lifted` receives, for each lifted input in input
/// order, its ValueId in the result and the WeightData that held its bytes.
Graph lift_weights_to_inputs(const Graph& g, std::vector<std::pair<ValueId, WeightData>>* lifted);

/// Composes two value maps: first a -> b, then b -> c.
std::vector<ValueId> compose_value_maps(const std::vector<ValueId>& first,
                                        const std::vector<ValueId>& second);

} // namespace fxc
