// Unit tests for the .fxg / .fxg.zst reader and writer: round trips, init rules, encodings.
#include "frontend/diag.h"
#include "frontend/fxg.h"
#include "frontend/import.h"
#include "frontend/printer.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace fxc;
namespace fs = std::filesystem;

namespace {

const char* const kFixtures[] = {"mlp",     "mlp.core",     "block",    "block.core",
                                 "convnet", "convnet.core", "norms",    "norms.core",
                                 "embed",   "embed.core",   "berttiny", "berttiny.core"};

std::string fixture(const std::string& name) {
  return std::string(FXC_FIXTURES_DIR) + "/" + name;
}

fs::path temp_dir() {
  fs::path d = fs::temp_directory_path() / ("fxc_fxg_test_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::string write_text(const std::string& name, const std::string& text) {
  fs::path p = temp_dir() / name;
  std::ofstream(p, std::ios::binary) << text;
  return p.string();
}

std::string error_of(const std::string& path) {
  try {
    import_graph(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Weights compare by value: the same bytes in the same logical order.
void check_same_weights(const Graph& a, const Graph& b) {
  REQUIRE(a.weights.size() == b.weights.size());
  for (const auto& [fqn, wa] : a.weights) {
    CAPTURE(fqn);
    const WeightData& wb = b.weights.at(fqn);
    CHECK(wa.meta.dtype == wb.meta.dtype);
    CHECK(wa.meta.sizes == wb.meta.sizes);
    REQUIRE(wa.meta.is_contiguous());
    REQUIRE(wb.meta.is_contiguous());
    size_t n = size_t(wa.meta.numel()) * dtype_size(wa.meta.dtype);
    size_t ia = size_t(wa.meta.storage_offset) * dtype_size(wa.meta.dtype);
    size_t ib = size_t(wb.meta.storage_offset) * dtype_size(wb.meta.dtype);
    CHECK(std::memcmp(wa.storage->data() + ia, wb.storage->data() + ib, n) == 0);
  }
}

} // namespace

TEST_CASE("fxg: every fixture round-trips through .fxg and .fxg.zst with identical printouts") {
  fs::path dir = temp_dir();
  for (const std::string name : kFixtures) {
    CAPTURE(name);
    Graph g = import_pt2(fixture(name + ".pt2"));
    const std::string printed = print_readable(g);
    for (const std::string ext : {".fxg", ".fxg.zst"}) {
      CAPTURE(ext);
      std::string path = (dir / (name + ext)).string();
      write_fxg(g, path);
      CHECK(fs::exists(dir / (name + ".safetensors")) == !g.weights.empty()); // norms has none
      std::string bytes = slurp(path);
      if (ext == ".fxg.zst")
        CHECK((unsigned char)bytes[0] == 0x28);
      else
        CHECK(bytes.rfind("{\n  \"format\": \"fxg\",\n  \"version\": 1,", 0) == 0);
      Graph back = import_graph(path);
      CHECK(print_readable(back) == printed);
      CHECK(back.name == name);
      CHECK(back.inputs.size() == g.inputs.size());
      for (size_t i = 0; i < g.inputs.size(); ++i) {
        CHECK(back.inputs[i].kind == g.inputs[i].kind);
        CHECK(back.inputs[i].fqn == g.inputs[i].fqn);
        CHECK(back.inputs[i].persistent == g.inputs[i].persistent);
      }
      for (size_t i = 0; i < g.nodes.size(); ++i) {
        CHECK(back.nodes[i].args == g.nodes[i].args);
        CHECK(back.nodes[i].given == g.nodes[i].given);
        CHECK(back.nodes[i].stack_trace == g.nodes[i].stack_trace);
        CHECK(back.nodes[i].nn_module_stack == g.nodes[i].nn_module_stack);
      }
      check_same_weights(g, back);
      // Writing what was read gives the same text: the format is a fixpoint.
      FxgWriteOptions opts;
      opts.weights_file = g.weights.empty() ? "" : name + ".safetensors";
      CHECK(fxg_to_json(back, opts) == fxg_to_json(g, opts));
    }
  }
  fs::remove_all(dir);
}

TEST_CASE("fxg: examples/mlp.fxg builds its weights from init rules, deterministically") {
  const std::string path = std::string(FXC_SOURCE_DIR) + "/examples/mlp.fxg";
  Graph g = import_graph(path);
  CHECK(g.name == "mlp");
  REQUIRE(g.nodes.size() == 6);
  CHECK(format_meta(g.values[g.outputs[0]].meta) == "f32[1024, 1024]");
  CHECK(
      print_readable(g).find(
          "    linear: \"f32[1024, 1024]\" = aten.linear.default(x, p_fc1_weight, p_fc1_bias)\n") !=
      std::string::npos);
  const WeightData& w = g.weights.at("fc1.weight");
  REQUIRE(w.init);
  CHECK(w.init->rule == "kaiming_uniform");
  CHECK(w.init->seed == 1);
  CHECK(w.init->params.at("fan_in") == 1024);
  CHECK(w.init->params.at("a") == doctest::Approx(std::sqrt(5.0)));
  CHECK_FALSE(w.storage->loaded());
  const float* f = reinterpret_cast<const float*>(w.storage->data());
  float lo = 1, hi = -1;
  for (size_t i = 0; i < 1024 * 1024; ++i) {
    lo = std::min(lo, f[i]);
    hi = std::max(hi, f[i]);
  }
  // nn.Linear: uniform in +-1/sqrt(fan_in) = +-1/32, filling the range.
  CHECK(lo >= -1.f / 32);
  CHECK(hi < 1.f / 32);
  CHECK(lo < -0.0312f);
  CHECK(hi > 0.0312f);
  const float* bias = reinterpret_cast<const float*>(g.weights.at("fc1.bias").storage->data());
  const float* bias2 = reinterpret_cast<const float*>(g.weights.at("fc2.bias").storage->data());
  CHECK(bias[0] != bias2[0]); // different seeds
  Graph again = import_graph(path);
  check_same_weights(g, again);

  // Init-only graphs are written without a weights file and keep their rules.
  fs::path dir = temp_dir();
  std::string out = (dir / "rules.fxg").string();
  write_fxg(g, out);
  CHECK_FALSE(fs::exists(dir / "rules.safetensors"));
  std::string text = slurp(out);
  CHECK(text.find("\"init\": {\"rule\": \"kaiming_uniform\", \"a\": 2.23606797749979, \"fan_in\": "
                  "1024.0, \"seed\": 1}") != std::string::npos);
  Graph back = import_graph(out);
  check_same_weights(g, back);
  CHECK(print_readable(back) == print_readable(g));
  CHECK(fxg_to_json(g, {}) == text);
  fs::remove_all(dir);
}

TEST_CASE("fxg: hand-written literals, keywords and rules read as documented") {
  const std::string text = R"({
    "format": "fxg", "version": 1,
    "inputs": [
      {"name": "x", "dtype": "f32", "shape": [2, 3]},
      {"name": "b_ids", "kind": "buffer", "fqn": "ids", "dtype": "i64", "shape": [3], "persistent": false,
       "init": {"rule": "arange", "start": 5}},
      {"name": "c_one", "kind": "constant", "fqn": "one", "dtype": "bf16", "shape": [], "init": {"rule": "ones"}}
    ],
    "nodes": [
      {"name": "gelu", "target": "torch.ops.aten.gelu.default",
       "args": [{"ref": "x"}, {"name": "approximate", "value": "tanh"}]},
      {"name": "full", "target": "aten.full.default",
       "args": [{"ints": [2, 3]}, {"float": "-inf"}, {"name": "dtype", "value": {"dtype": "f32"}},
                {"name": "device", "value": {"device": "cpu"}}, {"name": "pin_memory", "value": false}]},
      {"name": "add", "target": "aten.add.Tensor", "args": [{"ref": "gelu"}, {"ref": "full"}, {"name": "alpha", "value": 2.0}]},
      {"name": "split", "target": "aten.split.Tensor", "args": [{"ref": "add"}, 1, 1], "outputs": ["s0", "s1", "s2"]},
      {"name": "cat", "target": "aten.cat.default", "args": [{"refs": ["s2", "s0"]}, -1]}
    ],
    "outputs": ["cat", "s1"]
  })";
  std::string path = write_text("hand.fxg", text);
  Graph g = import_graph(path);
  CHECK(g.name == "hand");
  const std::string p = print_readable(g);
  CHECK(p.find("    gelu: \"f32[2, 3]\" = aten.gelu.default(x, approximate = 'tanh')\n") !=
        std::string::npos);
  CHECK(p.find("    full: \"f32[2, 3]\" = aten.full.default([2, 3], -inf, dtype = torch.float32, "
               "device = "
               "device(type='cpu'), pin_memory = False)\n") != std::string::npos);
  CHECK(p.find("    add: \"f32[2, 3]\" = aten.add.Tensor(gelu, full, alpha = 2.0)\n") !=
        std::string::npos);
  CHECK(p.find("    split = aten.split.Tensor(add, 1, 1)\n    s0: \"f32[2, 1]\" = split[0]\n") !=
        std::string::npos);
  CHECK(p.find("    cat: \"f32[2, 2]\" = aten.cat.default([s2, s0], -1)\n") != std::string::npos);
  CHECK(p.find("    return (cat, s1)\n") != std::string::npos);
  CHECK_FALSE(g.inputs[1].persistent);
  const int64_t* ids = reinterpret_cast<const int64_t*>(g.weights.at("ids").storage->data());
  CHECK((ids[0] == 5 && ids[1] == 6 && ids[2] == 7));
  uint16_t one;
  std::memcpy(&one, g.weights.at("one").storage->data(), 2);
  CHECK(one == 0x3f80);
}

TEST_CASE("fxg: readers reject bad graphs with one diagnostic") {
  auto err = [](const std::string& name, const std::string& text) {
    std::string p = write_text(name, text);
    std::string e = error_of(p);
    CHECK_MESSAGE(e.rfind(p + ": error: ", 0) == 0, e);
    return e.substr(e.find(": error: ") + 9);
  };
  const std::string head =
      R"({"format": "fxg", "version": 1, "inputs": [{"name": "x", "dtype": "f32", "shape": [4]}], )";
  CHECK(err("fmt.fxg", R"({"format": "onnx", "version": 1})") ==
        "not an fxg graph: \"format\" must be \"fxg\"");
  CHECK(err("key.fxg", head + R"("nodes": [], "outputs": ["x"], "extra": 1})") ==
        "unknown key \"extra\" at the top level");
  CHECK(err("out.fxg", head + R"("nodes": [], "outputs": ["y"]})") ==
        "graph output names undefined value 'y'");
  CHECK(
      err("dup.fxg",
          head +
              R"("nodes": [{"name": "x", "target": "aten.relu.default", "args": [{"ref": "x"}]}], "outputs": []})") ==
      "node 'x' (aten.relu.default): value 'x' is defined twice");
  CHECK(
      err("kw.fxg",
          head +
              R"("nodes": [{"name": "r", "target": "aten.gelu.default", "args": [{"name": "approximate", "value": "tanh"}, {"ref": "x"}]}], "outputs": []})") ==
      "node 'r' (aten.gelu.default): positional argument after a keyword argument");
  CHECK(
      err("enc.fxg",
          head +
              R"("nodes": [{"name": "r", "target": "aten.relu.default", "args": [{"tensor": "x"}]}], "outputs": []})") ==
      "node 'r' (aten.relu.default): unknown argument encoding {\"tensor\": ...} (see "
      "docs/fxg.md)");
  CHECK(
      err("outs.fxg",
          head +
              R"("nodes": [{"name": "s", "target": "aten.split.Tensor", "args": [{"ref": "x"}, 2]}], "outputs": []})") ==
      "node 's' (aten.split.Tensor): the op returns a list; name them in \"outputs\"");
  CHECK(
      err("seed.fxg",
          R"({"format": "fxg", "version": 1, "inputs": [{"name": "w", "kind": "parameter", "dtype": "f32", "shape": [4], "init": {"rule": "normal"}}], "nodes": [], "outputs": []})") ==
      "input 'w': init rule 'normal' needs a \"seed\"");
  CHECK(
      err("fan.fxg",
          R"({"format": "fxg", "version": 1, "inputs": [{"name": "w", "kind": "parameter", "dtype": "f32", "shape": [4], "init": {"rule": "kaiming_uniform", "seed": 1}}], "nodes": [], "outputs": []})") ==
      "input 'w': init rule 'kaiming_uniform' needs \"fan_in\"");
  CHECK(
      err("both.fxg",
          R"({"format": "fxg", "version": 1, "inputs": [{"name": "w", "kind": "parameter", "dtype": "f32", "shape": [4]}], "nodes": [], "outputs": []})") ==
      "input 'w': a parameter needs exactly one of \"init\" or \"file\"");
  CHECK(
      err("dtype.fxg",
          R"({"format": "fxg", "version": 1, "inputs": [{"name": "w", "dtype": "f33", "shape": [4]}], "nodes": [], "outputs": []})") ==
      "input 'w'.dtype: unknown dtype 'f33'");
  CHECK(
      err("big.fxg",
          R"({"format": "fxg", "version": 1, "inputs": [{"name": "w", "dtype": "f32", "shape": [4294967296, 4294967296]}], "nodes": [], "outputs": []})") ==
      "input 'w'.shape has a negative or overflowing size");
  std::string nofile = write_text(
      "nofile.fxg",
      R"({"format": "fxg", "version": 1, "inputs": [{"name": "w", "kind": "parameter", "dtype": "f32", "shape": [4], "file": "nope.safetensors"}], "nodes": [], "outputs": []})");
  CHECK(error_of(nofile).find("nope.safetensors: error: cannot read: ") != std::string::npos);
  // Writing a graph with file-backed weights but no weights file is refused.
  Graph g = import_pt2(fixture("mlp.pt2"));
  try {
    fxg_to_json(g, {});
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("weight 'fc1.weight' has no init rule") != std::string::npos);
  }
  fs::remove_all(temp_dir());
}

TEST_CASE("fxg: strided and offset weight views are written as contiguous tensors") {
  // A 3x2 view with strides {1, 3} at offset 1 into 7 floats: the transpose of rows of 3.
  auto storage = std::make_shared<Storage>(7 * sizeof(float));
  float* s = reinterpret_cast<float*>(storage->data());
  for (int i = 0; i < 7; ++i) s[i] = float(i);
  Graph g;
  g.name = "view";
  TensorMeta m;
  m.sizes = {3, 2};
  m.strides = {1, 3};
  m.storage_offset = 1;
  ValueId w = g.add_value("p_w", m);
  g.inputs.push_back({w, InputKind::Parameter, "w"});
  g.weights["w"] = WeightData{storage, m, std::nullopt};
  g.outputs = {w};
  fs::path dir = temp_dir();
  write_fxg(g, (dir / "view.fxg").string());
  Graph back = import_graph((dir / "view.fxg").string());
  const WeightData& b = back.weights.at("w");
  CHECK(format_meta(b.meta) == "f32[3, 2]");
  CHECK(b.meta.is_contiguous());
  const float* f = reinterpret_cast<const float*>(b.storage->data());
  const float want[] = {1, 4, 2, 5, 3, 6}; // element (i, j) = s[1 + i + 3 j]
  for (int i = 0; i < 6; ++i) CHECK(f[i] == want[i]);
  fs::remove_all(dir);
}
