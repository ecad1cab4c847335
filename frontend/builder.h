// Building graphs in code: append a node by target and arguments, with metadata inferred.
#pragma once

#include "frontend/graph.h"
#include "frontend/schema.h"

#include <string_view>
#include <vector>

namespace fxc {

/// Appends a node calling `target` with `call` (positional and keyword CallArgs), binds the
/// arguments to the schema, runs the op's meta function, and creates the output values.
/// The node is named after `name_hint` (or the op's base name), made unique with "_<n>".
/// Returns the output value ids. Throws fxc::Error on an unknown op or bad arguments.
std::vector<ValueId> add_node(Graph& g, std::string_view target, std::vector<CallArg> call,
                              std::string_view name_hint = {});

/// Same, for single-output ops; returns the one output.
ValueId add_node1(Graph& g, std::string_view target, std::vector<CallArg> call,
                  std::string_view name_hint = {});

/// A name not yet used by any value in g: `hint`, else `hint_1`, `hint_2`, ...
std::string unique_name(const Graph& g, std::string_view hint);

} // namespace fxc
