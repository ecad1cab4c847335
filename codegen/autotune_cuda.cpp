// --max-autotune for CUDA plans: mapping candidates per kernel, cuBLASLt algorithms per matmul.
#include "codegen/autotune_cuda.h"

#include "frontend/diag.h"
#include "runtime/compare.h"
#include "runtime/cublaslt.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>

namespace fxc {

namespace {

/// A candidate replaces the heuristic's choice only when it takes less than this fraction of
/// its time (CUDA-event timings of a flushed run repeat to about a percent).
constexpr double kMinGain = 0.97;
/// Bytes written before each timed run: more than the L2 cache (60 MB on an H200).
constexpr size_t kFlushBytes = size_t(256) << 20;

std::string format_ms(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4fms", ms);
  return buf;
}

std::string algo_config(int a) {
  return "algo=" + std::to_string(a);
}

/// What a gemm call's algorithm list depends on besides the device: its operands' layouts,
/// the epilogue, TF32 and the library's version.
std::string gemm_problem(const Plan& plan, const PlanExtern& e) {
  std::string s = "gemm";
  for (const PlanView& v : e.inputs) s += " " + format_meta(v.meta);
  for (const PlanView& v : e.outputs) s += " -> " + format_meta(v.meta);
  s += std::string(" epilogue=") + epilogue_name(e.epilogue);
  s += plan.matmul_tf32 ? " tf32" : " fp32";
  return s;
}

/// One tuned step: a kernel's mappings or a matmul's algorithms.
struct Tuning {
  bool kernel = true;
  size_t index = 0;                ///< into kernels / plan.externs
  std::string key;                 ///< autotune cache key
  std::vector<std::string> labels; ///< per candidate
  std::vector<PtxKernel> ptx;      ///< kernels: per candidate (0: the heuristic's)
  std::vector<std::unique_ptr<cuda::Module>> modules; ///< kernels: per candidate (0: unused)
  std::vector<void*> functions;
  std::vector<double> ms; ///< per candidate: its fastest run
  bool cached = false;    ///< a cached choice (candidate 1), applied without timing
  size_t candidates() const { return labels.size(); }
};

/// Empty when every tuned result matches the heuristic's: the same values up to the reordering
/// of sums that other mappings and algorithms do (rtol = atol = 1e-3 for 32- and 64-bit floats,
/// 2e-2 for 16-bit floats, exact otherwise); else which output differs and how.
std::string differs(const std::vector<Tensor>& tuned, const std::vector<Tensor>& reference) {
  if (tuned.size() != reference.size()) return "the tuned plan has another number of outputs";
  for (size_t i = 0; i < tuned.size(); ++i) {
    CompareOptions co;
    DType d = reference[i].dtype();
    bool half = d == DType::F16 || d == DType::BF16;
    bool fl = half || d == DType::F32 || d == DType::F64;
    co.rtol = co.atol = half ? 2e-2 : fl ? 1e-3 : 0;
    CompareResult r = compare_tensors(tuned[i], reference[i], co);
    if (!r.ok) return "output " + std::to_string(i) + " differs from the heuristic's: " + r.message;
  }
  return "";
}

void apply_kernel(PlanKernel& k, const PtxKernel& ptx, void* function) {
  k.cuda_function = function;
  k.cuda_block = ptx.block;
  k.cuda_rows = ptx.rows;
}

} // namespace

std::vector<std::string> autotune_cuda_plan(const LoopProgram& p, Plan& plan,
                                            std::vector<CudaTunedKernel>& kernels,
                                            CudaPlanRunner& runner, const AutotuneOptions& opts,
                                            const std::string& arch, const std::string& libdevice) {
  assert(kernels.size() == plan.kernels.size() && "one tuned kernel per plan kernel");
  std::vector<std::string> log;
  AutotuneCache cache = open_autotune_cache(opts.cache_dir, &log);
  cuda::Context& ctx = cuda::Context::get();

  // What runs, in plan order; a profile of time_steps() has one entry per such step.
  std::vector<std::pair<bool, size_t>> profiled; // (kernel?, index)
  for (const PlanStep& st : plan.steps) {
    if (st.kind == PlanStep::Kind::Kernel) profiled.push_back({true, size_t(st.index)});
    if (st.kind == PlanStep::Kind::Extern) profiled.push_back({false, size_t(st.index)});
  }
  try {
    runner.upload(autotune_inputs(plan));
  } catch (const Error& e) {
    log.push_back(std::string("not tuned: the inputs do not upload: ") + e.what());
    return log;
  }

  // The candidate of `t` that the cache holds for it, logged; none when there is no entry or
  // its choice is not among t's candidates (then it is tuned again).
  auto cached_choice = [&](const Tuning& t, const std::string& name) -> std::optional<size_t> {
    const AutotuneEntry* e = cache.lookup(opts.device, t.key);
    if (!e) return std::nullopt;
    auto at = std::find(t.labels.begin(), t.labels.end(), e->choice);
    if (at == t.labels.end()) {
      log.push_back(name + ": cached choice '" + e->choice + "' does not fit; tuning again");
      return std::nullopt;
    }
    log.push_back(name + ": cached " + e->choice);
    return size_t(at - t.labels.begin());
  };
  std::vector<Tuning> pending;
  std::vector<PtxRequest> requests;                  // candidates to generate, for pending kernels
  std::vector<std::pair<size_t, size_t>> request_of; // (pending index, candidate)
  std::vector<bool> kernel_seen(plan.kernels.size(), false);
  std::vector<bool> extern_seen(plan.externs.size(), false);
  for (const auto& [is_kernel, i] : profiled) {
    if (is_kernel) {
      if (kernel_seen[i] || !kernels[i].kernel) continue;
      kernel_seen[i] = true;
      const Kernel& k = *kernels[i].kernel;
      std::vector<RowMapping> cands = nvptx_mapping_candidates(p, k);
      Tuning t;
      t.index = i;
      t.key =
          AutotuneCache::kernel_key(kernels[i].ptx.ll, "xnumel=" + std::to_string(k.xnumel) +
                                                           " rnumel=" + std::to_string(k.rnumel));
      for (const RowMapping& m : cands) t.labels.push_back(format_mapping(m));
      if (std::optional<size_t> c = cached_choice(t, plan.kernels[i].name)) {
        if (*c == 0) continue; // the heuristic's: nothing to change
        // Only the cached candidate is generated and loaded.
        t.labels = {t.labels[0], t.labels[*c]};
        t.cached = true;
        cands = {cands[0], cands[*c]};
      }
      if (t.candidates() < 2) continue;
      t.ptx.resize(t.candidates());
      t.modules.resize(t.candidates());
      t.functions.assign(t.candidates(), plan.kernels[i].cuda_function);
      t.ptx[0] = kernels[i].ptx;
      for (size_t c = 1; c < cands.size(); ++c) {
        requests.push_back({&k, cands[c]});
        request_of.push_back({pending.size(), c});
      }
      pending.push_back(std::move(t));
    } else {
      const PlanExtern& e = plan.externs[i];
      if (extern_seen[i] || e.kind != PlanExtern::Kind::Gemm) continue;
      extern_seen[i] = true;
      int count = 0;
      try {
        count = runner.gemm_algorithm_count(i);
      } catch (const Error& err) {
        log.push_back(e.name + ": not tuned: " + err.what());
        continue;
      }
      Tuning t;
      t.kernel = false;
      t.index = i;
      t.key = AutotuneCache::kernel_key(
          gemm_problem(plan, e), "cublasLt=" + std::to_string(cuda::CublasLt::get().version()));
      for (int a = 0; a < count; ++a) t.labels.push_back(algo_config(a));
      if (std::optional<size_t> c = cached_choice(t, e.name)) {
        plan.externs[i].algo = int(*c);
        continue;
      }
      if (count < 2) {
        log.push_back(e.name + ": cuBLASLt offers " + std::to_string(count) +
                      " algorithm(s): nothing to tune");
        continue;
      }
      pending.push_back(std::move(t));
    }
  }
  if (pending.empty()) return log;

  // The heuristic's results on these inputs, for checking the tuned plan's.
  std::vector<Tensor> reference;
  try {
    runner.time_steps();
    reference = runner.download();
  } catch (const Error& e) {
    log.push_back(std::string("not tuned: the plan fails on random inputs: ") + e.what());
    return log;
  }

  // Every candidate's PTX in one pass of the code generator, then loaded.
  std::vector<PtxKernel> generated = generate_ptx(p, requests, arch, libdevice);
  for (size_t r = 0; r < generated.size(); ++r) {
    auto [j, c] = request_of[r];
    Tuning& t = pending[j];
    t.ptx[c] = std::move(generated[r]);
    try {
      t.modules[c] = ctx.load_module(t.ptx[c].ptx, t.ptx[c].name + ".ptx");
      t.functions[c] = t.modules[c]->function(t.ptx[c].name);
    } catch (const cuda::CudaError& e) {
      log.push_back(plan.kernels[t.index].name + ": candidate " + t.labels[c] +
                    " does not load: " + e.what());
      t.functions[c] = nullptr;
    }
  }

  // Cached choices need no timing.
  std::vector<size_t> timed;
  for (size_t j = 0; j < pending.size(); ++j) {
    Tuning& t = pending[j];
    if (!t.cached) {
      t.ms.assign(t.candidates(), std::numeric_limits<double>::infinity());
      timed.push_back(j);
    } else {
      // Candidate 1 wins unless it did not load.
      t.ms = {1, t.functions[1] ? 0 : std::numeric_limits<double>::infinity()};
    }
  }
  std::vector<std::optional<size_t>> tuning_at(profiled.size()); // profile entry -> pending
  size_t rounds = 0;
  for (size_t j : timed) {
    rounds = std::max(rounds, pending[j].candidates());
    for (size_t s = 0; s < profiled.size(); ++s)
      if (profiled[s].first == pending[j].kernel && profiled[s].second == pending[j].index)
        tuning_at[s] = j;
  }
  if (!timed.empty()) {
    cuda::DevicePtr flush = 0;
    try {
      flush = ctx.mem_alloc(kFlushBytes);
      for (size_t r = 0; r < rounds; ++r) {
        for (size_t j : timed) {
          Tuning& t = pending[j];
          size_t c = std::min(r, t.candidates() - 1);
          if (t.kernel) {
            // A candidate that did not load runs the heuristic's kernel (and is not chosen).
            size_t use = t.functions[c] ? c : 0;
            apply_kernel(plan.kernels[t.index], t.ptx[use], t.functions[use]);
          } else {
            plan.externs[t.index].algo = int(c);
          }
        }
        try {
          runner.time_steps(); // warm-up: loads the kernels, prepares the matmuls
          for (int run = 0; run < std::max(1, opts.runs); ++run) {
            ctx.fill_bytes(flush, uint8_t(run + 1), kFlushBytes);
            std::vector<StepProfile> prof = runner.time_steps();
            for (size_t s = 0; s < prof.size() && s < tuning_at.size(); ++s) {
              if (!tuning_at[s]) continue;
              Tuning& t = pending[*tuning_at[s]];
              bool usable = !t.kernel || t.functions[std::min(r, t.candidates() - 1)];
              if (r < t.candidates() && usable) t.ms[r] = std::min(t.ms[r], prof[s].ms);
            }
          }
        } catch (const Error& e) {
          log.push_back("round " + std::to_string(r) +
                        " failed, its candidates are dropped: " + e.what());
          ctx.synchronize();
        }
      }
    } catch (const cuda::CudaError& e) {
      log.push_back(std::string("tuning stopped: ") + e.what());
    }
    if (flush) ctx.mem_free(flush);
  }

  // The choices, applied; they are kept only when the plan's results still match the
  // heuristic's (a candidate that computed something else would otherwise be chosen silently).
  std::vector<size_t> best(pending.size(), 0);
  std::vector<AutotuneEntry> entries(pending.size());
  std::vector<std::string> lines;
  for (size_t j = 0; j < pending.size(); ++j) {
    Tuning& t = pending[j];
    std::string name = t.kernel ? plan.kernels[t.index].name : plan.externs[t.index].name;
    entries[j].kernel = name;
    std::string line = name + ": candidates ";
    for (size_t c = 0; c < t.candidates(); ++c) {
      if (t.ms[c] < t.ms[best[j]] && t.ms[c] < kMinGain * t.ms[0]) best[j] = c;
      if (t.cached || !std::isfinite(t.ms[c])) continue;
      entries[j].candidates.push_back({t.labels[c], t.ms[c]});
      line += (c ? ", " : "") + t.labels[c] + " " + format_ms(t.ms[c]);
    }
    if (!std::isfinite(t.ms[best[j]])) {
      best[j] = 0;
      lines.push_back(name + ": not timed; keeping " + t.labels[0]);
    } else if (!t.cached) {
      entries[j].choice = t.labels[best[j]];
      lines.push_back(line + " -> " + entries[j].choice);
    }
  }
  auto apply = [&](bool chosen) {
    for (size_t j = 0; j < pending.size(); ++j) {
      Tuning& t = pending[j];
      size_t c = chosen ? best[j] : 0;
      if (t.kernel)
        apply_kernel(plan.kernels[t.index], t.ptx[c], t.functions[c]);
      else
        plan.externs[t.index].algo = int(c);
    }
  };
  apply(true);
  std::string mismatch = "the tuned plan does not run";
  try {
    runner.time_steps();
    mismatch = differs(runner.download(), reference);
  } catch (const Error& e) {
    mismatch += std::string(": ") + e.what();
  }
  log.insert(log.end(), lines.begin(), lines.end());
  if (!mismatch.empty()) {
    apply(false);
    log.push_back("choices discarded, the heuristic's kept: " + mismatch);
    return log;
  }
  for (size_t j = 0; j < pending.size(); ++j) {
    Tuning& t = pending[j];
    if (!t.cached && !entries[j].choice.empty())
      cache.insert(opts.device, t.key, std::move(entries[j]));
    if (t.kernel && best[j] != 0) {
      kernels[t.index].ptx = std::move(t.ptx[best[j]]);
      kernels[t.index].module = std::move(t.modules[best[j]]);
    }
  }
  std::string err;
  if (!cache.save(&err)) log.push_back("choices not stored: " + err);
  return log;
}

} // namespace fxc
