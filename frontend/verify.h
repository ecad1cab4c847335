// The graph verifier: runs between pipeline stages.
#pragma once

#include "frontend/graph.h"

namespace fxc {

/// Checks that every referenced value is defined before use (no cycles), every node has a
/// schema and arguments bound to it (arity and kinds), outputs have the count the schema
/// returns, names are unique, every Parameter/Buffer/Constant has weights of the recorded
/// size, and each node's output metadata agrees with its meta function (strides are compared
/// where they matter: dimensions of size > 1 of non-empty tensors, as PyTorch compares fake and
/// real tensors). Throws fxc::Error naming the file and the node.
void verify_graph(const Graph& g);

} // namespace fxc
