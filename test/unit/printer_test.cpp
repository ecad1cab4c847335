// Unit tests for the readable graph printer.
#include "frontend/import.h"
#include "frontend/printer.h"
#include "frontend/schema.h"

#include <doctest/doctest.h>

#include <cmath>

using namespace fxc;

namespace {

std::string fixture(const std::string& name) {
  return std::string(FXC_FIXTURES_DIR) + "/" + name;
}

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

// relu nodes over one input, each with the given stack trace.
Graph relu_chain(const std::vector<std::string>& traces) {
  Graph g;
  TensorMeta m;
  m.sizes = {2};
  m.strides = {1};
  ValueId cur = g.add_value("x", m);
  g.inputs.push_back({cur, InputKind::UserInput, "x"});
  for (size_t i = 0; i < traces.size(); ++i) {
    Node n;
    n.name = "relu_" + std::to_string(i);
    n.target = "aten.relu.default";
    n.schema = find_schema(n.target);
    std::string err;
    REQUIRE(bind_args(*n.schema, {{"", Arg::of_tensor(cur)}}, &n.args, &n.given, &err));
    n.stack_trace = traces[i];
    cur = g.add_value(n.name, m);
    g.values[cur].producer = int32_t(g.nodes.size());
    n.outputs = {cur};
    g.nodes.push_back(n);
  }
  g.outputs = {cur};
  return g;
}

} // namespace

TEST_CASE("printer: mlp prints like PyTorch's print_readable") {
  Graph g = import_pt2(fixture("mlp.pt2"));
  const std::string want =
      "def forward(self, p_fc1_weight: \"f32[256, 256]\", p_fc1_bias: \"f32[256]\", p_fc2_weight: "
      "\"f32[256, 256]\", "
      "p_fc2_bias: \"f32[256]\", x: \"f32[64, 256]\"):\n"
      "    # File: fixtures_probe.py:14 in forward, code: x = F.relu(s.fc1(x)) ** 2\n"
      "    linear: \"f32[64, 256]\" = aten.linear.default(x, p_fc1_weight, p_fc1_bias)\n"
      "    relu: \"f32[64, 256]\" = aten.relu.default(linear)\n"
      "    pow_1: \"f32[64, 256]\" = aten.pow.Tensor_Scalar(relu, 2)\n"
      "\n"
      "    # File: fixtures_probe.py:15 in forward, code: return F.relu(s.fc2(x)) ** 2\n"
      "    linear_1: \"f32[64, 256]\" = aten.linear.default(pow_1, p_fc2_weight, p_fc2_bias)\n"
      "    relu_1: \"f32[64, 256]\" = aten.relu.default(linear_1)\n"
      "    pow_2: \"f32[64, 256]\" = aten.pow.Tensor_Scalar(relu_1, 2)\n"
      "    return (pow_2,)\n";
  CHECK(print_readable(g) == want);
}

TEST_CASE("printer: multi-output nodes, keywords and literals") {
  std::string core = print_readable(import_pt2(fixture("block.core.pt2")));
  CHECK(has_line(core, "    native_layer_norm = aten.native_layer_norm.default(x, [128], "
                       "p_ln1_weight, p_ln1_bias, 1e-05)"));
  CHECK(has_line(core, "    getitem: \"f32[2, 16, 128]\" = native_layer_norm[0]"));
  CHECK(has_line(core, "    native_layer_norm_unused_1: \"f32[2, 16, 1]\" = native_layer_norm[1]"));
  CHECK(has_line(
      core, "    split_with_sizes = aten.split_with_sizes.default(view_1, [128, 128, 128], 2)"));
  CHECK(has_line(core, "    getitem_5: \"f32[2, 16, 128]\" = split_with_sizes[2]"));
  CHECK(has_line(
      core,
      "    full: \"b8[16, 16]\" = aten.full.default([16, 16], True, dtype = torch.bool, layout = "
      "torch.strided, device = device(type='cpu'), pin_memory = False)"));
  CHECK(has_line(
      core,
      "    scalar_tensor: \"f32[]\" = aten.scalar_tensor.default(-inf, dtype = torch.float32, "
      "device = device(type='cpu'))"));
  std::string block = print_readable(import_pt2(fixture("block.pt2")));
  CHECK(block.find("= aten.gelu.default(linear_2, approximate = 'tanh')\n") != std::string::npos);
  CHECK(block.find("    return (add_1,)\n") != std::string::npos);
  std::string bert = print_readable(import_pt2(fixture("berttiny.pt2")));
  CHECK(bert.find("    return (") != std::string::npos);
  CHECK(bert.find(",)\n") == std::string::npos); // two outputs: no trailing comma
  // Deterministic.
  CHECK(print_readable(import_pt2(fixture("block.core.pt2"))) == core);
}

TEST_CASE("printer: arguments format like Python") {
  Graph g;
  ValueId a = g.add_value("a", TensorMeta{});
  CHECK(format_arg(g, Arg::of_float(1e-05)) == "1e-05");
  CHECK(format_arg(g, Arg::of_float(0.1)) == "0.1");
  CHECK(format_arg(g, Arg::of_float(1.0)) == "1.0");
  CHECK(format_arg(g, Arg::of_float(-0.0)) == "-0.0");
  CHECK(format_arg(g, Arg::of_float(0.0001)) == "0.0001");
  CHECK(format_arg(g, Arg::of_float(123.5)) == "123.5");
  CHECK(format_arg(g, Arg::of_float(1e16)) == "1e+16");
  CHECK(format_arg(g, Arg::of_float(1e15)) == "1000000000000000.0");
  CHECK(format_arg(g, Arg::of_float(0.42044820762685725)) == "0.42044820762685725");
  CHECK(format_arg(g, Arg::of_float(-1.5e-300)) == "-1.5e-300");
  CHECK(format_arg(g, Arg::of_float(-INFINITY)) == "-inf");
  CHECK(format_arg(g, Arg::of_float(NAN)) == "nan");
  CHECK(format_arg(g, Arg::of_int(-3)) == "-3");
  CHECK(format_arg(g, Arg::of_bool(true)) == "True");
  CHECK(format_arg(g, Arg::none()) == "None");
  CHECK(format_arg(g, Arg::of_string("it's")) == "'it\\'s'");
  CHECK(format_arg(g, Arg::of_ints({1, -1})) == "[1, -1]");
  CHECK(format_arg(g, Arg::of_floats({0.5, 2})) == "[0.5, 2.0]");
  CHECK(format_arg(g, Arg::of_bools({true, false})) == "[True, False]");
  CHECK(format_arg(g, Arg::of_tensors({kNoValue, a})) == "[None, a]");
  CHECK(format_arg(g, Arg::of_dtype(DType::BF16)) == "torch.bfloat16");
  CHECK(format_arg(g, Arg::of_device(Device{Device::CUDA, 0})) == "device(type='cuda', index=0)");
  CHECK(format_arg(g, Arg::of_memory_format(MemoryFormat::ChannelsLast)) == "torch.channels_last");
  CHECK(format_arg(g, Arg::of_layout(Layout::Strided)) == "torch.strided");
}

TEST_CASE("printer: source comments come from the user's innermost frame") {
  const std::string user =
      "File \"model.py\", line 3, in forward\n    y = f(x)\n"
      "  File \"/usr/lib/python3/site-packages/torch/f.py\", line 9, in f\n    return g(x)";
  const std::string lib = "File \"/x/site-packages/torch/a.py\", line 1, in a\n    b()\n"
                          "  File \"/x/site-packages/torch/b.py\", line 2, in b\n    c()";
  std::string out = print_readable(relu_chain({user, user, "", lib}));
  const std::string want = "def forward(self, x: \"f32[2]\"):\n"
                           "    # File: model.py:3 in forward, code: y = f(x)\n"
                           "    relu_0: \"f32[2]\" = aten.relu.default(x)\n"
                           "    relu_1: \"f32[2]\" = aten.relu.default(relu_0)\n"
                           "\n"
                           "    # No stacktrace found for following nodes\n"
                           "    relu_2: \"f32[2]\" = aten.relu.default(relu_1)\n"
                           "\n"
                           "    # File: /x/site-packages/torch/b.py:2 in b, code: c()\n"
                           "    relu_3: \"f32[2]\" = aten.relu.default(relu_2)\n"
                           "    return (relu_3,)\n";
  CHECK(out == want);
}
