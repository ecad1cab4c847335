// Renders a compiled host plan as output_code.cpp: a standalone C++ program with main().
#pragma once

#include "runtime/plan_executor.h"

#include <string>
#include <vector>

namespace fxc {

/// The C++ program that runs `plan`: it declares the kernels (built from kernels/<name>.ll with
/// llc-19, as its header explains), fills inputs and weights with seeded random values, runs the
/// plan's steps (allocations, kernel launches over threads, BLAS calls, frees) once to warm up and
/// then `runs` times, and prints the median time. Fallback extern calls need fxc's runtime: the
/// program then embeds each call's one-node graph as .fxg text and refuses to build without
/// -DFXC_WITH_RUNTIME. Deterministic text for a given plan.
std::string render_cpp_wrapper(const Plan& plan, const std::string& source);

} // namespace fxc
