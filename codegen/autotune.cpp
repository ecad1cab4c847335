// --max-autotune for CPU plans: candidate grains per kernel, timed, the fastest kept and cached.
#include "codegen/autotune.h"

#include "frontend/diag.h"
#include "frontend/random.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

namespace fxc {

namespace {

/// A candidate replaces the heuristic's grain only when it takes less than this fraction of
/// its time.
constexpr double kMinGain = 0.9;

std::string grain_config(int64_t g) {
  return "grain=" + std::to_string(g);
}

/// The grain of a cached choice, or 0 when it is not one this kernel can use.
int64_t parse_grain(const std::string& choice, int64_t xnumel) {
  if (choice.rfind("grain=", 0) != 0 || choice.size() > 6 + 18) return 0;
  int64_t g = 0;
  for (size_t i = 6; i < choice.size(); ++i) {
    if (choice[i] < '0' || choice[i] > '9') return 0;
    g = g * 10 + (choice[i] - '0');
  }
  return g >= 1 && g <= std::max<int64_t>(xnumel, 1) ? g : 0;
}

std::vector<int64_t> candidate_grains(int64_t heuristic, int64_t xnumel, int64_t threads) {
  std::vector<int64_t> c = {heuristic, 1, 16, 256};
  for (int64_t tasks_per_thread : {1, 2, 8}) {
    int64_t tasks = threads * tasks_per_thread;
    c.push_back((xnumel + tasks - 1) / tasks);
  }
  for (int64_t& g : c) g = std::clamp<int64_t>(g, 1, std::max<int64_t>(xnumel, 1));
  std::sort(c.begin() + 1, c.end());
  std::vector<int64_t> out;
  for (int64_t g : c)
    if (std::find(out.begin(), out.end(), g) == out.end()) out.push_back(g);
  return out;
}

std::string format_ms(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4fms", ms);
  return buf;
}

} // namespace

AutotuneCache open_autotune_cache(const std::string& dir, std::vector<std::string>* log) {
  AutotuneCache cache(dir);
  std::string note;
  cache.load(&note);
  if (!note.empty()) log->push_back(note);
  if (!cache.enabled()) log->push_back("no cache directory: the choices are not remembered");
  return cache;
}

std::vector<Tensor> autotune_inputs(const Plan& plan) {
  std::vector<Tensor> in;
  for (size_t i = 0; i < plan.input_metas.size(); ++i) {
    const TensorMeta& m = plan.input_metas[i];
    Tensor t = Tensor::empty(m.dtype, m.sizes);
    // Integer inputs are zero: an index input is then in range of any non-empty dimension.
    fill_random(m.dtype, size_t(t.numel()), 0x5eed + i, t.raw_data(), 0, 1);
    in.push_back(t);
  }
  return in;
}

std::vector<std::string> autotune_plan(Plan& plan, const std::vector<std::string>& kernel_code,
                                       ThreadPool& pool, const AutotuneOptions& opts,
                                       const std::string& source) {
  assert(kernel_code.size() == plan.kernels.size() && "one code text per kernel");
  std::vector<std::string> log;
  AutotuneCache cache = open_autotune_cache(opts.cache_dir, &log);
  for (const PlanExtern& e : plan.externs)
    if (e.kind == PlanExtern::Kind::Gemm) {
      log.push_back("matmuls are extern BLAS calls on the CPU: not tuned");
      break;
    }

  const int64_t threads = std::max<int64_t>(1, int64_t(pool.size()));
  struct Tuning {
    size_t kernel;
    std::string key;
    std::vector<int64_t> grains;
    std::vector<double> ms; ///< per candidate: the fastest run
  };
  std::vector<Tuning> pending;
  std::vector<bool> runs(plan.kernels.size(), false);
  for (const PlanStep& st : plan.steps)
    if (st.kind == PlanStep::Kind::Kernel) runs[size_t(st.index)] = true;
  for (size_t i = 0; i < plan.kernels.size(); ++i) {
    PlanKernel& k = plan.kernels[i];
    if (!runs[i] || !k.fn) continue;
    std::string key =
        AutotuneCache::kernel_key(kernel_code[i], "xnumel=" + std::to_string(k.xnumel) +
                                                      " threads=" + std::to_string(threads));
    if (const AutotuneEntry* e = cache.lookup(opts.device, key)) {
      if (int64_t g = parse_grain(e->choice, k.xnumel)) {
        k.grain = g;
        log.push_back(k.name + ": cached " + grain_config(g));
        continue;
      }
      log.push_back(k.name + ": cached choice '" + e->choice + "' does not fit; tuning again");
    }
    Tuning t{i, key, candidate_grains(k.grain, k.xnumel, threads), {}};
    t.ms.assign(t.grains.size(), std::numeric_limits<double>::infinity());
    pending.push_back(std::move(t));
  }
  if (pending.empty()) return log;

  std::map<std::string, size_t> by_name; // kernel name -> index into pending
  size_t rounds = 0;
  for (size_t j = 0; j < pending.size(); ++j) {
    by_name[plan.kernels[pending[j].kernel].name] = j;
    rounds = std::max(rounds, pending[j].grains.size());
  }
  std::vector<int64_t> heuristic;
  for (const Tuning& t : pending) heuristic.push_back(plan.kernels[t.kernel].grain);
  std::vector<Tensor> inputs = autotune_inputs(plan);
  try {
    // Round r runs every kernel at its r-th candidate (its last one once it has no more).
    for (size_t r = 0; r < rounds; ++r) {
      for (const Tuning& t : pending)
        plan.kernels[t.kernel].grain = t.grains[std::min(r, t.grains.size() - 1)];
      execute_plan(plan, inputs, pool, source); // warm-up
      for (int run = 0; run < std::max(1, opts.runs); ++run) {
        std::vector<StepProfile> prof;
        execute_plan(plan, inputs, pool, source, &prof);
        for (const StepProfile& p : prof) {
          auto it = by_name.find(p.name);
          if (!p.kernel || it == by_name.end()) continue;
          Tuning& t = pending[it->second];
          if (r < t.grains.size()) t.ms[r] = std::min(t.ms[r], p.ms);
        }
      }
    }
  } catch (const Error& e) {
    for (size_t j = 0; j < pending.size(); ++j)
      plan.kernels[pending[j].kernel].grain = heuristic[j];
    log.push_back(std::string("not tuned: the plan failed on random inputs: ") + e.what());
    return log;
  }
  for (size_t j = 0; j < pending.size(); ++j) {
    const Tuning& t = pending[j];
    PlanKernel& k = plan.kernels[t.kernel];
    size_t best = 0;
    AutotuneEntry e;
    e.kernel = k.name;
    std::string line = k.name + ": candidates ";
    for (size_t c = 0; c < t.grains.size(); ++c) {
      // Another grain must beat the heuristic's (candidate 0) clearly: at a few microseconds a
      // kernel's times differ by noise, and a smaller grain costs more tasks.
      if (t.ms[c] < t.ms[best] && t.ms[c] < kMinGain * t.ms[0]) best = c;
      if (!std::isfinite(t.ms[c])) continue; // never ran (cannot happen for a kernel step)
      e.candidates.push_back({grain_config(t.grains[c]), t.ms[c]});
      line += (c ? ", " : "") + grain_config(t.grains[c]) + " " + format_ms(t.ms[c]);
    }
    if (!std::isfinite(t.ms[best])) {
      k.grain = heuristic[j];
      log.push_back(k.name + ": not timed; keeping " + grain_config(k.grain));
      continue;
    }
    k.grain = t.grains[best];
    e.choice = grain_config(k.grain);
    size_t fastest = best;
    for (size_t c = 0; c < t.grains.size(); ++c)
      if (t.ms[c] < t.ms[fastest]) fastest = c;
    std::string why;
    if (fastest != best) {
      // The heuristic's grain stays unless another is clearly faster; say so, with the numbers.
      char pct[32];
      std::snprintf(pct, sizeof pct, "%.0f%%", 100.0 * (1.0 - t.ms[fastest] / t.ms[best]));
      why = " (kept: " + grain_config(t.grains[fastest]) + " measured " + pct +
            " faster, within the " + std::to_string(int(std::lround(100 * (1 - kMinGain)))) +
            "% a candidate must gain over the heuristic's grain to replace it)";
    }
    log.push_back(line + " -> " + e.choice + why);
    cache.insert(opts.device, t.key, std::move(e));
  }
  std::string err;
  if (!cache.save(&err)) log.push_back("choices not stored: " + err);
  return log;
}

} // namespace fxc
