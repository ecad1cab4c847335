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
