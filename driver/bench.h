// --bench: do_bench-style timing of a compiled graph (DESIGN.md §6), on the host clock for cpu.
#pragma once

#include "driver/pipeline.h"

#include <string>
#include <vector>

namespace fxc {

struct BenchOptions {
  double budget_ms = 1000; ///< time spent in timed runs (at least min_runs runs)
  int warmup = 3;          ///< untimed runs first
  int min_runs = 5;
  size_t flush_bytes = size_t(64) << 20; ///< cache-flush buffer written before every timed run
};

struct BenchResult {
  std::vector<double> ms; ///< every timed run, in order
  double median = 0, p20 = 0, p80 = 0;
  int64_t bytes = 0;      ///< user inputs + weights read, results written
  double gbps = 0;        ///< bytes / median
};

/// Times `exe` on `inputs`: warm-up, then runs until the budget is spent, each preceded by
/// writing a buffer larger than the last-level cache; reports percentiles of the timed runs.
BenchResult bench(Executable& exe, const std::vector<Tensor>& inputs, const Graph& g,
                  const BenchOptions& opts);

/// One line: "median 1.234 ms (p20 1.2, p80 1.3) over 812 runs, 12.3 GB/s effective (... bytes)"
std::string format_bench(const BenchResult& r);
/// The same as a JSON object.
std::string format_bench_json(const BenchResult& r, const std::string& graph, const std::string& backend);

} // namespace fxc
