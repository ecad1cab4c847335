// The graph minifier: shrinks a failing graph to a small one that still fails (docs/design.md §5).
//
// Modelled on PyTorch's fx_minifier. Given a graph, concrete values for its user inputs and a
// predicate that says whether a candidate still fails, minify() repeatedly tries these
// strategies and keeps every candidate the predicate still rejects:
//   - dead-code elimination and removal of unused inputs (also applied to every candidate);
//   - lifting parameters, buffers and constants to user inputs (their bytes become inputs);
//   - dropping outputs (halving chunks of the output list);
//   - truncating a suffix: keep nodes [0, k] and return every value of that prefix the rest
//     of the graph used; k is found by binary search (about log2(n) predicate calls);
//   - delta debugging over node windows: replace a window of nodes by their concrete values
//     (new user inputs), with window sizes halving from the largest power of two down to 1;
//     when that fails and the window was the only user of values computed before it, retry
//     with those values as extra outputs, so failures that need two distant nodes shrink to
//     those two nodes (the extra outputs are dropped later when they are not needed).
// Concrete values of every intermediate come from one run of the reference interpreter over
// the original graph. Every candidate passes verify_graph before the predicate sees it.
// Progress is measured by (nodes, outputs, inputs, weights) decreasing lexicographically, so
// minify() terminates; it stops when no strategy at window size 1 makes progress.
//
// Covered by test/unit/minify_test.cpp.
#pragma once

#include "frontend/graph.h"
#include "runtime/tensor.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace fxc {

/// True when the candidate (a valid graph, with concrete values for its user inputs in
/// UserInput order) still shows the failure being minified. Exceptions propagate out of
/// minify().
using FailurePredicate =
    std::function<bool(const Graph& g, const std::vector<Tensor>& user_inputs)>;

struct MinifyOptions {
  /// Receives one line per accepted step ("15 nodes → 10 nodes: truncate suffix") and a few
  /// status lines (start, reference run, end). May be empty.
  std::function<void(const std::string&)> progress;
  /// Stop after this many predicate calls and return the smallest failing graph so far
  /// (0: no limit).
  int64_t max_predicate_calls = 0;
  /// Largest delta-debugging window (0: the largest power of two <= the node count).
  int64_t max_granularity = 0;
};

struct MinifyResult {
  Graph graph;                 ///< the smallest failing graph found
  std::vector<Tensor> inputs;  ///< its user inputs, in UserInput order
  int64_t predicate_calls = 0; ///< how often the predicate ran (including the initial check)
  int64_t initial_nodes = 0;
  bool hit_call_limit = false; ///< stopped by max_predicate_calls
};

/// Minifies `g`, whose user inputs are `inputs` (in UserInput order). Throws fxc::Error when
/// the inputs do not match the graph or when `g` does not fail to begin with. The original
/// graph is not modified.
MinifyResult minify(const Graph& g, const std::vector<Tensor>& inputs,
                    const FailurePredicate& still_fails, const MinifyOptions& opts = {});

} // namespace fxc
