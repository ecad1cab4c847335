// Unit tests for matching core ATen's attention (bmm, softmax, bmm) back into
// scaled_dot_product_attention (passes/attention_match.h).
#include "aot_testing.h"
#include "frontend/import.h"
#include "frontend/safetensors.h"
#include "passes/attention_match.h"
#include "passes/autocast.h"
#include "passes/decompose.h"
#include "runtime/compare.h"

#include <doctest/doctest.h>

using namespace fxc;
using namespace fxc::testing;

namespace {

std::vector<Tensor> fixture_inputs(const std::string& model) {
  auto all = read_safetensors(std::string(FXC_FIXTURES_DIR) + "/" + model + ".io.safetensors");
  std::vector<Tensor> in;
  for (int i = 0;; ++i) {
    auto it = all.find("input_" + std::to_string(i));
    if (it == all.end()) break;
    in.push_back(Tensor::from_weight(it->second));
  }
  return in;
}

int count_target(const Graph& g, const std::string& target) {
  int n = 0;
  for (const Node& nd : g.nodes) n += nd.target == target;
  return n;
}

} // namespace

TEST_CASE("attention match: core exports converted to bf16 get their attention back") {
  // berttiny: two layers with an additive padding mask; block: one layer, no mask. Each under
  // --dtype=bf16's conversion (casts between the steps), matched, computes what it did.
  for (auto [model, layers] : {std::pair<const char*, int>{"berttiny", 2}, {"block", 1}}) {
    INFO(model);
    Graph g = autocast(import_graph(std::string(FXC_FIXTURES_DIR) + "/" + model + ".core.pt2"),
                       DType::BF16);
    int matched = 0;
    Graph m = match_attention(g, &matched);
    CHECK(matched == layers);
    CHECK(count_target(m, "aten.scaled_dot_product_attention.default") == layers);
    CHECK(count_target(m, "aten._softmax.default") == 0);
    CHECK(count_target(m, "aten.bmm.default") == count_target(g, "aten.bmm.default") - 2 * layers);
    for (const Node& n : m.nodes)
      if (n.target == "aten.scaled_dot_product_attention.default") CHECK(cudnn_attention(m, n));
    std::vector<Tensor> in = fixture_inputs(model);
    std::vector<Tensor> want = interpret(g, in), got = interpret(m, in);
    REQUIRE(got.size() == want.size());
    CompareOptions tol;
    tol.rtol = tol.atol = 3e-2; // bf16: the matched form rounds the scaled q and k once less
    for (size_t i = 0; i < got.size(); ++i) {
      CompareResult r = compare_tensors(got[i], want[i], tol);
      INFO("output " << i << ": " << r.message);
      CHECK(r.ok);
    }
  }
}

TEST_CASE("attention match: float32, unsupported head dims and other graphs are left alone") {
  // Float32 (cuDNN's fused attention takes f16/bf16): nothing matches.
  int matched = -1;
  Graph f32 = import_graph(std::string(FXC_FIXTURES_DIR) + "/block.core.pt2");
  Graph same = match_attention(f32, &matched);
  CHECK(matched == 0);
  CHECK(same.nodes.size() == f32.nodes.size());
  // A softmax between two bmms that is not attention's (no [B·H] flattening of 4-D values).
  TestGraph tg;
  ValueId a = tg.random_input("a", DType::BF16, {2, 8, 16});
  ValueId b = tg.random_input("b", DType::BF16, {2, 16, 8});
  ValueId s =
      tg.op("aten._softmax.default", {T(tg.op("aten.bmm.default", {T(a), T(b)})), I(-1), B(false)});
  tg.output(tg.op("aten.bmm.default", {T(s), T(a)}));
  match_attention(tg.g, &matched);
  CHECK(matched == 0);
}
