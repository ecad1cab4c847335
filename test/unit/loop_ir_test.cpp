// Unit tests for the loop IR: symbolic index simplification and the printer.
#include "passes/loop_ir.h"

#include <doctest/doctest.h>

using namespace fxc;

TEST_CASE("loop_ir: floor division and modulo of affine forms simplify with variable ranges") {
  IndexExpr x = IndexExpr::var(kXVar, 32), r = IndexExpr::var(kRVar, 512);
  IndexExpr lin = x * 512 + r;
  CHECK(lin.floordiv(512) == x);
  CHECK(lin.mod(512) == r);
  CHECK(lin.str() == "512*x + r");
  // A split that does not align with the row stays symbolic.
  IndexExpr odd = lin.floordiv(100);
  CHECK_FALSE(odd.is_const());
  CHECK(odd.str() == "((512*x + r) // 100)");
  // gcd: (4*r + 8) // 4 = r + 2 and (6*x) % 4 = 2*((3*x) % 2).
  CHECK((r * 4 + IndexExpr(8)).floordiv(4) == r + IndexExpr(2));
  CHECK((x * 6).mod(4).str() == "2*((3*x) % 2)");
  // Aligned splits: (128*x + r) // 2048 = x // 16 when r < 128, and the pieces recombine.
  IndexExpr x2 = IndexExpr::var(kXVar, 32), r2 = IndexExpr::var(kRVar, 128);
  IndexExpr l2 = x2 * 128 + r2;
  CHECK(l2.floordiv(2048) == x2.floordiv(16));
  CHECK(l2.mod(2048) == x2.mod(16) * 128 + r2);
  CHECK(l2.floordiv(2048) * 2048 + l2.mod(2048) == l2);
  // Nested divisions merge.
  CHECK(lin.floordiv(8).floordiv(64) == x);
}

TEST_CASE("loop_ir: div/mod pairs recombine, so reshape round trips are the identity") {
  IndexExpr k = IndexExpr::var(0, 16384);
  // view [16384] -> [32, 512] -> [16384]
  IndexExpr back = k.floordiv(512) * 512 + k.mod(512);
  CHECK(back == k);
  // [B*S, H] -> [B, S, H] -> [B*S, H]: (k // 64 % 8) * 64 + k % 64 == k % 512
  IndexExpr i = IndexExpr::var(1, 4096);
  IndexExpr e = i.floordiv(64).mod(8) * 64 + i.mod(64);
  CHECK(e == i.mod(512));
  // unravel then relinearize
  auto parts = unravel_index(k, {4, 8, 512});
  CHECK(linear_index(parts, {4096, 512, 1}) == k);
}

TEST_CASE("loop_ir: ranges and substitution") {
  IndexExpr a = IndexExpr::var(0, 10), b = IndexExpr::var(1, 3);
  auto [lo, hi] = (a * 2 - b).range();
  CHECK(lo == -2);
  CHECK(hi == 18);
  IndexExpr e = (a * 3 + b).mod(3);
  CHECK(e == b);
  std::map<int, IndexExpr> s = {{0, IndexExpr::var(kXVar, 5)}, {1, IndexExpr(2)}};
  CHECK((a * 3 + b).substitute(s).str() == "3*x + 2");
  // A variable of extent 1 is the constant 0.
  CHECK(IndexExpr::var(7, 1).is_const());
}

TEST_CASE("loop_ir: value expressions print as numbered temporaries") {
  LoopProgram p;
  Buffer in;
  in.kind = Buffer::Kind::Input;
  in.name = "arg0";
  in.sizes = {4, 8};
  in.input_index = 0;
  p.buffers.push_back(in);
  Buffer b;
  b.kind = Buffer::Kind::Pointwise;
  b.name = "buf1";
  b.sizes = {4, 8};
  b.vars = {IndexExpr::var(0, 4), IndexExpr::var(1, 8)};
  VPtr x = v_load(0, b.vars[0] * 8 + b.vars[1], DType::F32);
  b.body = v_binary(VOp::Max, v_binary(VOp::Mul, x, x), v_const(0, DType::F32));
  p.buffers.push_back(b);
  p.outputs.push_back({1, TensorMeta{DType::F32, {4, 8}, {8, 1}, 0, {}}});
  std::string text = print_loop_program(p);
  CHECK(text.find("tmp0 = load(arg0, 8*x0 + x1)") != std::string::npos);
  CHECK(text.find("tmp1 = mul(tmp0, tmp0)") != std::string::npos);
  CHECK(text.find("tmp3 = maximum(tmp1, tmp2)") != std::string::npos);
  CHECK(text.find("store(buf1, 8*x0 + x1, tmp3)") != std::string::npos);
  CHECK(expr_size(b.body) == 4);
  CHECK(p.reads(1) == std::vector<int>{0});
}

// ---------------------------------------------------------------- text form and verifier

#include "frontend/diag.h"
#include "frontend/import.h"
#include "passes/decompose.h"
#include "passes/loop_ir_parse.h"
#include "passes/loop_ir_verify.h"
#include "passes/lower.h"

namespace {

LoopProgram lowered(const std::string& rel, bool cuda = false) {
  Graph g = decompose(import_graph(std::string(FXC_SOURCE_DIR) + "/" + rel));
  LowerOptions lo;
  lo.cuda = cuda;
  return lower(g, lo);
}

// The verifier's messages for a program made from `text` by replacing `from` with `to`.
std::vector<std::string> errors_after_edit(const std::string& text, const std::string& from,
                                           const std::string& to) {
  size_t at = text.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, "no '" << from << "' in the program");
  std::string edited = text;
  edited.replace(at, from.size(), to);
  return loop_program_errors(parse_loop_program(edited, "bad.lir"));
}

bool has_error(const std::vector<std::string>& errors, const std::string& part) {
  for (const std::string& e : errors)
    if (e.find(part) != std::string::npos) return true;
  return false;
}

const char* kSmall = R"(// a pointwise buffer over a sum
arg0_1: InputBuffer
  layout: f32[4, 8]
  user input 0
buf0: ComputedBuffer(reduction)
  layout: f32[4]
  origins: sum_1
  reads: arg0_1
  loop: x0 < 4 | reduce sum over r0 < 8
    tmp0 = load(arg0_1, 8*x0 + r0)
    reduce_store(buf0, x0, tmp0)
buf1: ComputedBuffer(pointwise)
  layout: f32[4, 8]
  origins: div, exp
  reads: arg0_1, buf0
  loop: x0 < 4, x1 < 8
    tmp0 = load(arg0_1, 8*x0 + x1)
    tmp1 = load(buf0, x0)
    tmp2 = truediv(tmp0, tmp1)
    tmp3 = exp(tmp2)
    store(buf1, 8*x0 + x1, tmp3)
outputs: buf1:f32[4, 8]
)";

} // namespace

TEST_CASE("loop_ir: print, parse, print is the same text for lowered example programs") {
  for (const char* rel :
       {"examples/mlp.fxg", "examples/norms.fxg", "examples/block.fxg",
        "test/graphs/ops/bitwise.fxg", "test/graphs/ops/intdiv.fxg",
        "test/graphs/ops/factory_like.fxg", "test/graphs/ops/math.fxg",
        "test/graphs/ops/reduce.fxg", "test/graphs/ops/view_copy.fxg",
        // scans: triangular sum, prod and max reductions (sort's gathers are indirect)
        "test/graphs/ops/scan.fxg"})
    for (bool cuda : {false, true}) {
      const std::string label = std::string(rel) + (cuda ? " (cuda)" : " (cpu)");
      INFO(label);
      LoopProgram p = lowered(rel, cuda);
      std::string text = print_loop_program(p);
      LoopProgram q = parse_loop_program(text, rel);
      CHECK(print_loop_program(q) == text);
      CHECK(loop_program_errors(p).empty());
      CHECK(loop_program_errors(q).empty());
      CHECK(q.buffers.size() == p.buffers.size());
    }
  // A gather's index is data: the text has no form for it that parses.
  std::string gather = print_loop_program(lowered("test/graphs/ops/diff.fxg"));
  CHECK_THROWS_WITH_AS(parse_loop_program(gather, "diff.lir"),
                       doctest::Contains("indirect indices (gather, embedding) have no parseable"),
                       Error);
}

TEST_CASE("loop_ir: a hand-written program parses, verifies and fuses into one kernel pair") {
  LoopProgram p = parse_loop_program(kSmall, "small.lir");
  CHECK(print_loop_program(p) == std::string(kSmall).substr(std::string(kSmall).find('\n') + 1));
  CHECK(loop_program_errors(p).empty());
  REQUIRE(p.buffers.size() == 3);
  CHECK(p.buffers[2].origin_ops == std::vector<std::string>{"div", "exp"});
  CHECK(p.buffers[1].origin_ops == std::vector<std::string>{"sum"});
}

TEST_CASE("loop_ir: the parser names the line of malformed text") {
  auto message = [](const std::string& text) {
    try {
      parse_loop_program(text, "bad.lir");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(parsed)");
  };
  std::string s = kSmall;
  CHECK(message(s.replace(s.find("ComputedBuffer(pointwise)"), 25, "Computed")) ==
        "bad.lir:12: error: unknown buffer kind 'Computed'");
  s = kSmall;
  CHECK(message(s.replace(s.find("load(buf0"), 9, "load(buf9")) ==
        "bad.lir:18: error: unknown buffer 'buf9'");
  s = kSmall;
  CHECK(message(s.replace(s.find("tmp0, tmp1"), 10, "tmp0, tmp7")) ==
        "bad.lir:19: error: unknown value 'tmp7'");
  s = kSmall;
  CHECK(message(s.replace(s.find("exp("), 4, "expp(")) ==
        "bad.lir:20: error: unknown operation 'expp'");
  s = kSmall;
  CHECK(message(s.replace(s.find("8*x0 + x1)\n    tmp1"), 9, "8*x0 + x7")) ==
        "bad.lir:17: error: index variable x7 is not a loop variable of this buffer");
}

TEST_CASE("loop_ir: the verifier names each broken invariant") {
  const std::string s = kSmall;
  CHECK(errors_after_edit(s, "", "").empty());
  // A load at an index outside the buffer.
  CHECK(has_error(errors_after_edit(s, "load(buf0, x0)", "load(buf0, x0 + 1)"),
                  "buf1: load of buf0 at x0 + 1 reaches [1, 4], outside its 4 elements"));
  // A buffer read before it is defined (text cannot say it: names resolve in order).
  {
    LoopProgram p = parse_loop_program(s, "small.lir");
    Buffer& b = p.buffers[1];
    b.body = v_binary(VOp::Add, b.body, v_load(2, b.body->index, DType::F32));
    CHECK(has_error(loop_program_errors(p), "buf0: load of buf1, which is defined after it"));
  }
  // Operand dtypes that differ.
  {
    std::string t = s;
    t.replace(t.find("tmp2 = truediv(tmp0, tmp1)"),
              std::string("tmp2 = truediv(tmp0, tmp1)").size(),
              "tmp5 = to_dtype(tmp1, f64)\n    tmp2 = truediv(tmp0, tmp5)");
    CHECK(has_error(loop_program_errors(parse_loop_program(t, "bad.lir")),
                    "buf1: truediv of f32 and f64"));
  }
  // The body's dtype is not the buffer's.
  CHECK(has_error(errors_after_edit(s, "layout: f32[4, 8]\n  origins: div",
                                    "layout: f64[4, 8]\n  origins: div"),
                  "buf1: the body is f32 but the buffer is f64"));
  // where with a non-bool condition.
  {
    std::string t = s;
    t.replace(t.find("tmp3 = exp(tmp2)"), 16, "tmp3 = where(tmp2, tmp0, tmp1)");
    CHECK(has_error(loop_program_errors(parse_loop_program(t, "bad.lir")),
                    "buf1: where's condition is f32"));
  }
  // An output view reaching past its buffer, and of another dtype.
  CHECK(has_error(errors_after_edit(s, "outputs: buf1:f32[4, 8]", "outputs: buf1:f32[4, 8]+1"),
                  "outputs: output view of buf1 reaches elements [1, 32] of 32"));
  CHECK(has_error(errors_after_edit(s, "outputs: buf1:f32[4, 8]", "outputs: buf1:i64[4, 8]"),
                  "outputs: output of buf1 is i64 but the buffer is f32"));
  // Built in memory: loop variables that are not the buffer's own, an input that is neither.
  LoopProgram p = parse_loop_program(s, "small.lir");
  p.buffers[2].vars[1] = IndexExpr::var(1, 9);
  CHECK(has_error(loop_program_errors(p), "buf1: loop variable 1 is 'x1', not x1 < 8"));
  p = parse_loop_program(s, "small.lir");
  p.buffers[0].input_index = -1;
  CHECK(has_error(loop_program_errors(p),
                  "arg0_1: an input buffer is either a user input or a weight"));
  p = parse_loop_program(s, "small.lir");
  p.buffers[1].name = "buf1";
  CHECK(has_error(loop_program_errors(p), "buf1: a second buffer of this name"));
  CHECK_THROWS_WITH_AS(
      verify_loop_program(p, "after fuse"),
      doctest::Contains("loop IR is not well formed after fuse:\n  buf1: a second"), Error);
}

TEST_CASE("loop_ir: a scalar helper call prints, parses and verifies its operands") {
  const std::string s = kSmall;
  const std::string call = "tmp3 = call_chebyshev_t(tmp2, tmp1)";
  std::string t = s;
  t.replace(t.find("tmp3 = exp(tmp2)"), 16, call);
  LoopProgram p = parse_loop_program(t, "call.lir");
  CHECK(loop_program_errors(p).empty());
  const VPtr& body = p.buffers[2].body;
  REQUIRE(body->op == VOp::Call);
  CHECK(ScalarFn(body->ival) == ScalarFn::ChebyshevT);
  CHECK(print_loop_program(p).find(call) != std::string::npos);
  // One operand for a function of two; an unknown function.
  CHECK(has_error(errors_after_edit(t, call, "tmp3 = call_chebyshev_t(tmp2)"),
                  "buf1: call with 1 operands, not 2"));
  CHECK_THROWS_WITH_AS(
      parse_loop_program(s.substr(0, s.find("tmp3 = exp")) + "tmp3 = call_bessel_j9(tmp2)\n",
                         "bad.lir"),
      doctest::Contains("unknown scalar function 'call_bessel_j9'"), Error);
  // Operands of another dtype than the result.
  {
    LoopProgram q = parse_loop_program(t, "call.lir");
    Buffer& b = q.buffers[2];
    b.body = v_call(ScalarFn::BesselJ0, {v_cast(b.body->args[0], DType::I64)});
    b.body = v_cast(b.body, DType::F32);
    CHECK(has_error(loop_program_errors(q), "buf1: call of i64 as i64"));
  }
}
