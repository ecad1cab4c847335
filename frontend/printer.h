// The readable FX graph: one line per node, annotated with dtype/shape and source lines.
#pragma once

#include "frontend/graph.h"

#include <string>

namespace fxc {

/// Prints `g` like PyTorch's print_readable():
///   def forward(self, p_fc1_weight: "f32[256, 256]", ..., x: "f32[64, 256]"):
///       # File: fixtures_probe.py:14 in forward, code: x = F.relu(s.fc1(x)) ** 2
///       linear: "f32[64, 256]" = aten.linear.default(x, p_fc1_weight, p_fc1_bias)
///       ...
///       return (pow_2,)
/// Multi-output nodes are followed by one `getitem` line per output. Only arguments the
/// source spelled out are printed (keywords as name=value). Deterministic.
std::string print_readable(const Graph& g);

/// Formats one argument as the readable printer does ("[2, 16]", "1e-05", "torch.float32").
std::string format_arg(const Graph& g, const Arg& a);

} // namespace fxc
