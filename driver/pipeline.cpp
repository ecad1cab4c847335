// The one pipeline (DESIGN.md §1): the stage list, in order; each backend runs a prefix of it.
#include "driver/pipeline.h"

#include "frontend/printer.h"
#include "frontend/verify.h"
#include "runtime/interpreter.h"

#include <chrono>
#include <cstdio>

namespace fxc {

namespace {

// Runs graphs with the reference interpreter: the executable of the eager and aot backends.
class InterpretedExecutable : public Executable {
public:
  explicit InterpretedExecutable(const Compilation& c) : graphs_(c.graphs) {}

  NamedTensors run(const std::vector<Tensor>& user_inputs) override {
    NamedTensors out;
    const Graph& g = graphs_.front().graph;
    std::vector<Tensor> results = interpret(g, user_inputs);
    for (size_t i = 0; i < results.size(); ++i)
      out.emplace_back("output_" + std::to_string(i), std::move(results[i]));
    return out;
  }

private:
  std::vector<StageGraph> graphs_;
};

void write_graph_artifacts(Compilation& c, const char* stage, const char* file) {
  for (const StageGraph& sg : c.graphs)
    c.trace.write("inductor/" + sg.folder + "/" + file, print_readable(sg.graph), stage, sg.folder);
}

// Stage 1: the frontend. Import already happened; verify the graph and set up the one
// inference graph that later stages rewrite.
void stage_frontend(Compilation& c) {
  verify_graph(c.source);
  c.graphs.clear();
  c.graphs.push_back({"inference", c.source.name + "__0_inference_0.0", c.source});
  write_graph_artifacts(c, "frontend", "fx_graph_readable.txt");
}

struct Stage {
  const char* name;
  void (*run)(Compilation&);
};

// The pipeline. Order matters: each stage consumes the previous one's graphs.
const Stage kStages[] = {
    {"frontend", stage_frontend},
};

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace

int stage_count(Backend b) {
  switch (b) {
  case Backend::Eager: return 1;
  case Backend::AotEager: return 2;
  case Backend::AotEagerDecompPartition: return 3;
  case Backend::Inductor: return 4;
  }
  return 1;
}

void run_pipeline(Compilation& c) {
  int n = stage_count(c.opts.backend);
  int available = int(sizeof kStages / sizeof kStages[0]);
  if (n > available)
    throw std::runtime_error(std::string("backend '") + backend_name(c.opts.backend) +
                             "' needs stages that are not built yet");
  for (int i = 0; i < n; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    kStages[i].run(c);
    if (c.opts.verify_each)
      for (const StageGraph& sg : c.graphs) verify_graph(sg.graph);
    double ms = ms_since(t0);
    c.trace.log(kStages[i].name, "done", ms);
    if (c.opts.verbose) std::fprintf(stderr, "fxc: %s: %.3f ms\n", kStages[i].name, ms);
  }
  c.executable = std::make_unique<InterpretedExecutable>(c);
}

} // namespace fxc
