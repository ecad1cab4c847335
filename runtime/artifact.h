// The .fxo compiled artifact: what it holds, its byte format, and loading it to run (no LLVM).
//
// An artifact is one file: a fixed header (magic "FXO\0", format version, fxc version, payload
// sizes, XXH64 checksum of the compressed payload) followed by a zstd-compressed payload: a JSON
// manifest (inputs and their guards, outputs, graphs and their host plans, kernel and weight
// references) and the blobs it refers to (CPU object code, PTX, fallback graphs, weights). The
// format is described in docs/artifact.md. Serialization is deterministic: the same
// CompiledArtifact gives the same bytes.
//
//   std::string bytes = serialize_artifact(a);               // compile side (driver, cache)
//   CompiledArtifact b = parse_artifact(bytes, "model.fxo");         // validates every field
//   auto m = LoadedModel::load(std::move(b), "model.fxo");   // resolves kernels
//   NamedResults r = m->run(inputs);                         // checks the guards first
#pragma once

#include "frontend/graph.h"
#include "runtime/plan_executor.h"
#include "runtime/tensor.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fxc {

/// The format version this fxc writes and reads (the header's second field).
constexpr uint32_t kArtifactFormatVersion = 1;

/// What an artifact assumes about one user input; run() checks every field before running.
struct InputGuard {
  std::string name; ///< the graph's input name ("x")
  /// dtype, sizes and strides (elements) the compiled code reads; `device` is where the caller's
  /// buffer lives (host memory for both targets: CUDA runs copy inputs to the device).
  TensorMeta meta;
  /// Integer inputs that index a table (embedding): random inputs stay below this; 0: none.
  int64_t int_bound = 0;
};

/// Empty when a tensor of meta `t` passes guard `g` (input number `index`), else which guard
/// failed, checked in this order: "input_0 'x': dtype guard failed: expected f32, got f64",
/// "... shape guard failed: expected f32[64, 256], got f32[32, 256]" (sizes or rank), then
/// strides and device.
std::string check_input_guard(size_t index, const InputGuard& g, const TensorMeta& t);

/// One compiled graph of an artifact: a host plan with named kernels, or a graph for the
/// reference interpreter (backends before inductor).
struct ArtifactGraph {
  enum class Kind : uint8_t { Plan, Interpreted };
  Kind kind = Kind::Plan;
  std::string role; ///< "inference", "forward" or "backward"
  /// Plan: the host plan. Kernels are known by name; PlanKernel::fn and cuda_function are null
  /// in a parsed artifact and set by LoadedModel::load. Fallback externs carry their one-node
  /// graph; constant slots carry the weights.
  Plan plan;
  /// Plan on the CPU: every kernel of the plan in one x86-64 ELF relocatable object, each
  /// exported as `void <name>(void* const* args, int64_t xbegin, int64_t xend)`.
  std::string object_code;
  /// Plan on CUDA: the PTX module of each kernel, indexed like plan.kernels.
  std::vector<std::string> ptx;
  /// Interpreted: the graph (with its weights) that runtime/interpreter.h runs.
  std::shared_ptr<const Graph> graph;
};

struct CompiledArtifact {
  std::string name;      ///< the model's stem ("mlp"); never a path
  std::string backend;   ///< "eager", "aot_eager", "aot_eager_decomp_partition", "inductor"
  std::string device;    ///< "cpu" or "cuda": where the kernels run
  std::string cuda_arch; ///< "sm_90" for cuda artifacts; empty on the CPU
  std::string mode;      ///< "inference" or "train"
  std::vector<InputGuard> inputs;   ///< one per user input, in order
  std::vector<std::string> outputs; ///< names of run()'s results: output_<i>, then gradients
  /// Train mode: graphs = {forward, backward}. The forward returns num_user_outputs outputs and
  /// then the saved values; the backward takes the saved values and then gradients of ones for
  /// the forward outputs tangent_output_index names, and returns the gradients.
  size_t num_user_outputs = 0;
  std::vector<size_t> tangent_output_index;
  /// Plugin ops the graphs call (qualified targets, "mylib.scaled_softplus.default"); loading
  /// fails unless each is registered (frontend/custom_ops.h).
  std::vector<std::string> custom_ops;
  std::vector<ArtifactGraph> graphs;
  /// Dynamic artifacts (inference): the imported graph with its shape symbols, and the symbol
  /// values `graphs` were compiled at. Inputs of other sizes in the symbols' ranges run this
  /// graph, specialized to their sizes, with the reference interpreter; the guards check the
  /// ranges ("input_0 'x': dim 0 is 5000, outside s77 in [1, 4096]"). Null for static artifacts.
  std::shared_ptr<const Graph> symbolic;
  SymBindings bindings;
};

/// The artifact's bytes (header + compressed payload). Deterministic. Throws fxc::Error when the
/// artifact is incomplete (a kernel without code, a weight without bytes).
std::string serialize_artifact(const CompiledArtifact& a);

/// True when `bytes` starts with the artifact magic ("FXO\0").
bool is_artifact(std::string_view bytes);

/// Parses and validates an artifact: header, version, checksum, sizes, every index and view of
/// every plan. Throws fxc::Error naming `source` for a foreign, truncated, corrupt or
/// newer-version file. Never trusts a number read from the file.
CompiledArtifact parse_artifact(std::string_view bytes, const std::string& source);

/// parse_artifact() of a file's contents.
CompiledArtifact read_artifact_file(const std::string& path);

/// Named results of a run: output_<i>, then (train mode) grad.<fqn> / grad.input_<i>.
using NamedResults = std::vector<std::pair<std::string, Tensor>>;

/// An artifact ready to run: CPU kernels loaded from its object code (runtime/elf_loader.h),
/// CUDA kernels from its PTX through the CUDA driver. Runs are serialized (one at a time).
class LoadedModel {
public:
  /// Loads the kernels and checks that the custom ops it calls are registered. `num_threads`: 0
  /// uses every hardware thread. Throws fxc::Error naming `source`.
  static std::unique_ptr<LoadedModel> load(CompiledArtifact a, const std::string& source,
                                           int num_threads = 0);
  ~LoadedModel();

  const CompiledArtifact& artifact() const;
  /// dtype and sizes of each of run()'s results (contiguous), in order, for the inputs the
  /// artifact was compiled for.
  const std::vector<TensorMeta>& output_metas() const;
  /// output_metas() for user inputs of these sizes (in order): a dynamic artifact's outputs at
  /// any size in range. Throws fxc::Error naming the guard that fails.
  std::vector<TensorMeta> output_metas_for(const std::vector<TensorMeta>& inputs) const;
  /// Empty when `inputs` pass every guard, else the first failure (the count, then
  /// check_input_guard() of each input in order).
  std::string check_guards(const std::vector<Tensor>& inputs) const;
  /// Checks the guards (fxc::Error naming the input and the guard), then runs: the inference
  /// graph, or train mode's forward and backward with output gradients of ones.
  NamedResults run(const std::vector<Tensor>& inputs);

  /// For --bench: the plan runner of graph `i` (artifact().graphs' index) of a CUDA artifact,
  /// which holds its buffers resident on the device; nullptr for CPU and interpreted graphs.
  CudaPlanRunner* cuda_runner(size_t i) const;
  /// For --bench: runs graph `i` alone on its inputs as run() does (no guards, no gradients of
  /// ones: train mode's backward takes what backward_inputs() makes of the forward's results). A
  /// CPU plan appends each kernel launch's and extern call's host time to `profile` when given;
  /// CUDA plans and interpreted graphs leave it alone.
  std::vector<Tensor> run_graph(size_t i, const std::vector<Tensor>& inputs,
                                std::vector<StepProfile>* profile = nullptr);

  struct Impl;

private:
  explicit LoadedModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace fxc
