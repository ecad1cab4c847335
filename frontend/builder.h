// Building graphs in code: append a node by target and arguments, with metadata inferred.
#pragma once

#include "frontend/graph.h"
#include "frontend/schema.h"

#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace fxc {

/// The names a graph's values and nodes use, so that many nodes can be added without rescanning
/// the graph for each name. Build it from the graph, then pass it to every add_node/unique_name
/// call on that graph; it stays valid as long as names are only added through those calls.
class NameCache {
public:
  explicit NameCache(const Graph& g);
  bool contains(std::string_view name) const { return used_.count(std::string(name)) != 0; }
  /// Returns `hint`, else `hint_<n>` for the smallest free n >= 1, and records it as used.
  std::string take(std::string_view hint);
  /// Like take() but records nothing.
  std::string peek(std::string_view hint);
  /// Records a name as used.
  void add(const std::string& name) { used_.insert(name); }

private:
  std::unordered_set<std::string> used_;
  std::unordered_map<std::string, int64_t> next_; ///< first suffix worth trying per hint
};

/// Appends a node calling `target` with `call` (positional and keyword CallArgs), binds the
/// arguments to the schema, runs the op's meta function, and creates the output values.
/// The node is named after `name_hint` (or the op's base name), made unique with "_<n>".
/// Returns the output value ids. Throws fxc::Error on an unknown op or bad arguments.
/// `names`, when given, must be a NameCache of `g` (see above).
std::vector<ValueId> add_node(Graph& g, std::string_view target, std::vector<CallArg> call,
                              std::string_view name_hint = {}, NameCache* names = nullptr);

/// Same, for single-output ops; returns the one output.
ValueId add_node1(Graph& g, std::string_view target, std::vector<CallArg> call,
                  std::string_view name_hint = {}, NameCache* names = nullptr);

/// A name not yet used by any value or node in g: `hint`, else `hint_1`, `hint_2`, ... (the
/// smallest free suffix). Without a NameCache, add_node keeps one per thread for the graph it
/// last extended and checks each name it proposes against g, so names are always unique; after
/// names were changed in place, a suffix may be skipped.
std::string unique_name(const Graph& g, std::string_view hint);

} // namespace fxc
