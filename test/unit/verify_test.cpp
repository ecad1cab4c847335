// Unit tests for the graph verifier: real fixtures pass, each broken invariant gets its message.
#include "frontend/builder.h"
#include "frontend/diag.h"
#include "frontend/import.h"
#include "frontend/verify.h"

#include <doctest/doctest.h>

#include <memory>
#include <string>

using namespace fxc;

namespace {

TensorMeta meta(DType t, std::vector<int64_t> sizes) {
  TensorMeta m;
  m.dtype = t;
  m.strides = contiguous_strides(sizes);
  m.sizes = std::move(sizes);
  return m;
}

CallArg T(ValueId v) {
  return {"", Arg::of_tensor(v)};
}
CallArg I(int64_t v) {
  return {"", Arg::of_int(v)};
}

// x -> relu -> softmax(dim=1), with a parameter w added in between.
struct Small {
  Graph g;
  ValueId x, w, relu, add, softmax;
  Small() {
    g.source = "small.fxg";
    x = g.add_value("x", meta(DType::F32, {4, 8}));
    g.inputs.push_back({x, InputKind::UserInput, "x", true});
    w = g.add_value("p_w", meta(DType::F32, {8}));
    g.inputs.push_back({w, InputKind::Parameter, "w", true});
    g.weights["w"] = WeightData{std::make_shared<Storage>(8 * 4), meta(DType::F32, {8}), {}};
    relu = add_node1(g, "aten.relu.default", {T(x)});
    add = add_node1(g, "aten.add.Tensor", {T(relu), T(w)});
    softmax = add_node1(g, "aten._softmax.default", {T(add), I(1), {"", Arg::of_bool(false)}});
    g.outputs.push_back(softmax);
  }
};

// The verifier's message for g ("" when it passes).
std::string verify_error(const Graph& g) {
  try {
    verify_graph(g);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST_CASE("verify: a well-formed graph passes") {
  Small s;
  CHECK(verify_error(s.g) == "");
}

TEST_CASE("verify: every fixture passes") {
  for (const char* name : {"mlp", "block", "convnet", "norms", "embed", "berttiny"}) {
    for (std::string suffix : {"", ".core"}) {
      std::string path = std::string(FXC_FIXTURES_DIR) + "/" + name + suffix + ".pt2";
      CAPTURE(path);
      Graph g = import_pt2(path);
      CHECK(verify_error(g) == "");
    }
  }
}

TEST_CASE("verify: a use before the definition is reported") {
  Small s;
  // relu now reads the output of the softmax that comes after it.
  s.g.nodes[0].args[0] = Arg::of_tensor(s.softmax);
  CHECK(verify_error(s.g) ==
        "small.fxg: error: node 'relu' (aten.relu.default): uses '_softmax' before it is defined");
  s.g.nodes[0].args[0] = Arg::of_tensor(99);
  CHECK(verify_error(s.g) == "small.fxg: error: node 'relu' (aten.relu.default): argument 'self' "
                             "refers to unknown value #99");
}

TEST_CASE("verify: arity and argument kinds are checked against the schema") {
  Small s;
  s.g.nodes[2].args.pop_back();
  CHECK(verify_error(s.g) == "small.fxg: error: node '_softmax' (aten._softmax.default): has 2 "
                             "arguments but the schema takes 3");
  Small k;
  k.g.nodes[2].args[1] = Arg::of_float(1.0);
  CHECK(verify_error(k.g) == "small.fxg: error: node '_softmax' (aten._softmax.default): argument "
                             "'dim' expects int, got float");
  Small u;
  u.g.nodes[1].target = "aten.bogus.default";
  CHECK(verify_error(u.g) ==
        "small.fxg: error: node 'add' (aten.bogus.default): unknown op 'aten.bogus.default'");
}

TEST_CASE("verify: weights must cover their view") {
  Small s;
  s.g.weights["w"].storage = std::make_shared<Storage>(7 * 4);
  CHECK(verify_error(s.g) ==
        "small.fxg: error: parameter 'w' needs 32 bytes for f32[8] but its storage holds 28");
  s.g.weights["w"].storage = std::make_shared<Storage>(9 * 4);
  s.g.weights["w"].meta.storage_offset = 2;
  CHECK(verify_error(s.g).find("needs 40 bytes") != std::string::npos);
  s.g.weights.erase("w");
  CHECK(verify_error(s.g) == "small.fxg: error: parameter 'w' has no weights");
}

TEST_CASE("verify: names, outputs and metadata") {
  Small dup;
  dup.g.values[size_t(dup.add)].name = "relu";
  CHECK(verify_error(dup.g) == "small.fxg: error: two values are named 'relu'");
  Small outs;
  outs.g.nodes[0].outputs.push_back(outs.add);
  CHECK(verify_error(outs.g) ==
        "small.fxg: error: node 'relu' (aten.relu.default): has 2 outputs but the op returns 1");
  Small m;
  m.g.values[size_t(m.add)].meta = meta(DType::F32, {4, 9});
  CHECK(verify_error(m.g) == "small.fxg: error: node 'add' (aten.add.Tensor): output 'add' is "
                             "f32[4, 9] on cpu but the op gives f32[4, 8] on cpu");
  // Strides of size-1 dimensions do not matter; the others do.
  Small unit;
  unit.g.values[size_t(unit.x)].meta = meta(DType::F32, {4, 1});
  unit.g.values[size_t(unit.relu)].meta = meta(DType::F32, {4, 1});
  unit.g.values[size_t(unit.relu)].meta.strides = {1, 7};
  unit.g.nodes[1].args[1] = Arg::of_tensor(unit.relu); // add(relu, relu): drop the weight
  unit.g.values[size_t(unit.add)].meta = meta(DType::F32, {4, 1});
  unit.g.values[size_t(unit.softmax)].meta = meta(DType::F32, {4, 1});
  CHECK(verify_error(unit.g) == "");
  // A new tensor laid out densely in another order (how PyTorch's kernel allocated it: einsum's
  // permuted result, SDPA's) is the recorded layout, which every backend gives the value.
  Small perm;
  perm.g.values[size_t(perm.relu)].meta.strides = {1, 4};
  CHECK(verify_error(perm.g) == "");
  perm.g.values[size_t(perm.relu)].meta.strides = {1, 5}; // not dense: an error
  CHECK(verify_error(perm.g).find("but the op gives") != std::string::npos);
  unit.g.values[size_t(unit.relu)].meta.strides = {2, 1};
  CHECK(verify_error(unit.g).find(
            "output 'relu' is f32[4, 1]{2, 1} on cpu but the op gives f32[4, 1]") !=
        std::string::npos);
  Small bad;
  bad.g.values[size_t(bad.w)].meta = meta(DType::F32, {3});
  CHECK(verify_error(bad.g) ==
        "small.fxg: error: parameter 'w' holds f32[8] but graph input 'p_w' is f32[3]");
  Small dangling;
  dangling.g.outputs.push_back(42);
  CHECK(verify_error(dangling.g) == "small.fxg: error: graph output refers to unknown value #42");
}
