// Dynamic graphs made concrete: binding the shape symbols from the inputs' sizes (with the
// range checks that are a dynamic artifact's guards) and specializing the graph to them.
//
// A dynamic graph (Graph::is_dynamic) holds its sizes and arguments at the symbols' hints, with
// the expressions beside them (TensorMeta::sym_sizes, Arg::syms). specialize() evaluates every
// expression at the given values, so that every later pass sees an ordinary static graph:
//
//   SymBindings b;
//   if (std::string why = bind_symbols(g, {x.meta()}, &b); !why.empty()) fail(why);
//   Graph s = specialize(g, b);       // static; metas checked against what the export recorded
#pragma once

#include "frontend/graph.h"

#include <string>
#include <vector>

namespace fxc {

/// Binds every symbol of `g` but the unbacked ones from the sizes of its user inputs (`inputs[k]`
/// for the k-th user input): a dim whose size is a bare symbol gives its value. Returns "" and sets
/// *out, or the first failure, naming the input, the dim and the range or expression:
///   "input_0 'x': dim 0 is 5000, outside s77 in [1, 4096]"
///   "input_1 'y': dim 0 is 3, but s77 is 2 (input_0 'x' dim 0)"
///   "input_0 'x': dim 1 is 7, expected 256"
std::string bind_symbols(const Graph& g, const std::vector<TensorMeta>& inputs, SymBindings* out);

/// True when `g` has a data-dependent (unbacked) symbol: nonzero, masked_select, unique.
bool has_unbacked_symbols(const Graph& g);

/// The first node whose result has a data-dependent size, or null.
const Node* first_data_dependent_node(const Graph& g);

/// Each symbol at its hint: the sizes the graph was exported with.
SymBindings hint_bindings(const Graph& g);

/// "s27=16, s77=2"
std::string format_bindings(const SymBindings& b);

/// A dynamic graph's symbols for logs and the debug trace: one line per symbol ("s77 in [1, 64],
/// hint 2"), then which input dims give each, then the runtime assertions the export recorded.
std::string describe_symbols(const Graph& g);

/// `g` with every symbol replaced by its value in `b`: user inputs take the evaluated sizes,
/// symbolic arguments their values, every other value the metadata its meta function computes,
/// checked against the expression the export recorded (fxc::Error naming the node when they
/// disagree). The result is static (no symbols). A static `g` is returned unchanged.
Graph specialize(const Graph& g, const SymBindings& b);

} // namespace fxc
