// The failure tools (docs/design.md §5): --bisect over the backends and --minify of a failing
// graph.
#pragma once

#include "driver/options.h"
#include "driver/pipeline.h"
#include "frontend/graph.h"
#include "runtime/tensor.h"

#include <functional>
#include <string>
#include <vector>

namespace fxc {

/// How a run in a child process ended.
struct ChildOutcome {
  enum Kind { Ok, Error, Crash } kind = Ok;
  std::string message; ///< the diagnostic (Error) or the signal/timeout (Crash)
  NamedTensors results;
};

/// Runs `fn` in a forked child so that a crash or a hang (killed after `timeout_s`) cannot take
/// the caller down; the child's results come back through a temporary safetensors file.
ChildOutcome run_in_child(const std::function<NamedTensors()>& fn, unsigned timeout_s = 600);

/// Compiles `g` with `backend` (the rest of `base`'s options) and runs it once.
NamedTensors run_backend(const Options& base, Backend backend, const Graph& g,
                         const std::vector<Tensor>& inputs);

/// --bisect: eager, aot_eager, aot_eager_decomp_partition and inductor on the same inputs,
/// each compared with the eager reference (train mode: outputs with eager, gradients with
/// aot_eager, the first stage that has them); one line per stage, then the first diverging
/// graph node, then "first failing stage: <name>" as the last line. Returns 0 when all pass.
int run_bisect(const Options& o, const Graph& g, const std::vector<Tensor>& inputs);

/// --minify: detects how `o.backend` fails on `g` (compile/run-time error, crash, or a
/// mismatch with the reference), shrinks the graph with passes/minify.h (each candidate run in
/// a child process), and writes <dir>/minifier/repro.fxg, repro.inputs.safetensors,
/// repro.expected.safetensors (accuracy failures) and repro.sh. Returns 0 when there was no
/// failure to minify, 1 after writing a repro.
/// FXC_REPRO_AFTER=dynamo (default) minifies `g` itself; =aot minifies the first graph after
/// AOT autograd and decompositions (forward, then backward in train mode) that fails on its own.
int run_minify(const Options& o, const Graph& g, const std::vector<Tensor>& inputs);

/// Minifies exactly `g` with o.backend and o.mode (no FXC_REPRO_AFTER handling).
int run_minify_graph(const Options& o, const Graph& g, const std::vector<Tensor>& inputs);

/// Every line --bisect and --minify printed so far in this process (for --report).
const std::string& failure_tools_transcript();

/// Writes <dir>/minifier/repro.fxg (the graph unminified), its inputs and repro.sh: what
/// FXC_REPRO_LEVEL=1 and 3 leave behind.
void write_repro(const Options& o, const Graph& g, const std::vector<Tensor>& inputs,
                 const std::string& what);

} // namespace fxc
