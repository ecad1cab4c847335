// Unit tests for the .pt2 importer, import dispatch and the error corpus (through the API).
#include "frontend/diag.h"
#include "frontend/import.h"
#include "frontend/io_util.h"
#include "frontend/schema.h"
#include "frontend/verify.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <zip.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
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

// Placeholders and ATen calls in PyTorch's printout (operator.getitem lines are not nodes in fxc:
// a multi-output node owns its outputs).
struct Counts {
  size_t inputs = 0, nodes = 0;
};
Counts count_graph_txt(const std::string& path) {
  std::ifstream f(path);
  REQUIRE(f);
  Counts c;
  std::string line;
  while (std::getline(f, line)) {
    if (line.find("= placeholder[") != std::string::npos) ++c.inputs;
    if (line.find("call_function[target=torch.ops.") != std::string::npos) ++c.nodes;
  }
  return c;
}

std::string error_of(const std::string& path) {
  try {
    import_graph(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::string read_zip_entry(const std::string& archive, const std::string& entry) {
  int err = 0;
  zip_t* z = zip_open(archive.c_str(), ZIP_RDONLY, &err);
  REQUIRE(z);
  zip_stat_t st;
  REQUIRE(zip_stat(z, entry.c_str(), 0, &st) == 0);
  std::string out(st.size, '\0');
  zip_file_t* f = zip_fopen(z, entry.c_str(), 0);
  REQUIRE(f);
  CHECK(zip_fread(f, out.data(), st.size) == zip_int64_t(st.size));
  zip_fclose(f);
  zip_discard(z);
  return out;
}

// Copies `src` to `dst`, replacing the entries named in `replace`.
void rewrite_zip(const std::string& src, const std::string& dst,
                 const std::map<std::string, std::string>& replace) {
  int err = 0;
  zip_t* in = zip_open(src.c_str(), ZIP_RDONLY, &err);
  REQUIRE(in);
  zip_t* out = zip_open(dst.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  REQUIRE(out);
  std::vector<std::string> keep; // buffers must outlive zip_close
  for (zip_int64_t i = 0; i < zip_get_num_entries(in, 0); ++i) {
    std::string name = zip_get_name(in, zip_uint64_t(i), 0);
    zip_source_t* s;
    auto it = replace.find(name);
    if (it != replace.end()) {
      keep.push_back(it->second);
      s = zip_source_buffer(out, keep.back().data(), keep.back().size(), 0);
    } else {
      s = zip_source_zip(out, in, zip_uint64_t(i), 0, 0, -1);
    }
    REQUIRE(s);
    REQUIRE(zip_file_add(out, name.c_str(), s, ZIP_FL_OVERWRITE) >= 0);
  }
  for (const auto& [name, bytes] : replace) { // entries the source does not have
    if (zip_name_locate(in, name.c_str(), 0) >= 0) continue;
    keep.push_back(bytes);
    zip_source_t* s = zip_source_buffer(out, keep.back().data(), keep.back().size(), 0);
    REQUIRE(s);
    REQUIRE(zip_file_add(out, name.c_str(), s, ZIP_FL_OVERWRITE) >= 0);
  }
  REQUIRE(zip_close(out) == 0);
  zip_discard(in);
}

fs::path temp_dir(const std::string& name) {
  fs::path d =
      fs::temp_directory_path() / ("fxc_pt2_test_" + std::to_string(::getpid()) + "_" + name);
  fs::create_directories(d);
  return d;
}

} // namespace

TEST_CASE("pt2: every fixture imports with the inputs and nodes of its graph.txt") {
  for (const std::string name : kFixtures) {
    CAPTURE(name);
    Graph g = import_pt2(fixture(name + ".pt2"));
    Counts c = count_graph_txt(fixture(name + ".graph.txt"));
    CHECK(g.name == name);
    CHECK(g.source == fixture(name + ".pt2"));
    CHECK(g.inputs.size() == c.inputs);
    CHECK(g.nodes.size() == c.nodes);
    CHECK(!g.outputs.empty());
    std::set<std::string> names;
    for (const Value& v : g.values) CHECK(names.insert(v.name).second);
    for (const Node& n : g.nodes) {
      REQUIRE(n.schema);
      CHECK(n.args.size() == n.schema->args.size());
      CHECK(n.target == n.schema->target);
      for (ValueId v : n.outputs) CHECK(g.values[v].producer == int32_t(&n - g.nodes.data()));
    }
    size_t weights = 0;
    for (const GraphInput& in : g.inputs) {
      if (in.kind == InputKind::UserInput) continue;
      ++weights;
      auto w = g.weights.find(in.fqn);
      REQUIRE(w != g.weights.end());
      CHECK(w->second.meta.dtype == g.values[in.value].meta.dtype);
      CHECK(w->second.meta.sizes == g.values[in.value].meta.sizes);
      CHECK_FALSE(w->second.storage->loaded()); // nothing is read before it is used
    }
    CHECK(g.weights.size() == weights);
  }
}

TEST_CASE("pt2: mlp has its parameters, user input, nodes and source locations") {
  Graph g = import_pt2(fixture("mlp.pt2"));
  REQUIRE(g.inputs.size() == 5);
  const char* fqns[] = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "x"};
  for (int i = 0; i < 5; ++i) {
    CHECK(g.inputs[i].fqn == fqns[i]);
    CHECK(g.inputs[i].kind == (i < 4 ? InputKind::Parameter : InputKind::UserInput));
  }
  CHECK(g.values[g.inputs[0].value].name == "p_fc1_weight");
  CHECK(format_meta(g.values[g.inputs[4].value].meta) == "f32[64, 256]");
  REQUIRE(g.nodes.size() == 6);
  const Node& lin = g.nodes[0];
  CHECK(lin.name == "linear");
  CHECK(lin.target == "aten.linear.default");
  CHECK(lin.arg("input") == Arg::of_tensor(g.inputs[4].value));
  CHECK(lin.arg("weight") == Arg::of_tensor(g.inputs[0].value));
  CHECK(lin.arg("bias") == Arg::of_tensor(g.inputs[1].value));
  CHECK(lin.stack_trace.find("File \"fixtures_probe.py\", line 14") == 0);
  CHECK(lin.nn_module_stack.find("L__self__fc1") != std::string::npos);
  const Node& pw = g.nodes[2];
  CHECK(pw.target == "aten.pow.Tensor_Scalar");
  CHECK(pw.arg("exponent") == Arg::of_int(2));
  REQUIRE(g.outputs.size() == 1);
  CHECK(g.values[g.outputs[0]].name == "pow_2");
}

TEST_CASE("pt2: weights are read lazily and equal the archive's bytes") {
  Graph g = import_pt2(fixture("mlp.pt2"));
  const WeightData& w = g.weights.at("fc1.weight");
  CHECK_FALSE(w.storage->loaded());
  std::string raw = read_zip_entry(fixture("mlp.pt2"), "mlp/data/weights/weight_0");
  REQUIRE(w.storage->nbytes() == raw.size());
  REQUIRE(raw.size() == 256 * 256 * 4);
  const std::byte* data = w.storage->data();
  CHECK(w.storage->loaded());
  CHECK(std::memcmp(data, raw.data(), raw.size()) == 0);
  float first[4];
  std::memcpy(first, data, sizeof first);
  for (float f : first) CHECK((f > -1.f / 16 && f < 1.f / 16)); // nn.Linear init bound 1/sqrt(256)
  CHECK(first[0] != first[1]);
}

TEST_CASE("pt2: stored, aligned entries are used in place; others are read through libzip") {
  // torch.export stores every entry uncompressed on a 64-byte boundary: mapped, no copy.
  Graph g = import_pt2(fixture("mlp.pt2"));
  const WeightData& w = g.weights.at("fc1.weight");
  CHECK(w.storage->is_borrowed());
  CHECK_FALSE(w.storage->loaded()); // its CRC-32 is still to be checked
  std::string raw = read_zip_entry(fixture("mlp.pt2"), "mlp/data/weights/weight_0");
  REQUIRE(w.storage->nbytes() == raw.size());
  CHECK(std::memcmp(w.storage->data(), raw.data(), raw.size()) == 0);
  CHECK(w.storage->loaded());

  // libzip compresses what it adds: that entry is inflated into a buffer, the others stay mapped.
  fs::path d = temp_dir("deflated");
  std::string copy = (d / "mlp.pt2").string();
  rewrite_zip(fixture("mlp.pt2"), copy, {{"mlp/data/weights/weight_0", raw}});
  Graph h = import_pt2(copy);
  const WeightData& inflated = h.weights.at("fc1.weight");
  CHECK_FALSE(inflated.storage->is_borrowed());
  CHECK(std::memcmp(inflated.storage->data(), raw.data(), raw.size()) == 0);
  fs::remove_all(d);
}

TEST_CASE("pt2: a mapped weight whose bytes changed fails its CRC-32 when first used") {
  fs::path d = temp_dir("crc_mapped");
  std::string copy = (d / "mlp.pt2").string();
  fs::copy_file(fixture("mlp.pt2"), copy);
  std::string raw = read_zip_entry(fixture("mlp.pt2"), "mlp/data/weights/weight_0");
  std::string file = read_file_bytes(copy);
  size_t at = file.find(raw.substr(0, 64));
  REQUIRE(at != std::string::npos);
  {
    std::FILE* f = std::fopen(copy.c_str(), "r+b");
    REQUIRE(f);
    std::fseek(f, long(at + 1000), SEEK_SET);
    std::fputc(~file[at + 1000] & 0xff, f);
    std::fclose(f);
  }
  Graph g = import_pt2(copy); // the import reads no weight
  const WeightData& w = g.weights.at("fc1.weight");
  REQUIRE(w.storage->is_borrowed());
  std::string what;
  try {
    w.storage->data();
  } catch (const Error& e) {
    what = e.what();
  }
  CHECK(what.find("entry 'mlp/data/weights/weight_0': CRC-32 mismatch (archive is corrupt)") !=
        std::string::npos);
  CHECK_FALSE(w.storage->loaded());
  fs::remove_all(d);
}

TEST_CASE("pt2: berttiny keeps non-persistent buffers under constants") {
  Graph g = import_pt2(fixture("berttiny.pt2"));
  const GraphInput* pos = nullptr;
  for (const GraphInput& in : g.inputs)
    if (in.fqn == "embeddings.position_ids") pos = &in;
  REQUIRE(pos);
  CHECK(pos->kind == InputKind::Buffer);
  CHECK_FALSE(pos->persistent);
  const WeightData& w = g.weights.at("embeddings.position_ids");
  CHECK(format_meta(w.meta) == "i64[1, 64]");
  const int64_t* ids = reinterpret_cast<const int64_t*>(w.storage->data());
  for (int64_t i = 0; i < 64; ++i) CHECK(ids[i] == i);
  // The exporter records `x + 0` on an int tensor as add.Tensor with a number; fxc binds the
  // Scalar overload, which PyTorch's wrapped-number rule makes equivalent.
  bool scalar_add = false;
  for (const Node& n : g.nodes)
    if (n.name == "add_2")
      scalar_add = n.target == "aten.add.Scalar" && n.arg("other") == Arg::of_int(0);
  CHECK(scalar_add);
}

TEST_CASE("pt2: numbers passed for tensors become 0-dim tensors of the op's result type") {
  // maximum(x, 0.5) and atan2(x, 1): ops without a Scalar overload (sub.Tensor(x, 1), as a
  // LLaMA-style export has it, binds sub.Scalar).
  fs::path dir = temp_dir("wrapped");
  const std::string entry = "mlp/models/model.json";
  auto model = nlohmann::json::parse(read_zip_entry(fixture("mlp.pt2"), entry));
  auto& nodes = model["graph_module"]["graph"]["nodes"];
  REQUIRE(nodes[1]["target"] == "torch.ops.aten.relu.default");
  nodes[1]["target"] = "torch.ops.aten.maximum.default";
  nodes[1]["inputs"].push_back({{"name", "other"}, {"arg", {{"as_float", 0.5}}}, {"kind", 1}});
  REQUIRE(nodes[4]["target"] == "torch.ops.aten.relu.default");
  nodes[4]["target"] = "torch.ops.aten.atan2.default";
  nodes[4]["inputs"].push_back({{"name", "other"}, {"arg", {{"as_int", 1}}}, {"kind", 1}});
  std::string path = (dir / "wrapped.pt2").string();
  rewrite_zip(fixture("mlp.pt2"), path, {{entry, model.dump()}});
  Graph g = import_pt2(path);
  auto node = [&](const std::string& name) -> const Node& {
    for (const Node& n : g.nodes)
      if (n.name == name) return n;
    FAIL("no node " << name);
    return g.nodes[0];
  };
  const Node& half = node("_wrapped_relu_other");
  CHECK(half.target == "aten.scalar_tensor.default");
  CHECK(half.arg("s") == Arg::of_float(0.5));
  CHECK(format_meta(g.values[half.outputs[0]].meta) == "f32[]");
  CHECK(node("relu").arg("other").tensor == half.outputs[0]);
  const Node& one = node("_wrapped_relu_1_other");
  CHECK(one.arg("s") == Arg::of_int(1));
  // f32 tensor and an int number: the number takes the tensor's dtype, as PyTorch promotes it.
  CHECK(format_meta(g.values[one.outputs[0]].meta) == "f32[]");
  CHECK(node("relu_1").target == "aten.atan2.default");
  CHECK_NOTHROW(verify_graph(g));
  fs::remove_all(dir);
}

TEST_CASE("pt2: fqns that share an entry share one storage, views checked against it") {
  fs::path dir = temp_dir("shared");
  std::string cfg_name = "mlp/data/weights/model_weights_config.json";
  std::string cfg = read_zip_entry(fixture("mlp.pt2"), cfg_name);
  // fc1.bias becomes row 1 of fc1.weight's bytes: same entry, storage offset 256.
  auto replace_first = [](std::string& s, const std::string& from, const std::string& to) {
    size_t p = s.find(from);
    REQUIRE(p != std::string::npos);
    s.replace(p, from.size(), to);
  };
  size_t bias = cfg.find("\"fc1.bias\"");
  REQUIRE(bias != std::string::npos);
  std::string tail = cfg.substr(bias);
  replace_first(tail, "\"path_name\": \"weight_1\"", "\"path_name\": \"weight_0\"");
  replace_first(tail, "\"storage_offset\": {\"as_int\": 0}",
                "\"storage_offset\": {\"as_int\": 256}");
  cfg = cfg.substr(0, bias) + tail;
  std::string shared = (dir / "shared.pt2").string();
  rewrite_zip(fixture("mlp.pt2"), shared, {{cfg_name, cfg}});

  Graph g = import_pt2(shared);
  const WeightData& w = g.weights.at("fc1.weight");
  const WeightData& b = g.weights.at("fc1.bias");
  CHECK(w.storage == b.storage);
  CHECK(b.meta.storage_offset == 256);
  CHECK(w.storage->nbytes() == 256 * 256 * 4); // the larger of the two views
  const float* f = reinterpret_cast<const float*>(w.storage->data());
  std::string raw = read_zip_entry(fixture("mlp.pt2"), "mlp/data/weights/weight_0");
  float row1;
  std::memcpy(&row1, raw.data() + 256 * 4, 4);
  CHECK(f[b.meta.storage_offset] == row1);

  // An offset that pushes the view past the entry is an error naming the entry.
  std::string cfg2 = read_zip_entry(fixture("mlp.pt2"), cfg_name);
  bias = cfg2.find("\"fc1.bias\"");
  tail = cfg2.substr(bias);
  replace_first(tail, "\"storage_offset\": {\"as_int\": 0}", "\"storage_offset\": {\"as_int\": 1}");
  std::string past = (dir / "past.pt2").string();
  rewrite_zip(fixture("mlp.pt2"), past, {{cfg_name, cfg2.substr(0, bias) + tail}});
  CHECK(error_of(past) ==
        past +
            ": error: entry 'mlp/data/weights/weight_1' has 1024 bytes but its tensors need 1028");
  fs::remove_all(dir);
}

TEST_CASE("pt2: outputs the exporter did not record get inferred metadata") {
  fs::path dir = temp_dir("unrecorded");
  const std::string entry = "block.core/models/model.json";
  auto model = nlohmann::json::parse(read_zip_entry(fixture("block.core.pt2"), entry));
  auto& tv = model["graph_module"]["graph"]["tensor_values"];
  REQUIRE(tv.erase("native_layer_norm_unused_1") == 1);
  REQUIRE(tv.erase("getitem_4") == 1); // a split output
  std::string path = (dir / "unrecorded.pt2").string();
  rewrite_zip(fixture("block.core.pt2"), path, {{entry, model.dump()}});
  Graph g = import_pt2(path);
  Graph ref = import_pt2(fixture("block.core.pt2"));
  for (const char* name : {"native_layer_norm_unused_1", "getitem_4"}) {
    CAPTURE(name);
    ValueId v = g.find_value(name);
    REQUIRE(v != kNoValue);
    CHECK(g.values[v].meta == ref.values[ref.find_value(name)].meta);
  }
  CHECK(format_meta(g.values[g.find_value("native_layer_norm_unused_1")].meta) == "f32[2, 16, 1]");
  fs::remove_all(dir);
}

TEST_CASE("pt2: lifted tensor constants come from the constants folder") {
  fs::path dir = temp_dir("constant");
  const std::string model_entry = "mlp/models/model.json";
  const std::string weights_entry = "mlp/data/weights/model_weights_config.json";
  const std::string constants_entry = "mlp/data/constants/model_constants_config.json";
  auto model = nlohmann::json::parse(read_zip_entry(fixture("mlp.pt2"), model_entry));
  auto weights = nlohmann::json::parse(read_zip_entry(fixture("mlp.pt2"), weights_entry));
  auto constants = nlohmann::json::parse(read_zip_entry(fixture("mlp.pt2"), constants_entry));
  // fc1.bias becomes the lifted constant "lifted_tensor_0" stored as constants/tensor_0.
  model["graph_module"]["signature"]["input_specs"][1] = {
      {"tensor_constant",
       {{"arg", {{"name", "p_fc1_bias"}}}, {"tensor_constant_name", "lifted_tensor_0"}}}};
  auto item = weights["config"]["fc1.bias"];
  weights["config"].erase("fc1.bias");
  item["path_name"] = "tensor_0";
  constants["config"]["lifted_tensor_0"] = item;
  std::string bias = read_zip_entry(fixture("mlp.pt2"), "mlp/data/weights/weight_1");
  std::string path = (dir / "constant.pt2").string();
  rewrite_zip(fixture("mlp.pt2"), path,
              {{model_entry, model.dump()},
               {weights_entry, weights.dump()},
               {constants_entry, constants.dump()},
               {"mlp/data/constants/tensor_0", bias}});
  Graph g = import_pt2(path);
  CHECK(g.inputs[1].kind == InputKind::Constant);
  CHECK(g.inputs[1].fqn == "lifted_tensor_0");
  const WeightData& w = g.weights.at("lifted_tensor_0");
  CHECK(format_meta(w.meta) == "f32[256]");
  CHECK(std::memcmp(w.storage->data(), bias.data(), bias.size()) == 0);
  CHECK(g.weights.count("fc1.bias") == 0);
  fs::remove_all(dir);
}

TEST_CASE("import: dispatch by content, and unknown files are refused") {
  fs::path dir = temp_dir("dispatch");
  std::string copy = (dir / "renamed.bin").string();
  fs::copy_file(fixture("norms.pt2"), copy);
  CHECK(import_graph(copy).nodes.size() == 4); // a zip, whatever its name
  std::string junk = (dir / "junk.txt").string();
  std::ofstream(junk) << "hello";
  CHECK(error_of(junk) ==
        junk +
            ": error: not a graph file: expected a .pt2 archive (zip) or an .fxg / .fxg.zst graph");
  CHECK(error_of((dir / "missing.pt2").string()).find("missing.pt2: error: cannot read: ") !=
        std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("io: every error-corpus case fails with its expected message") {
  fs::path dir = fs::path(FXC_SOURCE_DIR) / "test" / "error";
  int cases = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".expected") continue;
    std::string stem = e.path().stem().string();
    // A case with an .args file fails only when run with those arguments (test/error.sh runs it
    // through fxc): a damaged weight is read lazily, an .fxo's graph when the artifact runs.
    if (fs::exists(dir / (stem + ".args"))) continue;
    std::string input;
    for (const auto& f : fs::directory_iterator(dir)) {
      std::string n = f.path().filename().string();
      if (n.rfind(stem + ".", 0) == 0 && n != stem + ".expected" && n != stem + ".args")
        input = f.path().string();
    }
    CAPTURE(stem);
    REQUIRE(!input.empty());
    std::ifstream f(e.path());
    std::string want;
    std::getline(f, want);
    std::string got = error_of(input);
    CHECK_MESSAGE(got.find(want) != std::string::npos, "got: " << got);
    ++cases;
  }
  CHECK(cases >= 25);
}
