// --bench: do_bench-style timing of a compiled graph or an .fxo artifact (docs/design.md §6): CUDA
// events on resident device buffers for CUDA plans, the host's monotonic clock otherwise. Both
// share one timing loop (warm-up, flushes, percentiles, per-step profile).
#pragma once

#include "driver/pipeline.h"
#include "frontend/pass_timer.h"
#include "runtime/artifact.h"

#include <string>
#include <vector>

namespace fxc {

struct BenchOptions {
  double budget_ms = 1000; ///< wall time of the timing loop, flushes included
  int warmup = 3;          ///< untimed runs first
  int min_runs = 5;
  int max_runs = 10000;
  int profile_runs = 20; ///< per-step timing runs (each step's median is reported)
  /// Buffer written before every timed run so that no input is still cached: 256 MiB of device
  /// memory on cuda (H100/H200 L2 is 50-60 MB), 64 MiB of host memory on the CPU.
  size_t cuda_flush_bytes = size_t(256) << 20;
  size_t cpu_flush_bytes = size_t(64) << 20;
};

/// One kernel launch or extern call of the compiled plan.
struct BenchStep {
  std::string graph; ///< the pipeline graph's folder name (model__0_inference_0.0)
  std::string name;  ///< kernel name, or the extern call's node
  bool kernel = true;
  double ms = 0;       ///< median over the profiled runs
  double start_ms = 0; ///< in the traced run: sum of the earlier steps' times (back to back)
  double run_ms = 0;   ///< in the traced run: this step's time
  int64_t bytes = 0;   ///< what it must move: operands read once, results written once
  int64_t flops = 0;   ///< matmul and convolution calls: 2·M·N·K (and the conv equivalent)
};

struct BenchResult {
  std::string device;     ///< "cpu" or "cuda"
  std::string timer;      ///< "cuda_events" or "host_clock"
  std::vector<double> ms; ///< every timed run, in order
  double median = 0, p20 = 0, p80 = 0, min = 0, max = 0;
  int warmup = 0;
  size_t flush_bytes = 0;
  int64_t bytes = 0; ///< every graph's inputs (weights included) read and outputs written
  int64_t flops = 0; ///< the matmul and convolution flops of one run
  double gbps = 0;   ///< bytes / median
  double tflops = 0; ///< flops / median
  /// CUDA plans: "replayed" when every timed run replayed captured CUDA graphs, else why not
  /// ("off" under --no-cuda-graphs, or the runner's note); empty on the host.
  std::string cuda_graph;
  std::vector<BenchStep> steps; ///< per-step medians, plan order (inductor only)
  double trace_start_us = 0;    ///< when the traced run began, on the pass clock (pass_timer.h)
};

/// Times the compiled graph of `c` (run_pipeline done) on `inputs`: warm-up, then timed runs
/// until the budget is spent, each after a cache flush; then the per-step profile. Inductor on
/// cuda runs on resident device buffers (inputs uploaded once) and is timed with CUDA events;
/// everything else with the host's steady clock around Executable::run.
BenchResult bench(Compilation& c, const std::vector<Tensor>& inputs, const BenchOptions& opts);

/// Times the loaded artifact `m` on `inputs` (its guards checked by the caller) as bench() times
/// a compiled graph: a CUDA artifact's plan runners with CUDA events on resident buffers (inputs
/// uploaded once; train mode's backward on the inputs one forward run gives), per-step times
/// from CudaPlanRunner::time_steps(); a CPU artifact with the host clock around
/// LoadedModel::run (guards, the copy of the inputs and outputs included) and per-step host times
/// from profiled runs of its plans. `bytes` counts every graph's user inputs, weights and outputs
/// (a compiled graph's inputs and outputs); BenchStep::graph is the graph's role ("inference",
/// "forward", "backward"). Interpreted (non-inductor) artifacts have no steps.
BenchResult bench_artifact(LoadedModel& m, const std::vector<Tensor>& inputs,
                           const BenchOptions& opts);

/// The text report: "median 1.234 ms (p20 1.2, p80 1.3, min 1.1) over 812 runs, 12.3 GB/s
/// effective (N bytes)[, 4.5 TFLOP/s (N flops)]", then a table of the steps.
std::string format_bench(const BenchResult& r);
/// The same as one JSON object (docs/perf.md documents the fields).
std::string format_bench_json(const BenchResult& r, const Options& o, double compile_ms);

} // namespace fxc
