// Unit tests for dynamic shapes: size expressions, importing archives exported with Dim, binding
// symbols from input sizes, specializing, and the .fxg round trip of a dynamic graph.
#include "frontend/diag.h"
#include "frontend/fxg.h"
#include "frontend/import.h"
#include "frontend/printer.h"
#include "frontend/specialize.h"
#include "frontend/symbolic.h"

#include <doctest/doctest.h>

using namespace fxc;

namespace {

std::string dynamic_fixture(const std::string& name) {
  return std::string(FXC_SOURCE_DIR) + "/test/fixtures/dynamic/" + name;
}

TensorMeta meta_of(std::vector<int64_t> sizes, DType dt = DType::F32) {
  TensorMeta m;
  m.dtype = dt;
  m.sizes = std::move(sizes);
  m.strides = contiguous_strides(m.sizes);
  return m;
}

} // namespace

TEST_CASE("symbolic: sympy srepr as torch.export writes it") {
  SymExpr s = parse_sympy("Symbol('s77', positive=True, integer=True)");
  CHECK(s.is_symbol());
  CHECK(s.name == "s77");
  SymExpr m = parse_sympy(
      "Mul(Integer(128), Symbol('s27', positive=True, integer=True), Symbol('s77', integer=True))");
  CHECK(format_sym(m) == "128*s27*s77");
  CHECK(evaluate(m, {{"s27", 16}, {"s77", 2}}) == 4096);
  CHECK(format_sym(parse_sympy("Pow(Symbol('s0'), Integer(2))")) == "s0**2");
  CHECK(format_sym(parse_sympy("FloorDiv(Add(Symbol('s0'), Integer(-1)), Integer(2))")) ==
        "(s0 - 1)//2");
  // CeilDiv(a, b) is -((-a) // b); ModularIndexing(a, b, c) is (a // b) % c.
  CHECK(evaluate(parse_sympy("CeilDiv(Symbol('s0'), Integer(4))"), {{"s0", 9}}) == 3);
  CHECK(evaluate(parse_sympy("ModularIndexing(Symbol('s0'), Integer(2), Integer(3))"),
                 {{"s0", 11}}) == 2);
  CHECK(parse_sympy("Integer(7)").op == SymExpr::Op::Const);
  CHECK_THROWS_WITH_AS(parse_sympy("Sin(Symbol('s0'))"),
                       doctest::Contains("'Sin' is not a size expression"), SymError);
  CHECK_THROWS_AS(parse_sympy("Mul(Integer(2)"), SymError);
  // PowByNatural's exponent may be a symbol; it is evaluated when bound.
  CHECK(evaluate(parse_sympy("PowByNatural(Symbol('s0'), Symbol('s1'))"), {{"s0", 3}, {"s1", 4}}) ==
        81);
  CHECK(evaluate(parse_sympy("LShift(Symbol('s0'), Integer(3))"), {{"s0", 5}}) == 40);
  CHECK(evaluate(parse_sympy("RShift(Symbol('s0'), Integer(1))"), {{"s0", 5}}) == 2);
}

TEST_CASE("symbolic: sizes computed through floats (a scale factor of 1.5)") {
  // F.interpolate(x, scale_factor=1.5) on a dynamic height, as torch 2.11 exports it.
  SymExpr e = parse_sympy("TruncToInt(Mul(Float('1.5', precision=53), ToFloat(Symbol('s53', "
                          "positive=True, integer=True))))");
  CHECK(format_sym(e) == "TruncToInt(1.5*ToFloat(s53))");
  CHECK(parse_sym_text(format_sym(e)) == e);
  CHECK(evaluate(e, {{"s53", 5}}) == 7);
  CHECK(evaluate(e, {{"s53", 8}}) == 12);
  // A float is no size: the value of an expression that stays a float is refused.
  CHECK_FALSE(evaluate(parse_sympy("ToFloat(Symbol('s0'))"), {{"s0", 2}}).has_value());
  SymBindings b{{"a", 7}, {"b", 2}};
  CHECK(evaluate(parse_sym_text("FloorToInt(a/b)"), b) == 3);
  CHECK(evaluate(parse_sym_text("CeilToInt(a/b)"), b) == 4);
  CHECK(evaluate(parse_sym_text("RoundToInt(a/b)"), b) == 4);   // 3.5: ties to even
  CHECK(evaluate(parse_sym_text("RoundToInt(5/b)"), b) == 2);   // 2.5: ties to even
  CHECK(evaluate(parse_sym_text("TruncToInt(-a/b)"), b) == -3); // toward zero
  CHECK(evaluate(parse_sympy("FloorToInt(IntTrueDiv(Symbol('a'), Integer(2)))"), b) == 3);
  CHECK(evaluate(parse_sympy("CeilToInt(Mul(Rational(3, 2), ToFloat(Symbol('a'))))"), b) == 11);
  CHECK(evaluate(parse_sympy("TruncToInt(FloatPow(ToFloat(Symbol('a')), Float('0.5', "
                             "precision=53)))"),
                 b) == 2);
  CHECK_FALSE(evaluate(parse_sym_text("TruncToInt(a/(b - 2))"), b).has_value()); // a / 0
  CHECK_FALSE(evaluate(parse_sym_text("TruncToInt(1e300*ToFloat(a))"), b).has_value());
  for (const char* text : {"TruncToInt(1.5*ToFloat(s0))", "FloorToInt(s0/3)", "RoundToInt(0.25*s1)",
                           "CeilToInt(ToFloat(s0)/2.0)", "TruncToInt((-1.5)*ToFloat(s0))"}) {
    CAPTURE(text);
    SymExpr t = parse_sym_text(text);
    CHECK(format_sym(t) == text);
    CHECK(parse_sym_text(format_sym(t)) == t);
  }
  CHECK_THROWS_AS(parse_sympy("Float('x1.5', precision=53)"), SymError);
}

TEST_CASE("symbolic: the infix form prints and parses back") {
  for (const char* text : {"s0", "4*s0", "s27*s77", "(s0 + 1)//2", "s0 - 1", "s0%3", "Max(s0, 2)",
                           "Min(s0*2, s1 + 3)", "s0**2", "2*(s0 + s1)"}) {
    CAPTURE(text);
    SymExpr e = parse_sym_text(text);
    CHECK(format_sym(e) == text);
    CHECK(parse_sym_text(format_sym(e)) == e);
  }
  CHECK_THROWS_AS(parse_sym_text(""), SymError);
  CHECK_THROWS_AS(parse_sym_text("s0 +"), SymError);
  CHECK_THROWS_AS(parse_sym_text("s0 s1"), SymError);
  CHECK_THROWS_AS(parse_sym_text("3s0"), SymError);
  // Nesting is bounded: hostile text is an error, not a stack overflow.
  CHECK_THROWS_WITH_AS(parse_sym_text(std::string(100000, '(') + "s0"),
                       doctest::Contains("nested deeper than 256 levels"), SymError);
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += "Add(Integer(1), ";
  CHECK_THROWS_WITH_AS(parse_sympy(deep), doctest::Contains("nested deeper"), SymError);
}

TEST_CASE("symbolic: evaluation follows Python's integer division and modulo") {
  SymBindings b{{"a", -7}, {"b", 2}};
  CHECK(evaluate(parse_sym_text("a//b"), b) == -4);
  CHECK(evaluate(parse_sym_text("a%b"), b) == 1);
  CHECK(evaluate(parse_sym_text("Max(a, b, 5)"), b) == 5);
  CHECK_FALSE(evaluate(parse_sym_text("a//(b - 2)"), b).has_value()); // division by zero
  CHECK_FALSE(evaluate(parse_sym_text("c + 1"), b).has_value());      // unbound
  CHECK_FALSE(evaluate(parse_sym_text("b**70"), b).has_value());      // overflow
}

TEST_CASE("symbolic: contiguous strides of symbolic sizes") {
  std::vector<SymExpr> sym{SymExpr::symbol("s77"), SymExpr::symbol("s27"), SymExpr()};
  std::vector<SymExpr> st = symbolic_contiguous_strides({2, 16, 128}, sym);
  REQUIRE(st.size() == 3);
  CHECK(format_sym(st[0]) == "128*s27");
  CHECK(st[1].empty());
  CHECK(st[2].empty());
  CHECK(symbolic_contiguous_strides({2, 3}, {SymExpr::symbol("s0"), SymExpr()}).empty());
}

TEST_CASE("dynamic: a transformer block exported with Dim(batch) and Dim(seq)") {
  Graph g = import_pt2(dynamic_fixture("block.core.pt2"));
  REQUIRE(g.is_dynamic());
  REQUIRE(g.symbols.size() == 2);
  CHECK(format_range(g.symbols[0]) == "s27 in [2, 128]");
  CHECK(g.symbols[0].hint == 16);
  CHECK(format_range(g.symbols[1]) == "s77 in [1, 64]");
  CHECK(g.symbols[1].hint == 2);
  // sym_size.int and operator.mul are not nodes: arguments carry their expressions.
  for (const Node& n : g.nodes) {
    CHECK(n.target.find("sym_size") == std::string::npos);
    CHECK(n.target.rfind("_operator", 0) == std::string::npos);
  }
  std::string text = print_readable(g);
  CHECK(text.find("f32[s77, s27, 128]") != std::string::npos);
  CHECK(text.find("s27*s77") != std::string::npos); // view(..., [s27*s77, 128]) and its result

  SymBindings b;
  CHECK(bind_symbols(g, {meta_of({3, 40, 128})}, &b).empty());
  CHECK(format_bindings(b) == "s27=40, s77=3");
  Graph s = specialize(g, b);
  CHECK_FALSE(s.is_dynamic());
  CHECK(format_meta(s.values[size_t(s.outputs[0])].meta) == "f32[3, 40, 128]");
  for (const Node& n : s.nodes)
    for (const Arg& a : n.args) CHECK(a.syms.empty());

  // At the hints the specialized graph is the graph as exported.
  Graph h = specialize(g, hint_bindings(g));
  for (size_t v = 0; v < g.values.size(); ++v) {
    CAPTURE(g.values[v].name);
    CHECK(h.values[v].meta.sizes == g.values[v].meta.sizes);
    CHECK(h.values[v].meta.strides == g.values[v].meta.strides);
  }
}

TEST_CASE("dynamic: the guards name the input, the dim and the range") {
  Graph g = import_pt2(dynamic_fixture("block.core.pt2"));
  SymBindings b;
  CHECK(bind_symbols(g, {meta_of({65, 16, 128})}, &b) ==
        "input_0 'x': dim 0 is 65, outside s77 in [1, 64]");
  CHECK(bind_symbols(g, {meta_of({2, 1, 128})}, &b) ==
        "input_0 'x': dim 1 is 1, outside s27 in [2, 128]");
  CHECK(bind_symbols(g, {meta_of({2, 16, 64})}, &b) == "input_0 'x': dim 2 is 64, expected 128");
  CHECK(bind_symbols(g, {meta_of({2, 16})}, &b) ==
        "input_0 'x': rank 2, expected f32[s77, s27, 128]");
  CHECK(bind_symbols(g, {}, &b) == "expected 1 inputs, got 0");
}

TEST_CASE("dynamic: a derived dim (2*Dim) is solved for its symbol") {
  Graph g = import_pt2(dynamic_fixture("derived.pt2")); // x: [batch, 2*pairs]
  SymBindings b;
  CHECK(bind_symbols(g, {meta_of({3, 20})}, &b).empty());
  CHECK(format_bindings(b) == "s3=10, s77=3");
  CHECK(bind_symbols(g, {meta_of({3, 7})}, &b) ==
        "input_0 'x': dim 1 is 7, but 2*s3 cannot be 7 for any integer s3 in [2, 50]");
  CHECK(bind_symbols(g, {meta_of({3, 102})}, &b) ==
        "input_0 'x': dim 1 is 102, but 2*s3 is 102 only at s3 = 51, outside s3 in [2, 50]");
}

TEST_CASE("dynamic: a view at a symbolic offset and a size through a float scale") {
  // halfsplit: x[:, s0 // 2:] has storage offset s0//2; upsample: TruncToInt(1.5*ToFloat(h)).
  Graph hs = import_pt2(dynamic_fixture("halfsplit.pt2"));
  SymBindings b;
  REQUIRE(bind_symbols(hs, {meta_of({5, 34})}, &b).empty());
  Graph s = specialize(hs, b);
  bool offset = false;
  for (const Value& v : s.values) offset = offset || v.meta.storage_offset == 17;
  CHECK(offset);
  Graph up = import_pt2(dynamic_fixture("upsample.pt2"));
  REQUIRE(bind_symbols(up, {meta_of({1, 3, 5, 3})}, &b).empty());
  bool scaled = false;
  for (const Value& v : specialize(up, b).values)
    scaled = scaled || v.meta.sizes == std::vector<int64_t>{1, 3, 7, 4};
  CHECK(scaled);
}

TEST_CASE("dynamic: an .fxg holds the symbols and reads back the same graph") {
  Graph g = import_pt2(dynamic_fixture("embed.core.pt2"));
  REQUIRE(g.is_dynamic());
  FxgWriteOptions o;
  o.weights_file = "<embedded>";
  std::string text = fxg_to_json(g, o);
  CHECK(text.find("\"symbols\": {\"s23\": {\"min\": 1, \"max\": 64, \"hint\": 4}") !=
        std::string::npos);
  Graph r = parse_fxg_text(text, "embed.fxg", g.weights);
  CHECK(r.symbols == g.symbols);
  CHECK(fxg_to_json(r, o) == text);
  SymBindings b;
  REQUIRE(bind_symbols(r, {meta_of({2, 32}, DType::I64)}, &b).empty());
  CHECK(format_meta(specialize(r, b).values[size_t(r.outputs[0])].meta) == "f32[2, 32, 64]");
}

TEST_CASE("dynamic: an .fxg with a bad symbol is refused with the reason") {
  auto read = [](const std::string& symbols, const std::string& shape) {
    std::string text =
        R"({"format": "fxg", "version": 1, "symbols": )" + symbols +
        R"(, "inputs": [{"name": "x", "dtype": "f32", "shape": )" + shape +
        R"(}], "nodes": [{"name": "r", "target": "aten.relu.default", "args": [{"ref": "x"}]}], "outputs": ["r"]})";
    return parse_fxg_text(text, "t.fxg", {});
  };
  Graph ok = read(R"({"s0": {"min": 1, "max": null, "hint": 4}})", R"(["s0", 3])");
  CHECK(format_meta(ok.values[0].meta) == "f32[s0, 3]");
  CHECK(ok.symbols[0].max == INT64_MAX);
  CHECK_THROWS_WITH(read(R"({"s0": {"min": 1, "max": 8, "hint": 9}})", R"(["s0"])"),
                    doctest::Contains("symbol 's0': needs 0 <= min <= hint <= max"));
  CHECK_THROWS_WITH(read(R"({"s0": {"min": 1, "max": 8, "hint": 4}})", R"(["s1"])"),
                    doctest::Contains("symbol 's1' is not declared"));
  CHECK_THROWS_WITH(read(R"({"s0": {"min": 1, "max": 8, "hint": 4}})", R"(["s0 +"])"),
                    doctest::Contains("cannot read the size expression"));
}

#include "driver/tensor_io.h"
#include "frontend/safetensors.h"
#include "fxc/runtime.h"
#include "runtime/artifact.h"
#include "runtime/compare.h"

#include <cstring>
#include <memory>

TEST_CASE("dynamic: an artifact runs at any size in range, through the C API too") {
  Graph g = import_pt2(dynamic_fixture("mlp.pt2"));
  Graph at_hints = specialize(g, hint_bindings(g));
  CompiledArtifact a; // an eager artifact: its plan is the interpreted graph at the hints
  a.name = "mlp";
  a.backend = "eager";
  a.device = "cpu";
  a.mode = "inference";
  a.inputs = input_specs(at_hints);
  ArtifactGraph ag;
  ag.kind = ArtifactGraph::Kind::Interpreted;
  ag.role = "inference";
  ag.graph = std::make_shared<const Graph>(at_hints);
  a.graphs = {ag};
  a.outputs = {"output_0"};
  a.symbolic = std::make_shared<const Graph>(g);
  a.bindings = hint_bindings(g);
  std::string bytes = serialize_artifact(a);
  CHECK(serialize_artifact(parse_artifact(bytes, "m.fxo")) == bytes);

  fxc_model* m = nullptr;
  REQUIRE(fxc_model_load_memory(bytes.data(), bytes.size(), "m.fxo", &m) == FXC_OK);
  int64_t lo = 0, hi = 0;
  REQUIRE(fxc_model_dim_range(m, 0, 0, &lo, &hi) == FXC_OK);
  CHECK(lo == 1);
  CHECK(hi == 4096);
  REQUIRE(fxc_model_dim_range(m, 0, 1, &lo, &hi) == FXC_OK);
  CHECK(lo == 256);
  CHECK(hi == 256);
  CHECK(fxc_model_dim_range(m, 0, 2, &lo, &hi) == FXC_ERROR_INVALID_ARGUMENT);

  auto io = read_safetensors(dynamic_fixture("mlp.b3.io.safetensors"));
  Tensor x = Tensor::from_weight(io.at("input_0")).contiguous();
  Tensor ref = Tensor::from_weight(io.at("output_0"));
  int32_t ranks[] = {2}, dtypes[] = {FXC_DTYPE_F32}, rank = 0;
  int64_t b3[] = {3, 256}, out_sizes[4] = {};
  const int64_t* sizes[] = {b3};
  REQUIRE(fxc_model_output_shape(m, ranks, sizes, 0, &rank, out_sizes, 4) == FXC_OK);
  CHECK(rank == 2);
  CHECK(out_sizes[0] == 3);
  CHECK(out_sizes[1] == 256);
  std::vector<float> y(3 * 256);
  const void* ins[] = {x.raw_data()};
  void* outs[] = {y.data()};
  REQUIRE(fxc_model_run_checked(m, ins, dtypes, ranks, sizes, outs) == FXC_OK);
  Tensor got = Tensor::empty(DType::F32, {3, 256});
  std::memcpy(got.raw_data(), y.data(), y.size() * 4);
  CompareOptions tol;
  tol.rtol = 1e-4;
  CHECK(compare_tensors(got, ref, tol).ok);

  int64_t big[] = {5000, 256};
  sizes[0] = big;
  CHECK(fxc_model_output_shape(m, ranks, sizes, 0, &rank, out_sizes, 4) == FXC_ERROR_GUARD);
  CHECK(std::string(fxc_last_error()) ==
        "m.fxo: error: input_0 'x': dim 0 is 5000, outside s77 in [1, 4096]");
  CHECK(fxc_model_run_checked(m, ins, dtypes, ranks, sizes, outs) == FXC_ERROR_GUARD);
  fxc_model_free(m);
}
