// Freezing tests (MemoryPlanOptions::freeze, Plan::prepare): a --dtype=bf16 inference plan casts
// its weights once per loaded plan, not every run, and computes bit for bit what the per-run
// plan computes, through .fxo round trips, concurrent runs and weight swaps.
#include "codegen/inductor.h"
#include "driver/tensor_io.h"
#include "frontend/diag.h"
#include "frontend/import.h"
#include "frontend/safetensors.h"
#include "passes/autocast.h"
#include "passes/decompose.h"
#include "runtime/artifact.h"
#include "skip.h"

#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <set>
#include <thread>

using namespace fxc;
using fxc::testing::have_cuda;

namespace {

std::string fixture(const std::string& name) {
  return std::string(FXC_FIXTURES_DIR) + "/" + name;
}

std::vector<Tensor> fixture_inputs(const std::string& model) {
  auto all = read_safetensors(fixture(model + ".io.safetensors"));
  std::vector<Tensor> out;
  for (int i = 0;; ++i) {
    auto it = all.find("input_" + std::to_string(i));
    if (it == all.end()) break;
    out.push_back(Tensor::from_weight(it->second));
  }
  return out;
}

/// The fixture converted to bf16 as --dtype=bf16 does, decomposed for the inductor.
Graph bf16_graph(const std::string& model) {
  Graph g = decompose(autocast(import_graph(fixture(model + ".pt2")), DType::BF16));
  g.name = model;
  return g;
}

CompiledGraph compile(const Graph& g, bool freeze) {
  InductorOptions o;
  o.freeze = freeze;
  return compile_inductor(g, o);
}

/// Whether a and b hold the same bytes (same dtype and sizes).
bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes()) return false;
  Tensor x = a.contiguous(), y = b.contiguous();
  return std::memcmp(x.raw_data(), y.raw_data(), size_t(x.numel()) * dtype_size(x.dtype())) == 0;
}

void check_same(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("output " << i);
    CHECK(same_bits(got[i], want[i]));
  }
}

/// The kernel indices of a step list's kernel steps.
std::set<int> kernel_steps(const std::vector<PlanStep>& steps) {
  std::set<int> out;
  for (const PlanStep& s : steps)
    if (s.kind == PlanStep::Kind::Kernel) out.insert(s.index);
  return out;
}

CompiledArtifact artifact_of(const Graph& g, const CompiledGraph& cg) {
  CompiledArtifact a;
  a.name = g.name;
  a.backend = "inductor";
  a.device = "cpu";
  a.mode = "inference";
  a.inputs = input_specs(g);
  ArtifactGraph ag;
  ag.role = "inference";
  ag.plan = cg.plan();
  ag.objects = cg.object_codes();
  ag.constant_names = name_constants(ag.plan, g);
  for (size_t i = 0; i < ag.plan.outputs.size(); ++i)
    a.outputs.push_back("output_" + std::to_string(i));
  a.graphs.push_back(ag);
  return a;
}

std::vector<Tensor> values(const NamedResults& rs) {
  std::vector<Tensor> out;
  for (auto& [name, t] : rs) out.push_back(t);
  return out;
}

} // namespace

TEST_CASE("freeze: bf16 weight casts run once, in prepare; results equal the per-run plan") {
  for (const char* model : {"mlp", "block"}) {
    INFO(model);
    Graph g = bf16_graph(model);
    CompiledGraph frozen = compile(g, true), plain = compile(g, false);
    const Plan& fp = frozen.plan();
    const Plan& pp = plain.plan();
    CHECK(pp.prepare.empty());
    CHECK(pp.prepared_slots.empty());
    REQUIRE(!fp.prepare.empty());
    REQUIRE(!fp.prepared_slots.empty());
    // Every prepared step is a weight cast; none of them is also a per-run step.
    std::set<int> prep = kernel_steps(fp.prepare), run = kernel_steps(fp.steps);
    CHECK(prep.size() == fp.prepare.size());
    for (int k : prep) {
      INFO(fp.kernels[size_t(k)].name);
      CHECK(fp.kernels[size_t(k)].name.find("_to_copy") != std::string::npos);
      CHECK(run.count(k) == 0);
    }
    CHECK(run.size() + prep.size() == kernel_steps(pp.steps).size());
    // Per-run steps never allocate or free a prepared slot; no output lives in one.
    std::set<int> slots(fp.prepared_slots.begin(), fp.prepared_slots.end());
    for (const PlanStep& s : fp.steps)
      if (s.kind == PlanStep::Kind::Alloc || s.kind == PlanStep::Kind::Free)
        CHECK(slots.count(s.index) == 0);
    for (const PlanView& v : fp.outputs) CHECK(slots.count(v.slot) == 0);
    // The emitted C++ program prepares first.
    CHECK(frozen.output_code().find("void prepare() {") != std::string::npos);
    CHECK(plain.output_code().find("prepare()") == std::string::npos);

    std::vector<Tensor> in = fixture_inputs(model);
    std::vector<Tensor> want = plain.run(in);
    check_same(frozen.run(in), want);
    check_same(frozen.run(in), want); // prepared buffers are reused, not recomputed wrongly
  }
}

TEST_CASE("freeze: train plans and float32 plans without weight-only kernels prepare nothing") {
  Graph g = decompose(import_graph(fixture("mlp.pt2")));
  CompiledGraph cg = compile(g, true);
  // The float32 MLP reads its weights directly (BLAS): nothing is computed from weights alone.
  CHECK(cg.plan().prepare.empty());
  InductorOptions o;
  o.train = true;
  CompiledGraph train = compile_inductor(bf16_graph("mlp"), o);
  CHECK(train.plan().prepare.empty());
}

TEST_CASE("freeze: an .fxo keeps the prepare steps; concurrent runs and weight swaps agree") {
  Graph g = bf16_graph("mlp");
  CompiledGraph frozen = compile(g, true);
  CompiledArtifact a = artifact_of(g, frozen);
  std::string bytes = serialize_artifact(a);
  CHECK(serialize_artifact(a) == bytes); // deterministic
  CompiledArtifact back = parse_artifact(bytes, "m.fxo");
  const Plan& p = back.graphs[0].plan;
  CHECK(p.prepare.size() == frozen.plan().prepare.size());
  CHECK(p.prepared_slots == frozen.plan().prepared_slots);
  CHECK(serialize_artifact(back) == bytes);

  std::vector<Tensor> in = fixture_inputs("mlp");
  std::vector<Tensor> want = compile(g, false).run(in);
  auto m = LoadedModel::load(back, "m.fxo", 2);
  std::vector<Tensor> first = values(m->run(in));
  check_same(first, want);

  // Many threads' first runs race for the prepare of a freshly loaded model.
  auto fresh = LoadedModel::load(parse_artifact(bytes, "m.fxo"), "m.fxo", 2);
  std::atomic<int> bad{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 6; ++t)
    ts.emplace_back([&] {
      for (int r = 0; r < 40; ++r) {
        std::vector<Tensor> got = values(fresh->run(in));
        for (size_t i = 0; i < want.size(); ++i)
          if (!same_bits(got[i], want[i])) ++bad;
      }
    });
  for (std::thread& t : ts) t.join();
  CHECK(bad == 0);

  // A swapped weight is cast again: the result is the per-run plan's with the new weights.
  std::vector<std::pair<std::string, Tensor>> swaps;
  Graph g2 = g;
  for (const auto& [name, meta] : m->swappable_weights()) {
    Tensor w = Tensor::empty(meta.dtype, meta.sizes);
    REQUIRE(meta.dtype == DType::F32);
    for (int64_t i = 0; i < w.numel(); ++i)
      reinterpret_cast<float*>(w.raw_data())[i] = 0.25f * float(i % 13) - 1.0f;
    swaps.emplace_back(name, w);
    g2.weights[name] = WeightData{w.storage(), w.meta(), {}};
  }
  REQUIRE(!swaps.empty());
  m->swap_weights(swaps);
  std::vector<Tensor> swapped = values(m->run(in));
  std::vector<Tensor> want2 = compile(g2, false).run(in);
  check_same(swapped, want2);
  bool differs = false;
  for (size_t i = 0; i < want.size(); ++i) differs = differs || !same_bits(swapped[i], first[i]);
  CHECK(differs);
}

TEST_CASE("freeze: artifacts whose prepare steps break the rules are refused") {
  Graph g = bf16_graph("mlp");
  CompiledGraph frozen = compile(g, true);
  CompiledArtifact a = artifact_of(g, frozen);
  REQUIRE(!a.graphs[0].plan.prepare.empty());
  auto refused = [&](CompiledArtifact bad) {
    try {
      parse_artifact(serialize_artifact(bad), "bad.fxo");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // A prepare step reading a per-run slot (the first input's).
  CompiledArtifact b = a;
  Plan& p = b.graphs[0].plan;
  int k = p.prepare[0].index;
  p.kernels[size_t(k)].arg_slots[0] = p.input_slots[0];
  CHECK(refused(b).find("neither a constant nor prepared") != std::string::npos);
  // A per-run step freeing a prepared slot.
  CompiledArtifact c = a;
  c.graphs[0].plan.steps.push_back({PlanStep::Kind::Free, c.graphs[0].plan.prepared_slots[0]});
  CHECK(refused(c).find("frees a prepared slot") != std::string::npos);
  // An Alloc among the prepare steps.
  CompiledArtifact d = a;
  d.graphs[0].plan.prepare.push_back({PlanStep::Kind::Alloc, 0});
  CHECK(refused(d).find("allocates or frees a slot") != std::string::npos);
}

TEST_CASE("cuda gpu freeze: the runner prepares after the upload, before graph capture" *
          doctest::test_suite("gpu")) {
  if (!have_cuda()) return;
  for (const char* model : {"block", "convnet"}) {
    INFO(model);
    Graph g = bf16_graph(model);
    InductorOptions o;
    o.cuda = true;
    o.cuda_graphs = true;
    CompiledGraph frozen = compile_inductor(g, o);
    o.freeze = false;
    CompiledGraph plain = compile_inductor(g, o);
    REQUIRE(!frozen.plan().prepare.empty());
    std::vector<Tensor> in = fixture_inputs(model);
    std::vector<Tensor> want = plain.run(in);
    // Runs 1 and 2 go step by step; 3 and later replay a captured graph.
    for (int i = 0; i < 4; ++i) check_same(frozen.run(in), want);
  }
}
