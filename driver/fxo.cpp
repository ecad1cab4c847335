// The driver's side of .fxo artifacts: from a Compilation to an CompiledArtifact, and `fxc --run
// x.fxo`.
#include "driver/fxo.h"

#include "driver/bench.h"
#include "driver/check.h"
#include "driver/driver.h"
#include "driver/logging.h"
#include "driver/tensor_io.h"
#include "frontend/custom_ops.h"
#include "frontend/diag.h"
#include "frontend/io_util.h"
#include "frontend/safetensors.h"
#include "frontend/specialize.h"
#ifdef FXC_HAVE_CODEGEN
#include "codegen/inductor.h"
#endif
#include "passes/partition.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

namespace fxc {

namespace {

// Plugin ops a graph calls.
void collect_custom_ops(const Graph& g, std::set<std::string>* out) {
  for (const Node& n : g.nodes)
    if (find_custom_op(n.target)) out->insert(n.target);
}

class ArtifactExecutable : public Executable {
public:
  explicit ArtifactExecutable(LoadedModel& m) : m_(m) {}
  NamedTensors run(const std::vector<Tensor>& inputs) override { return m_.run(inputs); }

private:
  LoadedModel& m_;
};

// --log=guards: what the artifact assumes of each input, and whether this run's inputs pass.
void log_artifact_guards(const LoadedModel& m, const std::vector<Tensor>& inputs) {
  Logger& log = process_logger();
  if (!log.enabled(Artifact::Guards)) return;
  const CompiledArtifact& a = m.artifact();
  const std::vector<InputGuard>& gs = a.inputs;
  std::string text;
  if (a.symbolic) { // the sizes by the symbols' ranges, then which code runs these sizes
    const Graph& g = *a.symbolic;
    size_t k = 0;
    for (const GraphInput& in : g.inputs) {
      if (in.kind != InputKind::UserInput) continue;
      const TensorMeta& meta = g.values[size_t(in.value)].meta;
      std::string dims;
      for (size_t d = 0; d < meta.sizes.size(); ++d)
        dims += (d ? ", " : "") + (d < meta.sym_sizes.size() && !meta.sym_sizes[d].empty()
                                       ? format_sym(meta.sym_sizes[d])
                                       : std::to_string(meta.sizes[d]));
      text += "input_" + std::to_string(k) + " '" + (k < gs.size() ? gs[k].name : in.fqn) +
              "': dtype " + std::string(dtype_name(meta.dtype)) + ", shape " +
              std::string(dtype_name(meta.dtype)) + "[" + dims + "]\n";
      ++k;
    }
    for (const SymbolRange& r : g.symbols) text += "  " + format_range(r) + "\n";
    std::vector<TensorMeta> metas;
    for (const Tensor& t : inputs) metas.push_back(t.meta());
    SymBindings b;
    if (std::string f = bind_symbols(g, metas, &b); !f.empty())
      text += "the inputs FAIL: " + f + "\n";
    else if (b == a.bindings)
      text += "the inputs bind " + format_bindings(b) + ": the plans compiled for these sizes\n";
    else if (!a.generic.symbol.empty())
      text += "the inputs bind " + format_bindings(b) + ": the plans made for every size\n";
    else
      text += "the inputs bind " + format_bindings(b) + ": the reference interpreter (the plans " +
              "were compiled for " + format_bindings(a.bindings) + " only)\n";
    log.artifact(Artifact::Guards, text);
    return;
  }
  for (size_t k = 0; k < gs.size(); ++k) {
    const TensorMeta& g = gs[k].meta;
    bool ok = k < inputs.size() && check_input_guard(k, gs[k], inputs[k].meta()).empty();
    std::string strides;
    for (int64_t st : g.strides) strides += (strides.empty() ? "" : ", ") + std::to_string(st);
    text += "input_" + std::to_string(k) + " '" + gs[k].name + "': dtype " +
            std::string(dtype_name(g.dtype)) + ", shape " + format_meta(g) + ", strides [" +
            strides + "], device " + device_name(g.device) + (ok ? " (passes)" : " (FAILS)") + "\n";
  }
  log.artifact(Artifact::Guards, text);
}

} // namespace

WeightPrefetch::WeightPrefetch(const Graph& g) {
  for (const auto& [fqn, w] : g.weights)
    if (w.storage) storages_.push_back(w.storage);
  thread_ = std::thread([this] {
    for (const std::shared_ptr<Storage>& s : storages_) {
      if (stop_.load(std::memory_order_relaxed)) return;
      try {
        (void)s->data();
      } catch (const Error&) { // a weight that cannot be read fails where it is used
      }
    }
  });
}

WeightPrefetch::~WeightPrefetch() {
  stop_ = true;
  thread_.join();
}

namespace {

CompiledArtifact artifact_of(const Compilation& c);

// A dynamic inference graph with one symbol, compiled by inductor at `c.bindings`: compiled again
// at three more values so that four consecutive ones hold that binding, and the artifact made
// size-generic when their plans agree (runtime/artifact.h, make_size_generic). Says which under
// --log=guards.
void make_generic(const Compilation& c, CompiledArtifact& a) {
  const Options& o = c.opts;
  if (o.backend != Backend::Inductor || o.mode != Mode::Inference || !c.symbolic ||
      has_unbacked_symbols(*c.symbolic))
    return;
  const SymbolRange& r = c.symbolic->symbols[0];
  const int64_t v = c.bindings.at(r.name);
  // Sizes 0 and 1 are special (a size-1 dim's stride is any): the four values are 2 or more.
  const int64_t lo = std::max<int64_t>(r.min, 2), hi = r.max;
  Logger& log = process_logger();
  auto say = [&](const std::string& what) {
    log.artifact(Artifact::Guards, "dynamic shapes: " + what + "\n");
  };
  if (c.symbolic->symbols.size() != 1) {
    say("the plans hold at " + format_bindings(c.bindings) + " only (size-generic plans take one " +
        "symbol); other sizes run on the reference interpreter");
    return;
  }
  if (hi - lo < 3 || v < lo) {
    say("the plans hold at " + format_bindings(c.bindings) + " only (no four sizes of 2 or more " +
        "around it in range); other sizes run on the reference interpreter");
    return;
  }
  const int64_t start = std::clamp<int64_t>(v - 1, lo, hi - 3);
  std::vector<std::unique_ptr<CompiledArtifact>> probes;
  std::vector<std::pair<int64_t, const CompiledArtifact*>> at;
  DebugTrace quiet;
  for (int64_t x = start; x < start + 4; ++x) {
    if (x == v) {
      at.push_back({x, &a});
      continue;
    }
    SymBindings b{{r.name, x}};
    Compilation p(o, quiet, specialize(*c.symbolic, b));
    p.source.name = c.source.name;
    p.symbolic = c.symbolic;
    p.bindings = b;
    run_pipeline(p);
    probes.push_back(std::make_unique<CompiledArtifact>(artifact_of(p)));
    at.push_back({x, probes.back().get()});
  }
  std::string why = make_size_generic(a, at);
  if (why.empty())
    say("the plans hold at every size, " + format_range(r) + " (compiled at " + r.name + "=" +
        std::to_string(start) + ".." + std::to_string(start + 3) + ": " +
        std::to_string(a.generic.fields.size()) + " numbers change with it)");
  else
    say("the plans hold at " + format_bindings(c.bindings) + " only (" + why +
        "); other sizes run on the reference interpreter");
}

} // namespace

CompiledArtifact make_artifact(const Compilation& c) {
  CompiledArtifact a = artifact_of(c);
  make_generic(c, a);
  return a;
}

namespace {

CompiledArtifact artifact_of(const Compilation& c) {
  const Options& o = c.opts;
  bool cuda = o.device == DeviceKind::Cuda;
  CompiledArtifact a;
  a.name = c.source.name;
  a.backend = backend_name(o.backend);
  a.device = cuda ? "cuda" : "cpu";
  a.cuda_arch = cuda ? o.cuda_arch : "";
  a.mode = o.mode == Mode::Train ? "train" : "inference";
  a.dtype = o.dtype;
  a.inputs = input_specs(c.source);
  // The weights are made beside the kernels' machine code (below), for the writer.
  WeightPrefetch prefetch(c.source);
  std::set<std::string> custom;
  for (size_t i = 0; i < c.graphs.size(); ++i) {
    const StageGraph& sg = c.graphs[i];
    ArtifactGraph g;
    g.role = sg.role;
    collect_custom_ops(sg.graph, &custom);
#ifdef FXC_HAVE_CODEGEN
    if (o.backend == Backend::Inductor) {
      const CompiledGraph& cg = *c.compiled.at(i);
      g.kind = ArtifactGraph::Kind::Plan;
      g.plan = cg.plan();
      for (PlanKernel& k : g.plan.kernels) { // addresses of this process mean nothing in a file
        k.fn = nullptr;
        k.cuda_function = nullptr;
      }
      if (cuda) {
        g.ptx = cg.ptx_module();
        if (!g.plan.kernels.empty() && g.ptx.empty())
          throw Error(o.input,
                      "internal error: a CUDA build for an artifact without its PTX module");
      } else if (!g.plan.kernels.empty()) {
        g.objects = cg.object_codes();
      }
      // Named constants (parameters and buffers as the graph holds them) can be swapped.
      g.constant_names = name_constants(g.plan, sg.graph);
      a.graphs.push_back(std::move(g));
      continue;
    }
#endif
    g.kind = ArtifactGraph::Kind::Interpreted;
    g.graph = std::make_shared<Graph>(sg.graph);
    a.graphs.push_back(std::move(g));
  }
  a.custom_ops.assign(custom.begin(), custom.end());
  if (c.symbolic && o.mode == Mode::Inference) { // other sizes in range: the interpreter
    a.symbolic = c.symbolic;
    a.bindings = c.bindings;
  }
  if (o.mode == Mode::Train) {
    a.num_user_outputs = c.aot->num_user_outputs;
    a.tangent_output_index = c.aot->tangent_output_index;
    for (size_t i = 0; i < a.num_user_outputs; ++i)
      a.outputs.push_back("output_" + std::to_string(i));
    for (const std::string& n : c.aot->grad_names) a.outputs.push_back(n);
  } else {
    for (size_t i = 0; i < c.graphs.front().graph.outputs.size(); ++i)
      a.outputs.push_back("output_" + std::to_string(i));
  }
  return a;
}

} // namespace

bool is_artifact_file(const std::string& path) {
  if (path.size() > 4 && path.compare(path.size() - 4, 4, ".fxo") == 0) return true;
  std::ifstream f(path, std::ios::binary);
  char head[4] = {};
  if (!f.read(head, 4)) return false;
  return is_artifact(std::string_view(head, 4));
}

int run_artifact(const Options& o, BenchResult* benched) {
  if (!o.emit.empty() || o.emit_asm)
    throw UsageError("--emit needs a graph (.pt2, .fxg); " + o.input + " is a compiled artifact");
  if (o.bisect || o.minify || o.check_accuracy)
    throw UsageError("--bisect, --minify and --check-accuracy need a graph (.pt2, .fxg); " +
                     o.input + " is a compiled artifact");
  if (!o.run && !o.bench)
    throw UsageError(o.input + " is already compiled: run it with --run or --bench");
  auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<LoadedModel> m = LoadedModel::load(read_artifact_file(o.input, o.model), o.input);
  // Map, parse and check (the weights' checksums too), load the kernels, place the weights.
  const double load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const CompiledArtifact& a = m->artifact();
  if (o.verbose && a.models_in_file.size() > 1) {
    std::string names;
    for (const std::string& n : a.models_in_file) names += (names.empty() ? "" : ", ") + n;
    std::fprintf(stderr, "fxc: %s holds %zu models (%s); running '%s'\n", o.input.c_str(),
                 a.models_in_file.size(), names.c_str(), a.name.c_str());
  }
  if (o.verbose)
    std::fprintf(
        stderr, "fxc: load %s (%s, %s, %s%s): %.3f ms\n", o.input.c_str(), a.backend.c_str(),
        a.device.c_str(), a.mode.c_str(), a.dtype.empty() ? "" : (", --dtype=" + a.dtype).c_str(),
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  // The guards below judge the file's tensors: a wrong dtype or rank is the artifact's guard
  // failure, not a malformed inputs file.
  std::vector<Tensor> inputs = load_inputs(a.inputs, o, /*check_meta=*/false);
  log_artifact_guards(*m, inputs);
  if (std::string f = m->check_guards(inputs); !f.empty()) {
    process_logger().artifact(Artifact::Recompiles, "not recompiling " + o.input +
                                                        ": a compiled artifact holds no graph to "
                                                        "recompile; its guards failed: " +
                                                        f + "\n");
    throw Error(o.input, f + " (recompile the graph for these inputs)");
  }
  if (o.bench) {
    BenchResult r = bench_artifact(*m, inputs, BenchOptions{});
    // The report names the artifact's backend and mode, not the command line's defaults.
    Options ao = o;
    ao.mode = a.mode == "train" ? Mode::Train : Mode::Inference;
    for (Backend b :
         {Backend::Eager, Backend::AotEager, Backend::AotEagerDecompPartition, Backend::Inductor})
      if (a.backend == backend_name(b)) ao.backend = b;
    if (o.json)
      std::fputs(format_bench_json(r, ao, 0).c_str(), stdout);
    else
      std::printf("%s: %s: load %.1f ms; %s", o.input.c_str(), a.backend.c_str(), load_ms,
                  format_bench(r).c_str());
    if (benched) *benched = std::move(r);
    return 0;
  }
  ArtifactExecutable exe(*m);
  NamedTensors results = exe.run(inputs);
  Options checked = o; // --expect judges what the artifact computes: its --dtype's values
  checked.dtype = a.dtype;
  int status = write_and_expect(checked, results, a.mode == "train");
  if (o.outputs.empty() && o.expect.empty())
    for (const auto& [name, t] : results)
      std::printf("%s: %s\n", name.c_str(), summarize(t).c_str());
  return status;
}

namespace {

bool file_exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

} // namespace

int link_artifacts(const Options& o) {
  std::vector<CompiledArtifact> models;
  std::vector<std::string> from; // the file each model came from, for messages
  for (const std::string& arg : o.link_inputs) {
    std::string path = arg, rename;
    if (size_t eq = arg.find('='); eq != std::string::npos && !file_exists(arg)) {
      rename = arg.substr(0, eq);
      path = arg.substr(eq + 1);
      if (rename.empty()) throw UsageError("--link: '" + arg + "': an empty model name");
    }
    if (!file_exists(path)) throw Error(path, "no such file");
    if (!is_artifact_file(path))
      throw Error(path, "--link combines compiled artifacts; compile this graph first (fxc " +
                            path + " -o <name>.fxo)");
    std::vector<CompiledArtifact> ms = parse_artifact_models(ArtifactBytes::map_file(path), path);
    if (!rename.empty()) {
      if (ms.size() != 1)
        throw Error(path, "'" + rename +
                              "=' names the model of an artifact of one model; this "
                              "one holds " +
                              std::to_string(ms.size()));
      ms[0].name = rename;
    }
    for (CompiledArtifact& m : ms) {
      for (size_t k = 0; k < models.size(); ++k)
        if (models[k].name == m.name)
          throw Error(path, "a second model named '" + m.name + "' (" + from[k] +
                                " has one): rename one with NAME=" + path);
      models.push_back(std::move(m));
      from.push_back(path);
    }
  }
  std::vector<const CompiledArtifact*> list;
  for (const CompiledArtifact& m : models) list.push_back(&m);
  uint64_t size = 0;
  {
    OutputFile out(o.output, "cannot write output file");
    write_artifact(list, [&](std::string_view b) {
      out.write(b);
      size += b.size();
    });
    out.commit();
  }
  std::string names;
  for (const CompiledArtifact& m : models) names += (names.empty() ? "" : ", ") + m.name;
  log_message(Component::Driver, Level::Info,
              "wrote " + o.output + " (" + std::to_string(size) +
                  " bytes): " + std::to_string(models.size()) + " models: " + names);
  return 0;
}

} // namespace fxc
