// Unit tests for the op schema parser and table.
#include "frontend/schema.h"

#include <doctest/doctest.h>

using namespace fxc;

TEST_CASE("schema: addmm parses with kwarg-only scalar defaults") {
  std::string err;
  auto s = parse_schema(
      "addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
      &err);
  REQUIRE(s);
  CHECK(s->target == "aten.addmm.default");
  REQUIRE(s->args.size() == 5);
  CHECK(s->args[3].kwarg_only);
  CHECK(s->args[3].has_default);
  CHECK(s->args[3].default_value == Arg::of_int(1));
  CHECK(s->returns.size() == 1);
}

TEST_CASE("schema: list defaults expand to the fixed length") {
  auto* s = find_schema("aten.conv2d.default");
  REQUIRE(s);
  CHECK(s->args[s->index_of("stride")].default_value == Arg::of_ints({1, 1}));
  CHECK(s->args[s->index_of("padding")].default_value == Arg::of_ints({0, 0}));
  CHECK(s->args[s->index_of("bias")].optional);
}

TEST_CASE("schema: views, in-place and list returns are recognised") {
  CHECK(find_schema("aten.view.default")->is_view);
  CHECK_FALSE(find_schema("aten.add.Tensor")->is_view);
  CHECK(find_schema("aten.relu_.default")->is_inplace);
  CHECK(find_schema("aten.split.Tensor")->returns[0].is_list);
  CHECK(find_schema("aten.native_layer_norm.default")->returns.size() == 3);
  CHECK(find_schema("aten._assert_tensor_metadata.default")->returns.empty());
  CHECK(find_schema("aten.gelu.default")->args[1].default_value == Arg::of_string("none"));
}

TEST_CASE("schema: malformed signatures are rejected with a message") {
  std::string err;
  CHECK_FALSE(parse_schema("addmm(Tensor self", &err));
  CHECK(!err.empty());
  CHECK_FALSE(parse_schema("f(Blob x) -> Tensor", &err));
  CHECK(err.find("Blob") != std::string::npos);
  CHECK(find_schema("aten.nonexistent.default") == nullptr);
}

TEST_CASE("schema: bind_args fills defaults, coerces and reports errors") {
  const OpSchema& s = *find_schema("aten.addmm.default");
  std::vector<Arg> args;
  std::vector<bool> given;
  std::string err;
  REQUIRE(bind_args(s, {{"", Arg::of_tensor(0)}, {"", Arg::of_tensor(1)}, {"", Arg::of_tensor(2)}},
                    &args, &given, &err));
  CHECK(args[3] == Arg::of_int(1));
  CHECK(given == std::vector<bool>{true, true, true, false, false});
  CHECK_FALSE(
      bind_args(s, {{"", Arg::of_tensor(0)}, {"", Arg::of_tensor(1)}}, &args, &given, &err));
  CHECK(err == "missing argument 'mat2'");
  CHECK_FALSE(bind_args(s, {{"", Arg::of_tensor(0)}, {"", Arg::of_int(3)}, {"", Arg::of_tensor(2)}},
                        &args, &given, &err));
  CHECK(err == "argument 'mat1' expects Tensor, got int");
  CHECK_FALSE(bind_args(s,
                        {{"", Arg::of_tensor(0)},
                         {"", Arg::of_tensor(1)},
                         {"", Arg::of_tensor(2)},
                         {"", Arg::of_int(1)}},
                        &args, &given, &err));
  CHECK(err.find("too many positional") == 0);
  const OpSchema& ln = *find_schema("aten.layer_norm.default");
  REQUIRE(bind_args(ln, {{"", Arg::of_tensor(0)}, {"", Arg::of_ints({4})}, {"eps", Arg::of_int(0)}},
                    &args, &given, &err));
  CHECK(args[4] == Arg::of_float(0.0));
  CHECK(args[2].is_none());
}
