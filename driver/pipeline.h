// The one pipeline (docs/design.md §1): every backend runs a prefix of the stage list.
#pragma once

#include "driver/debug_trace.h"
#include "driver/options.h"
#include "frontend/graph.h"
#include "runtime/tensor.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace fxc {

struct JointGraph;
struct AotGraphs;
class CompiledGraph;
struct PtxProgram;

/// One graph the pipeline carries: the inference graph, or the forward and backward graphs of
/// train mode. `folder` is its debug-trace folder name (model__0_forward_1.0).
struct StageGraph {
  std::string role; ///< "inference", "forward" or "backward"
  std::string folder;
  Graph graph;
};

/// Named tensors a run produces: output_<i>, grad.<fqn>, grad.input_<i>.
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

/// What --run executes once the pipeline is done (the interpreter for eager/aot backends,
/// compiled code for inductor).
class Executable {
public:
  virtual ~Executable() = default;
  /// Runs on the user inputs; train mode also runs the backward with output gradients of ones.
  virtual NamedTensors run(const std::vector<Tensor>& user_inputs) = 0;
};

struct Compilation {
  Compilation(const Options& o, DebugTrace& t, Graph g) : opts(o), trace(t), source(std::move(g)) {}
  const Options& opts;
  DebugTrace& trace;
  Graph source; ///< the imported graph (frontend output)
  /// Dynamic graphs: the imported graph with its symbols; `source` is it specialized to
  /// `bindings` (the hints, or the sizes of --inputs).
  std::shared_ptr<const Graph> symbolic;
  SymBindings bindings;
  std::vector<StageGraph> graphs;                       ///< current graphs, rewritten by each stage
  std::shared_ptr<JointGraph> joint;                    ///< train mode: the joint graph (aot stage)
  std::shared_ptr<const AotGraphs> aot;                 ///< train mode: the partition in use
  std::string aot_log;                                  ///< partition decisions (train mode)
  std::vector<std::shared_ptr<CompiledGraph>> compiled; ///< inductor (cpu): one per graph
  std::vector<std::shared_ptr<PtxProgram>> ptx;         ///< inductor (cuda): one per graph
  std::unique_ptr<Executable> executable;
  /// --stop-after reached its step: the pipeline ended there; `stop_text` is the IR after it
  /// (every graph's, in order), what -o receives.
  bool stopped = false;
  std::string stop_text;
};

/// Every step --print-after and --stop-after accept, in pipeline order: the graph stages
/// frontend, aot, decompose, then inductor's steps lower, fuse, plan-memory, codegen,
/// host-plan, load (codegen/inductor.h).
std::vector<std::string> pipeline_step_names();

/// Whether backend `b` runs step `name` (eager runs frontend only, ...).
bool backend_runs_step(Backend b, const std::string& name);

/// Runs the stages of `c.opts.backend` (a prefix of: frontend, aot, decompose, inductor) on
/// c.source, logging each with its wall time (-v and fxc/debug.log), writing per-graph debug
/// artifacts, and finally sets c.executable (none for --device=cuda yet: PTX only).
void run_pipeline(Compilation& c);

/// The backward graph's inputs for one training step: the saved values the forward returned
/// after its `num_user_outputs` user outputs, then output gradients of ones (as
/// out.sum().backward()) for the forward outputs `tangent_output_index` names.
std::vector<Tensor> backward_inputs(const std::vector<Tensor>& forward_results,
                                    size_t num_user_outputs,
                                    const std::vector<size_t>& tangent_output_index);

/// Number of stages a backend runs (eager 1 ... inductor 4).
int stage_count(Backend b);

} // namespace fxc
