// The .fxo compiled artifact: what it holds, its byte format, and loading it to run (no LLVM).
//
// An artifact is one file: a fixed header (magic "FXO\0", format version, fxc version, section
// sizes, XXH64 checksum of the header and the compressed payload), a zstd-compressed payload (a
// JSON manifest: inputs and their guards, outputs, graphs and their host plans, kernel and weight
// references; and the blobs it refers to: CPU object code, PTX, fallback graphs), then the
// weights, raw, page-aligned, deduplicated by content, with an XXH3 checksum per MiB. The format
// is described in docs/artifact.md. Serialization is deterministic: the same CompiledArtifact
// gives the same bytes.
//
//   write_artifact(a, sink);                                 // compile side (driver, cache)
//   CompiledArtifact b = read_artifact_file("model.fxo");    // maps the file, validates all
//   auto m = LoadedModel::load(std::move(b), "model.fxo");   // resolves kernels
//   NamedResults r = m->run(inputs);                         // checks the guards first
#pragma once

#include "frontend/diag.h"
#include "frontend/graph.h"
#include "runtime/plan_executor.h"
#include "runtime/tensor.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fxc {

/// The format version this fxc writes and reads (the header's second field).
constexpr uint32_t kArtifactFormatVersion = 4;

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
  /// Plan on the CPU: the kernels of the plan in x86-64 ELF relocatable objects (compiled in
  /// parallel, each holding some of them), each kernel exported by exactly one as
  /// `void <name>(void* const* args, int64_t xbegin, int64_t xend)`.
  std::vector<std::string> objects;
  /// Plan on CUDA: one PTX module holding every kernel of the plan, each an entry named like
  /// its kernel (libdevice's functions once, compiled in one pass).
  std::string ptx;
  /// Interpreted: the graph (with its weights) that runtime/interpreter.h runs.
  std::shared_ptr<const Graph> graph;
  /// Plan: per plan.constant_slots entry, the parameter or buffer it is ("fc1.weight"), or ""
  /// for a constant made at compile time; named ones can be swapped (LoadedModel::swap_weights).
  std::vector<std::string> constant_names;
};

/// A dynamic artifact's plans at every value of its one symbol (docs/dynamic.md, "Plans at
/// every size"): compiled at four consecutive values, the kernels' code was the same at each and
/// every number of the plans that changed (a kernel's rows, a slot's bytes, a view's sizes and
/// strides) was a polynomial of degree two at most in the symbol; `fields` are those numbers.
struct SizeGeneric {
  struct Field {
    size_t graph = 0;               ///< index into CompiledArtifact::graphs
    std::string pointer;            ///< JSON pointer into that graph's "plan" ("/kernels/0/xnumel")
    int64_t c0 = 0, c1 = 0, c2 = 0; ///< c0 + c1·t + c2·t(t-1)/2 at t = value - base
  };
  std::string symbol; ///< empty: the plans hold at CompiledArtifact::bindings only
  int64_t base = 0;
  std::vector<Field> fields;
  /// The field's value when the symbol is `value`; nullopt when it does not fit in an int64.
  std::optional<int64_t> at(const Field& f, int64_t value) const;
};

/// What instantiate_size_generic() reads: the plans as the file spells them (set by
/// parse_artifact for a size-generic model).
struct GenericPlanSource;

struct CompiledArtifact {
  std::string name;      ///< the model's stem ("mlp"); never a path
  std::string backend;   ///< "eager", "aot_eager", "aot_eager_decomp_partition", "inductor"
  std::string device;    ///< "cpu" or "cuda": where the kernels run
  std::string cuda_arch; ///< "sm_90" for cuda artifacts; empty on the CPU
  std::string mode;      ///< "inference" or "train"
  std::string dtype;     ///< --dtype the graphs were converted with ("bf16"), else empty
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
  /// Dynamic inference artifacts whose plans hold at every value of their one symbol
  /// (make_size_generic): the numbers that change with it; then a run at any size in range runs
  /// the plans, not the interpreter.
  SizeGeneric generic;
  std::shared_ptr<const GenericPlanSource> generic_source; ///< parsed artifacts only
  /// Read from a file: the names of every model that file holds, in order (this one among them;
  /// `fxc --link` writes several). Not written: an artifact's models are what write_artifact()
  /// is given.
  std::vector<std::string> models_in_file;
};

/// Makes `a` size-generic (SizeGeneric) from the same model compiled at four consecutive values
/// of its one symbol (`at`: value and artifact, `a` itself among them at its own binding).
/// Returns "" when it is, else why not ("the kernels' code differs between sizes", ...), and
/// leaves `a` as it was.
std::string make_size_generic(CompiledArtifact& a,
                              const std::vector<std::pair<int64_t, const CompiledArtifact*>>& at);

/// The graphs of a size-generic parsed artifact with its symbol at `value` (its plans with the
/// numbers of SizeGeneric at that value, validated as a file's plans are; kernels unresolved).
/// Throws fxc::Error naming `source`.
std::vector<ArtifactGraph> instantiate_size_generic(const CompiledArtifact& a, int64_t value,
                                                    const std::string& source);

/// parse_artifact() was asked for a model the artifact does not hold (the message lists those
/// it does): the caller's mistake, not a damaged file.
class NoSuchModel : public Error {
public:
  using Error::Error;
};

/// Per entry of plan.constant_slots, the fqn of the weight of `graph` it is (the same storage
/// and view), or "" for a constant made at compile time: ArtifactGraph::constant_names.
std::vector<std::string> name_constants(const Plan& plan, const Graph& graph);

/// Receives an artifact's bytes in order, in pieces (the weights straight from their storage).
using ArtifactSink = std::function<void(std::string_view)>;

/// Writes the artifact's bytes to `sink`: header, compressed payload, then the weight section
/// from where the weights lie (no copy of them is made). Deterministic. Throws fxc::Error when
/// the artifact is incomplete (a kernel without code, a weight without bytes).
void write_artifact(const CompiledArtifact& a, const ArtifactSink& sink);

/// Several models in one artifact (`fxc --link`; an encoder and a decoder), each chosen by its
/// name when loading (parse_artifact's `model`; the first when none is named). Their weights
/// share one section, deduplicated by content across models. Throws fxc::Error for no models,
/// an empty name or a name given twice.
void write_artifact(const std::vector<const CompiledArtifact*>& models, const ArtifactSink& sink);

/// write_artifact() into one string.
std::string serialize_artifact(const CompiledArtifact& a);
std::string serialize_artifact(const std::vector<const CompiledArtifact*>& models);

/// The bytes of an artifact and what keeps them valid: a private mapping of its file, or a
/// page-aligned copy. A parsed artifact's weights point into these bytes and hold a reference.
class ArtifactBytes {
public:
  /// Maps `path` (a pipe or an empty file is read into a copy). Throws fxc::Error naming it.
  static std::shared_ptr<const ArtifactBytes> map_file(const std::string& path);
  /// A copy of `bytes`.
  static std::shared_ptr<const ArtifactBytes> copy(std::string_view bytes);
  ~ArtifactBytes();
  ArtifactBytes(const ArtifactBytes&) = delete;
  ArtifactBytes& operator=(const ArtifactBytes&) = delete;

  std::string_view view() const { return {data_, size_}; }
  /// Whether these are a file's mapping.
  bool mapped() const { return mapped_; }

private:
  ArtifactBytes() = default;
  char* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
};

/// True when `bytes` starts with the artifact magic ("FXO\0").
bool is_artifact(std::string_view bytes);

/// Parses and validates an artifact: header, version, checksums (the weights' too), sizes, every
/// index and view of every plan. Throws fxc::Error naming `source` for a foreign, truncated,
/// corrupt or newer-version file. Never trusts a number read from the file. The weights are
/// used where they lie in `bytes`, which they keep alive. `model` names the model to read from
/// an artifact of several ("": the first); NoSuchModel when it holds none of that name.
CompiledArtifact parse_artifact(std::shared_ptr<const ArtifactBytes> bytes,
                                const std::string& source, const std::string& model = {});
/// parse_artifact() of a copy of `bytes`.
CompiledArtifact parse_artifact(std::string_view bytes, const std::string& source,
                                const std::string& model = {});
/// Every model of an artifact, in order (what `fxc --link` combines).
std::vector<CompiledArtifact> parse_artifact_models(std::shared_ptr<const ArtifactBytes> bytes,
                                                    const std::string& source);

/// parse_artifact() of a file's mapping (ArtifactBytes::map_file).
CompiledArtifact read_artifact_file(const std::string& path, const std::string& model = {});

/// Named results of a run: output_<i>, then (train mode) grad.<fqn> / grad.input_<i>.
using NamedResults = std::vector<std::pair<std::string, Tensor>>;

/// An artifact ready to run: CPU kernels loaded from its object code (runtime/elf_loader.h),
/// CUDA kernels from its PTX through the CUDA driver. Weights are used where they lie in the
/// artifact's bytes (CPU) or uploaded from there (CUDA). run() may be called from many threads
/// at once: each run has its own activations; one uses the model's thread pool, the others run
/// on their calling thread; CUDA runs are serialized (the runner's device buffers are shared).
class LoadedModel {
public:
  /// Loads the kernels and checks that the custom ops it calls are registered. `num_threads`: 0
  /// uses every hardware thread. `cuda_device`: the device a CUDA artifact's kernels, weights
  /// and runs go to (-1: the default device, FXC_CUDA_DEVICE or 0). Throws fxc::Error naming
  /// `source`.
  static std::unique_ptr<LoadedModel> load(CompiledArtifact a, const std::string& source,
                                           int num_threads = 0, int cuda_device = -1);
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
  /// The CUDA device ordinal a CUDA artifact runs on; -1 for a CPU artifact.
  int cuda_device() const;
  /// A CUDA inference artifact run on the caller's device buffers (contiguous, of the sizes the
  /// artifact was compiled for: output_metas() for the outputs), ordered on the caller's stream
  /// (a CUstream / cudaStream_t of cuda_device(); null: the legacy default stream). Returns once
  /// the work is queued; CudaPlanRunner::run_device says what it waits for. Throws fxc::Error
  /// for a CPU, train-mode or interpreted artifact and for failures.
  void run_device(const std::vector<uint64_t>& inputs, const std::vector<uint64_t>& outputs,
                  void* stream);

  /// For --bench: the plan runner of graph `i` (artifact().graphs' index) of a CUDA artifact,
  /// which holds its buffers resident on the device; nullptr for CPU and interpreted graphs.
  CudaPlanRunner* cuda_runner(size_t i) const;
  /// Milliseconds load() took (kernels, plan runners; parsing and mapping not included).
  double load_ms() const;

  /// The weights swap_weights() can replace: the graph's parameters and buffers that the plans
  /// bind as they are (sorted by name), with their dtype and sizes.
  std::vector<std::pair<std::string, TensorMeta>> swappable_weights() const;
  /// Replaces weights by name without recompiling: each name must be one of swappable_weights()
  /// with the same dtype and sizes (else fxc::Error naming `from` and the weight; nothing is
  /// changed); names not given keep their weights. Runs already started finish on the old
  /// weights; runs that start after the call returns use the new ones. The bytes are used in
  /// place when they are a contiguous tensor's own storage, else copied.
  void swap_weights(const std::vector<std::pair<std::string, Tensor>>& weights,
                    const std::string& from = {});
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
