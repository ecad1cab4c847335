// --trace=f.json: a Chrome trace of the compile passes and of the kernels of one --bench run.
#include "driver/chrome_trace.h"

#include "frontend/diag.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <set>
#include <string>

namespace fxc {

void write_chrome_trace(const std::string& path, const std::vector<PassSpan>& passes,
                        const std::vector<BenchStep>& steps, double kernels_start_us,
                        const std::string& kernels_track) {
  using json = nlohmann::ordered_json;
  json events = json::array();
  auto meta = [&](const char* what, int tid, const std::string& name) {
    json e = {{"name", what}, {"ph", "M"}, {"pid", 1}};
    if (tid) e["tid"] = tid;
    e["args"] = {{"name", name}};
    events.push_back(e);
  };
  // The driver's passes on track 1, the kernels of a benchmarked run on track 2, and passes that
  // ran on other threads (the CUDA kernels' code generation) on a track per thread from 3 on.
  auto track = [](const PassSpan& s) { return s.thread == 0 ? 1 : 2 + s.thread; };
  meta("process_name", 0, "fxc");
  meta("thread_name", 1, "compile passes");
  if (!steps.empty()) meta("thread_name", 2, kernels_track);
  std::set<int> workers;
  for (const PassSpan& s : passes)
    if (s.thread != 0) workers.insert(s.thread);
  for (int w : workers)
    meta("thread_name", 2 + w, "compile passes (worker " + std::to_string(w) + ")");
  for (const PassSpan& s : passes)
    events.push_back({{"name", s.name},
                      {"cat", "pass"},
                      {"ph", "X"},
                      {"ts", s.start_us},
                      {"dur", s.dur_us},
                      {"pid", 1},
                      {"tid", track(s)},
                      {"args", {{"depth", s.depth}}}});
  for (const BenchStep& s : steps)
    events.push_back({{"name", s.name},
                      {"cat", s.kernel ? "kernel" : "extern"},
                      {"ph", "X"},
                      {"ts", kernels_start_us + 1000 * s.start_ms},
                      {"dur", 1000 * s.run_ms},
                      {"pid", 1},
                      {"tid", 2},
                      {"args", {{"graph", s.graph}, {"bytes", s.bytes}, {"flops", s.flops}}}});
  json doc = {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
  std::ofstream f(path, std::ios::binary);
  f << doc.dump(1) << "\n";
  if (!f) throw Error(path, "cannot write the trace file");
}

} // namespace fxc
