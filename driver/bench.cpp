// --bench: do_bench-style timing of a compiled graph (DESIGN.md §6), on the host clock for cpu.
#include "driver/bench.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>

namespace fxc {

namespace {
double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double pos = q * double(v.size() - 1);
  size_t lo = size_t(pos);
  size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - double(lo));
}

int64_t bytes_of(const TensorMeta& m) { return m.numel() * int64_t(dtype_size(m.dtype)); }
} // namespace

BenchResult bench(Executable& exe, const std::vector<Tensor>& inputs, const Graph& g,
                  const BenchOptions& opts) {
  BenchResult r;
  for (const GraphInput& in : g.inputs) r.bytes += bytes_of(g.values[in.value].meta);
  for (ValueId v : g.outputs) r.bytes += bytes_of(g.values[v].meta);
  std::unique_ptr<char[]> flush(new char[opts.flush_bytes]);
  for (int i = 0; i < opts.warmup; ++i) exe.run(inputs);
  using clock = std::chrono::steady_clock;
  double spent = 0;
  for (int i = 0; spent < opts.budget_ms || i < opts.min_runs; ++i) {
    std::memset(flush.get(), i & 0xff, opts.flush_bytes);
    auto t0 = clock::now();
    exe.run(inputs);
    double ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
    r.ms.push_back(ms);
    spent += ms;
  }
  r.median = percentile(r.ms, 0.5);
  r.p20 = percentile(r.ms, 0.2);
  r.p80 = percentile(r.ms, 0.8);
  r.gbps = r.median > 0 ? double(r.bytes) / (r.median * 1e6) : 0;
  return r;
}

std::string format_bench(const BenchResult& r) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "median %.4f ms (p20 %.4f, p80 %.4f) over %zu runs, %.2f GB/s effective (%lld bytes)",
                r.median, r.p20, r.p80, r.ms.size(), r.gbps, (long long)r.bytes);
  return buf;
}

std::string format_bench_json(const BenchResult& r, const std::string& graph,
                              const std::string& backend) {
  nlohmann::ordered_json j = {{"graph", graph},    {"backend", backend}, {"device", "cpu"},
                              {"median_ms", r.median}, {"p20_ms", r.p20}, {"p80_ms", r.p80},
                              {"runs", r.ms.size()}, {"bytes", r.bytes},   {"gbps", r.gbps}};
  return j.dump();
}

} // namespace fxc
