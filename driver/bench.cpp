// --bench: do_bench-style timing of a compiled graph or an .fxo (docs/design.md §6): CUDA events on
// resident device buffers for CUDA plans, the host's monotonic clock otherwise.
#include "driver/bench.h"

#include "passes/partition.h"
#include "runtime/cuda_driver.h"
#include "runtime/plan_executor.h"
#ifdef FXC_HAVE_CODEGEN
#include "codegen/inductor.h"
#endif

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
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

int64_t bytes_of(const TensorMeta& m) {
  return m.numel() * int64_t(dtype_size(m.dtype));
}

// The multiply-add flops of a matmul or convolution node (2 per multiply-add); 0 for others.
int64_t node_flops(const Graph& g, const Node& n) {
  if (n.outputs.empty()) return 0;
  std::vector<ValueId> in = n.tensor_inputs();
  const TensorMeta& out = g.values[n.outputs[0]].meta;
  auto last_dim = [&](size_t i) -> int64_t {
    if (i >= in.size() || g.values[in[i]].meta.sizes.empty()) return 0;
    return g.values[in[i]].meta.sizes.back();
  };
  const std::string& t = n.target;
  auto is = [&](const char* op) { return t.rfind(op, 0) == 0; };
  if (is("aten.mm.") || is("aten.bmm.") || is("aten.matmul.") || is("aten.linear."))
    return 2 * out.numel() * last_dim(0);
  if (is("aten.addmm.") || is("aten.baddbmm.")) return 2 * out.numel() * last_dim(1);
  if (is("aten.conv2d.") || is("aten.convolution.") || is("aten._convolution.")) {
    if (in.size() < 2) return 0;
    const TensorMeta& w = g.values[in[1]].meta;
    if (w.sizes.empty() || w.sizes[0] == 0) return 0;
    bool transposed = is("aten.convolution.") && n.arg("transposed").kind == Arg::Kind::Bool &&
                      n.arg("transposed").b;
    int64_t per_out = w.numel() / w.sizes[0]; // (C / groups) · kh · kw
    return 2 * (transposed ? g.values[in[0]].meta.numel() : out.numel()) * per_out;
  }
  if (is("aten.scaled_dot_product_attention.") && in.size() >= 3) {
    const TensorMeta& q = g.values[in[0]].meta;
    const TensorMeta& k = g.values[in[1]].meta;
    const TensorMeta& v = g.values[in[2]].meta;
    if (q.sizes.size() < 2 || k.sizes.size() < 2 || v.sizes.empty()) return 0;
    int64_t s = k.sizes[k.sizes.size() - 2];
    return 2 * q.numel() * s + 2 * (q.numel() / q.sizes.back()) * s * v.sizes.back();
  }
  return 0;
}

// The multiply-add flops of a plan's extern call, as node_flops counts its node: a gemm's
// 2·(output elements)·K, a convolution's 2·(output elements)·(C / groups)·R·S (its gradients the
// same), a fallback's node.
int64_t extern_flops(const PlanExtern& e) {
  if (e.outputs.empty()) return 0;
  const TensorMeta& out = e.outputs[0].meta;
  switch (e.kind) {
  case PlanExtern::Kind::Gemm:
    if (e.inputs.empty() || e.inputs[0].meta.sizes.empty()) return 0;
    return 2 * out.numel() * e.inputs[0].meta.sizes.back();
  case PlanExtern::Kind::Conv: {
    if (e.inputs.size() < 2) return 0;
    const TensorMeta& w = e.inputs[1].meta;
    if (w.sizes.empty() || w.sizes[0] == 0) return 0;
    return 2 * out.numel() * (w.numel() / w.sizes[0]);
  }
  case PlanExtern::Kind::ConvBackwardData:
  case PlanExtern::Kind::ConvBackwardFilter: { // the forward's flops: 2·|dy|·(C / groups)·R·S
    if (e.inputs.size() < 2) return 0;
    bool data = e.kind == PlanExtern::Kind::ConvBackwardData;
    const TensorMeta& dy = e.inputs[data ? 0 : 1].meta;
    const TensorMeta& w = data ? e.inputs[1].meta : out;
    if (w.sizes.empty() || w.sizes[0] == 0) return 0;
    return 2 * dy.numel() * (w.numel() / w.sizes[0]);
  }
  case PlanExtern::Kind::Attention: { // 2·B·H·Sq·Skv·(D + Dv), half of it under a causal mask
    if (e.inputs.size() != 3 || e.inputs[0].meta.sizes.size() != 4) return 0;
    const TensorMeta& q = e.inputs[0].meta;
    int64_t skv = e.inputs[1].meta.sizes[2], dv = e.inputs[2].meta.sizes[3];
    int64_t f = 2 * (q.numel() / q.sizes[3]) * skv * (q.sizes[3] + dv);
    return e.causal ? f / 2 : f;
  }
  case PlanExtern::Kind::Fallback: {
    if (!e.graph) return 0;
    int64_t f = 0;
    for (const Node& n : e.graph->nodes) f += node_flops(*e.graph, n);
    return f;
  }
  }
  return 0;
}

// One profiled run of every graph: each graph's steps in plan order.
using StepRuns = std::vector<std::vector<StepProfile>>;

// What bench() times: a compilation's graphs or a loaded artifact's, as the same pieces.
struct Subject {
  std::string device;                   // "cpu" or "cuda"
  int64_t bytes = 0;                    // every graph's inputs (weights too) and outputs
  std::vector<std::string> graph_names; // per graph, for BenchStep::graph
  // CUDA plans: each graph's runner and its inputs for one step (the backward's from one
  // forward run); timed on resident buffers with CUDA events. Empty: the host clock.
  std::vector<CudaPlanRunner*> runners;
  std::vector<std::vector<Tensor>> runner_inputs;
  std::function<void()> host_run;         // one whole run, for the host clock
  std::function<StepRuns()> host_profile; // host per-step times; null: none for this backend
  // The flops of the extern call `name` of graph `graph`.
  std::function<int64_t(size_t graph, const std::string& name)> extern_flops;
};

struct Timing {
  std::string timer;
  std::function<void()> before; // the cache flush, untimed
  std::function<double()> timed_run;
  std::function<StepRuns()> profile; // null: no per-step profile for this backend
};

// CUDA plans: inputs uploaded once, runs queued on resident buffers, CUDA events around each
// run, a 256 MiB device buffer memset before it (flushes L2); per-step times from time_steps().
Timing cuda_timing(const Subject& s, const BenchOptions& o, std::shared_ptr<void>* keep) {
  cuda::Context& ctx = cuda::Context::get();
  std::vector<CudaPlanRunner*> runners = s.runners;
  assert(s.runner_inputs.size() == runners.size() && "inputs for every runner");
  for (size_t i = 0; i < runners.size(); ++i) runners[i]->upload(s.runner_inputs[i]);
  struct State {
    cuda::Context* ctx;
    cuda::DevicePtr flush = 0;
    size_t flush_bytes = 0;
    std::unique_ptr<cuda::Event> start, stop;
    int n = 0;
    ~State() {
      if (flush) ctx->mem_free(flush);
    }
  };
  auto st = std::make_shared<State>();
  st->ctx = &ctx;
  st->flush_bytes = o.cuda_flush_bytes;
  st->flush = ctx.mem_alloc(o.cuda_flush_bytes);
  st->start = ctx.create_event();
  st->stop = ctx.create_event();
  *keep = st;
  Timing t;
  t.timer = "cuda_events";
  t.before = [st] { st->ctx->fill_bytes(st->flush, uint8_t(++st->n), st->flush_bytes); };
  t.timed_run = [st, runners] {
    st->start->record();
    for (CudaPlanRunner* r : runners) r->run_resident();
    st->stop->record();
    return double(st->stop->elapsed_ms_since(*st->start));
  };
  t.profile = [runners] {
    StepRuns runs;
    for (CudaPlanRunner* r : runners) runs.push_back(r->time_steps());
    return runs;
  };
  return t;
}

// Everything else: the host's steady clock around a whole run, a 64 MiB host buffer written
// before it; per-step host times where the subject has them.
Timing host_timing(const Subject& s, const BenchOptions& o, std::shared_ptr<void>* keep) {
  auto flush = std::shared_ptr<char[]>(new char[o.cpu_flush_bytes]);
  *keep = flush;
  auto n = std::make_shared<int>(0);
  size_t bytes = o.cpu_flush_bytes;
  Timing t;
  t.timer = "host_clock";
  t.before = [flush, n, bytes] { std::memset(flush.get(), ++*n & 0xff, bytes); };
  t.timed_run = [run = s.host_run] {
    auto t0 = std::chrono::steady_clock::now();
    run();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  t.profile = s.host_profile;
  return t;
}

// Per-step medians over the profiled runs, with bytes and flops; the traced run is the one
// whose total is the median.
std::vector<BenchStep> profile_steps(const Subject& sub, const Timing& t, const BenchOptions& o,
                                     double* trace_start_us) {
  std::vector<StepRuns> runs;
  std::vector<double> started;
  for (int i = 0; i < o.profile_runs; ++i) {
    t.before();
    started.push_back(pass_clock_us());
    runs.push_back(t.profile());
  }
  if (runs.empty()) return {};
  std::vector<BenchStep> steps;
  for (size_t gi = 0; gi < runs[0].size() && gi < sub.graph_names.size(); ++gi) {
    for (size_t si = 0; si < runs[0][gi].size(); ++si) {
      const StepProfile& p = runs[0][gi][si];
      BenchStep s;
      s.graph = sub.graph_names[gi];
      s.name = p.name;
      s.kernel = p.kernel;
      s.bytes = p.bytes;
      if (!p.kernel) s.flops = sub.extern_flops(gi, p.name);
      std::vector<double> ms;
      for (const StepRuns& r : runs)
        if (gi < r.size() && si < r[gi].size()) ms.push_back(r[gi][si].ms);
      s.ms = percentile(ms, 0.5);
      steps.push_back(s);
    }
  }
  std::vector<double> totals;
  for (const StepRuns& r : runs) {
    double sum = 0;
    for (const auto& g : r)
      for (const StepProfile& p : g) sum += p.ms;
    totals.push_back(sum);
  }
  double med = percentile(totals, 0.5);
  size_t pick = 0;
  for (size_t i = 1; i < totals.size(); ++i)
    if (std::abs(totals[i] - med) < std::abs(totals[pick] - med)) pick = i;
  *trace_start_us = started[pick];
  double at = 0;
  size_t k = 0;
  for (const auto& g : runs[pick])
    for (const StepProfile& p : g) {
      if (k < steps.size()) {
        steps[k].start_ms = at;
        steps[k].run_ms = p.ms;
      }
      at += p.ms;
      ++k;
    }
  return steps;
}

// Warm-up, timed runs until the budget is spent (each after a flush), then the step profile.
BenchResult run_bench(const Subject& s, const BenchOptions& o) {
  BenchResult r;
  r.device = s.device;
  r.bytes = s.bytes;
  std::shared_ptr<void> keep;
  Timing t;
  if (!s.runners.empty()) {
    t = cuda_timing(s, o, &keep);
    r.flush_bytes = o.cuda_flush_bytes;
  } else {
    t = host_timing(s, o, &keep);
    r.flush_bytes = o.cpu_flush_bytes;
  }
  r.timer = t.timer;
  r.warmup = o.warmup;
  for (int i = 0; i < o.warmup; ++i) {
    t.before();
    t.timed_run();
  }
  auto loop0 = std::chrono::steady_clock::now();
  auto wall = [&] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - loop0)
        .count();
  };
  while ((wall() < o.budget_ms || int(r.ms.size()) < o.min_runs) && int(r.ms.size()) < o.max_runs) {
    t.before();
    r.ms.push_back(t.timed_run());
  }
  r.median = percentile(r.ms, 0.5);
  r.p20 = percentile(r.ms, 0.2);
  r.p80 = percentile(r.ms, 0.8);
  r.min = *std::min_element(r.ms.begin(), r.ms.end());
  r.max = *std::max_element(r.ms.begin(), r.ms.end());
  if (!s.runners.empty()) {
    r.cuda_graph = "replayed";
    for (CudaPlanRunner* cr : s.runners)
      if (!cr->graph_captured()) {
        r.cuda_graph = cr->graph_note().empty() ? "off" : cr->graph_note();
        break;
      }
  }
  if (t.profile) r.steps = profile_steps(s, t, o, &r.trace_start_us);
  for (const BenchStep& st : r.steps) r.flops += st.flops;
  r.gbps = r.median > 0 ? double(r.bytes) / (r.median * 1e6) : 0;
  r.tflops = r.median > 0 ? double(r.flops) / (r.median * 1e9) : 0;
  return r;
}

#ifdef FXC_HAVE_CODEGEN
// The inputs of each compiled graph for one step: the user inputs, and in train mode the
// backward's (saved values and output gradients of ones) from one forward run.
std::vector<std::vector<Tensor>> graph_inputs(const Compilation& c, const std::vector<Tensor>& in,
                                              std::vector<Tensor>* forward_results) {
  std::vector<std::vector<Tensor>> out{in};
  if (c.compiled.size() == 1) return out;
  assert(c.compiled.size() == 2 && c.aot && "train mode compiles a forward and a backward graph");
  std::vector<Tensor> fw = forward_results ? *forward_results : c.compiled[0]->run(in);
  out.push_back(backward_inputs(fw, c.aot->num_user_outputs, c.aot->tangent_output_index));
  return out;
}

// Inductor on the CPU: per-step host times from run_profiled.
StepRuns cpu_profile(const Compilation& c, const std::vector<Tensor>& inputs) {
  StepRuns runs(c.compiled.size());
  std::vector<Tensor> fw = c.compiled[0]->run_profiled(inputs, &runs[0]);
  if (c.compiled.size() > 1) {
    std::vector<std::vector<Tensor>> ins = graph_inputs(c, inputs, &fw);
    c.compiled[1]->run_profiled(ins[1], &runs[1]);
  }
  return runs;
}
#endif

} // namespace

BenchResult bench(Compilation& c, const std::vector<Tensor>& inputs, const BenchOptions& o) {
  Subject s;
  s.device = c.opts.device == DeviceKind::Cuda ? "cuda" : "cpu";
  for (const StageGraph& sg : c.graphs) {
    for (const GraphInput& in : sg.graph.inputs)
      s.bytes += bytes_of(sg.graph.values[in.value].meta);
    for (ValueId v : sg.graph.outputs) s.bytes += bytes_of(sg.graph.values[v].meta);
    s.graph_names.push_back(sg.folder);
  }
  s.extern_flops = [&c](size_t gi, const std::string& name) -> int64_t {
    const Graph& g = c.graphs.at(gi).graph;
    for (const Node& n : g.nodes)
      if (n.name == name) return node_flops(g, n);
    return 0;
  };
  Executable* exe = c.executable.get();
  s.host_run = [exe, &inputs] { exe->run(inputs); };
#ifdef FXC_HAVE_CODEGEN
  if (s.device == "cuda" && !c.compiled.empty() && c.compiled[0]->cuda_runner()) {
    for (auto& cg : c.compiled) s.runners.push_back(cg->cuda_runner());
    s.runner_inputs = graph_inputs(c, inputs, nullptr);
  }
  if (!c.compiled.empty()) s.host_profile = [&c, &inputs] { return cpu_profile(c, inputs); };
#endif
  return run_bench(s, o);
}

BenchResult bench_artifact(LoadedModel& m, const std::vector<Tensor>& inputs,
                           const BenchOptions& o) {
  const CompiledArtifact& a = m.artifact();
  assert(!a.graphs.empty() && "an artifact has a graph");
  Subject s;
  s.device = a.device;
  bool plans = true; // every graph a host plan (inductor), so there are steps to profile
  for (const ArtifactGraph& g : a.graphs) {
    s.graph_names.push_back(g.role);
    if (g.kind == ArtifactGraph::Kind::Interpreted) {
      plans = false;
      for (const GraphInput& in : g.graph->inputs)
        s.bytes += bytes_of(g.graph->values[in.value].meta);
      for (ValueId v : g.graph->outputs) s.bytes += bytes_of(g.graph->values[v].meta);
      continue;
    }
    // The plan's user inputs, its weights and its outputs: what a compiled graph's inputs
    // (parameters included) and outputs count.
    for (const TensorMeta& in : g.plan.input_metas) s.bytes += bytes_of(in);
    for (const auto& [slot, w] : g.plan.constant_slots) s.bytes += bytes_of(w.meta());
    for (const PlanView& out : g.plan.outputs) s.bytes += bytes_of(out.meta);
  }
  s.extern_flops = [&a](size_t gi, const std::string& name) -> int64_t {
    for (const PlanExtern& e : a.graphs.at(gi).plan.externs)
      if (e.name == name) return extern_flops(e);
    return 0;
  };
  s.host_run = [&m, &inputs] { m.run(inputs); };
  const bool train = a.graphs.size() == 2;
  assert((train == (a.mode == "train")) && "train artifacts hold a forward and a backward graph");
  // The backward's inputs for one step, from the forward's results.
  auto backward_in = [&a](const std::vector<Tensor>& fw) {
    return backward_inputs(fw, a.num_user_outputs, a.tangent_output_index);
  };
  bool cuda = a.device == "cuda";
  for (size_t i = 0; i < a.graphs.size(); ++i) cuda = cuda && m.cuda_runner(i);
  if (cuda) {
    for (size_t i = 0; i < a.graphs.size(); ++i) s.runners.push_back(m.cuda_runner(i));
    s.runner_inputs.push_back(inputs);
    if (train) s.runner_inputs.push_back(backward_in(m.run_graph(0, inputs)));
  } else if (plans) {
    s.host_profile = [&m, &inputs, train, backward_in] {
      StepRuns runs(train ? 2 : 1);
      std::vector<Tensor> fw = m.run_graph(0, inputs, &runs[0]);
      if (train) m.run_graph(1, backward_in(fw), &runs[1]);
      return runs;
    };
  }
  return run_bench(s, o);
}

std::string format_bench(const BenchResult& r) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "median %.4f ms (p20 %.4f, p80 %.4f, min %.4f) over %zu runs, %.2f GB/s effective "
                "(%lld bytes)",
                r.median, r.p20, r.p80, r.min, r.ms.size(), r.gbps, (long long)r.bytes);
  std::string out = buf;
  if (r.flops > 0) {
    std::snprintf(buf, sizeof buf, ", %.3f TFLOP/s (%lld flops)", r.tflops, (long long)r.flops);
    out += buf;
  }
  std::snprintf(buf, sizeof buf, " [%s, %s", r.device.c_str(),
                r.timer == "cuda_events" ? "CUDA events, resident buffers, L2 flushed"
                                         : "host clock, caches flushed");
  out += buf;
  if (!r.cuda_graph.empty())
    out += r.cuda_graph == "replayed" ? ", CUDA graph replayed"
           : r.cuda_graph == "off"    ? ", no CUDA graph"
                                      : ", " + r.cuda_graph;
  out += "]\n";
  if (r.steps.empty()) return out;
  std::snprintf(buf, sizeof buf, "  %-56s %10s %10s %10s\n", "step", "median ms", "GB/s",
                "TFLOP/s");
  out += buf;
  for (const BenchStep& s : r.steps) {
    std::string name = (s.kernel ? "kernel " : "extern ") + s.name;
    std::snprintf(buf, sizeof buf, "  %-56s %10.4f %10.2f", name.c_str(), s.ms,
                  s.ms > 0 ? double(s.bytes) / (s.ms * 1e6) : 0.0);
    out += buf;
    if (s.flops > 0) {
      std::snprintf(buf, sizeof buf, " %10.3f", double(s.flops) / (s.ms * 1e9));
      out += buf;
    }
    out += "\n";
  }
  return out;
}

std::string format_bench_json(const BenchResult& r, const Options& o, double compile_ms) {
  nlohmann::ordered_json steps = nlohmann::ordered_json::array();
  for (const BenchStep& s : r.steps)
    steps.push_back({{"graph", s.graph},
                     {"kind", s.kernel ? "kernel" : "extern"},
                     {"name", s.name},
                     {"median_ms", s.ms},
                     {"bytes", s.bytes},
                     {"gbps", s.ms > 0 ? double(s.bytes) / (s.ms * 1e6) : 0.0},
                     {"flops", s.flops},
                     {"tflops", s.ms > 0 ? double(s.flops) / (s.ms * 1e9) : 0.0}});
  nlohmann::ordered_json j = {
      {"graph", o.input},         {"backend", backend_name(o.backend)},
      {"device", r.device},       {"mode", o.mode == Mode::Train ? "train" : "inference"},
      {"timer", r.timer},         {"cuda_graph", r.cuda_graph},
      {"warmup", r.warmup},       {"flush_bytes", r.flush_bytes},
      {"runs", r.ms.size()},      {"median_ms", r.median},
      {"p20_ms", r.p20},          {"p80_ms", r.p80},
      {"min_ms", r.min},          {"max_ms", r.max},
      {"bytes", r.bytes},         {"gbps", r.gbps},
      {"flops", r.flops},         {"tflops", r.tflops},
      {"compile_ms", compile_ms}, {"steps", steps}};
  return j.dump(1) + "\n";
}

} // namespace fxc
