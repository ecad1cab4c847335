// Shape and dtype propagation over a whole graph.
#pragma once

#include "frontend/graph.h"

namespace fxc {

/// Runs every node's meta function in order and stores the results in the node's output
/// values (inputs keep their metadata). Throws fxc::Error naming the node on the first failure.
void propagate_shapes(Graph& g);

/// Like propagate_shapes but only compares: returns one message per output whose recorded
/// metadata differs from the inferred one (empty when all agree). Used to test the meta table
/// against the metadata torch.export recorded.
std::vector<std::string> check_recorded_shapes(const Graph& g);

} // namespace fxc
