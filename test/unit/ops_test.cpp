// The op registry (frontend/ops.def) against every layer that keys a table by it: what
// docs/adding-an-op.md promises a new op gets checked for.
#include "frontend/composite.h"
#include "frontend/meta.h"
#include "frontend/ops.h"
#include "frontend/schema.h"
#include "passes/autograd.h"
#include "passes/decompose.h"
#include "passes/lower.h"
#include "runtime/kernels.h"

#include <doctest/doctest.h>

#include <string>

using namespace fxc;

namespace {

struct NamedLayer {
  const char* name;
  const OpLayer& layer;
};

std::vector<NamedLayer> layers() {
  return {{"meta", meta_layer()},
          {"kernel", kernel_layer()},
          {"derivative", derivative_layer()},
          {"decomposition", decomposition_layer()},
          {"autograd form", autograd_form_layer()},
          {"lowering", lowering_layer()}};
}

} // namespace

TEST_CASE("ops: every declaration parses, and its tags agree with its signature") {
  CHECK(all_ops().size() == kNumOps);
  std::string prev;
  for (const OpInfo& op : all_ops()) {
    std::string t(op.target);
    CHECK_MESSAGE(prev < t, t); // sorted and unique
    prev = t;
    CHECK(op_info(op.id).target == op.target);
    CHECK(find_op(op.target) == op.id);
    const OpSchema* s = find_schema(op.target);
    REQUIRE_MESSAGE(s != nullptr, t);
    CHECK_MESSAGE(s->is_view == has_tag(op.id, OpTag::View), t);
    CHECK_MESSAGE(s->is_inplace == has_tag(op.id, OpTag::Inplace), t);
  }
  CHECK(all_schemas().size() == kNumOps);
  CHECK_FALSE(find_op("aten.nonexistent.default").has_value());
  CHECK_FALSE(target_has_tag("aten.nonexistent.default", OpTag::Pointwise));
  CHECK(target_has_tag("aten.add.Tensor", OpTag::Pointwise));
  CHECK(target_has_tag("aten.view.default", OpTag::View));
  CHECK(target_has_tag("aten.relu_.default", OpTag::Inplace));
}

TEST_CASE("ops: no layer lists an op twice") {
  for (const NamedLayer& l : layers()) {
    std::optional<OpId> d = l.layer.duplicate();
    CHECK_MESSAGE(!d, l.name << " lists " << (d ? op_info(*d).target : "") << " twice");
  }
}

// Meta, kernel and lowering tables are joined from one row array per op family: every part's
// rows count, and an op two families list is a duplicate.
TEST_CASE("ops: a table joined from family parts keeps every part's rows") {
  using Fn = int (*)();
  using Table = OpTable<Fn>;
  Fn one = [] { return 1; }, two = [] { return 2; };
  const Table::Row a[] = {{OpId::abs, one}};
  const Table::Row b[] = {{OpId::mm, two}, {OpId::view, one}};
  Table joined({std::span<const Table::Row>(a), std::span<const Table::Row>(b)});
  CHECK(joined.has(OpId::abs));
  CHECK(joined.has(OpId::view));
  REQUIRE((joined[OpId::mm] != nullptr));
  CHECK(joined[OpId::mm]() == 2);
  CHECK((joined.find("aten.abs.default") == one));
  CHECK_FALSE(joined.has(OpId::relu));
  CHECK_FALSE(joined.duplicate().has_value());
  const Table::Row again[] = {{OpId::view, two}};
  Table dup({std::span<const Table::Row>(a), std::span<const Table::Row>(b),
             std::span<const Table::Row>(again)});
  CHECK(dup.duplicate() == OpId::view);
}

// A composite op (frontend/composite.h) takes both from its decomposition; an in-place op with
// neither, from its functional op.
TEST_CASE("ops: every op has a meta function and a reference kernel, or is composite") {
  for (const OpInfo& op : all_ops()) {
    const bool composite = decomposition_layer().has(op.id) ||
                           (has_tag(op.id, OpTag::Inplace) && is_composite(op.target));
    CHECK_MESSAGE((meta_layer().has(op.id) || composite), op.target << " has no meta function");
    CHECK_MESSAGE((kernel_layer().has(op.id) || composite),
                  op.target << " has no reference kernel");
    CHECK_MESSAGE(meta_layer().has(op.id) == kernel_layer().has(op.id),
                  op.target << " has a meta function or a kernel but not both");
    if (!meta_layer().has(op.id)) {
      CHECK_MESSAGE(is_composite(op.target), op.target);
      CHECK_MESSAGE((find_meta(op.target) != nullptr), op.target);
    }
  }
}

TEST_CASE("ops: differentiable ops have a derivative or a decomposition, and only they do") {
  for (const OpInfo& op : all_ops()) {
    const bool diff = has_tag(op.id, OpTag::Differentiable);
    const bool rule = derivative_layer().has(op.id) || decomposition_layer().has(op.id) ||
                      autograd_form_layer().has(op.id);
    // In-place ops are differentiated only when a graph is functional; autograd refuses them.
    if (diff && !has_tag(op.id, OpTag::Inplace))
      CHECK_MESSAGE(rule, op.target << " is differentiable but has no derivative or decomposition");
    if (derivative_layer().has(op.id))
      CHECK_MESSAGE(diff, op.target << " has a derivative but is not tagged Differentiable");
  }
}

TEST_CASE("ops: pointwise ops lower; recomputable ops neither reduce nor mutate") {
  for (const OpInfo& op : all_ops()) {
    const bool lowers = lowering_layer().has(op.id) || decomposition_layer().has(op.id);
    if (has_tag(op.id, OpTag::Pointwise) && !has_tag(op.id, OpTag::Inplace))
      CHECK_MESSAGE(lowers, op.target << " is pointwise but inductor cannot lower it");
    if (has_tag(op.id, OpTag::Recomputable))
      CHECK_MESSAGE(!(has_tag(op.id, OpTag::Reduction) || has_tag(op.id, OpTag::Inplace)),
                    op.target << " is recomputable but reduces or mutates");
  }
}

TEST_CASE("ops: PyTorch's operator aliases name declared ops") {
  for (const char* alias :
       {"aten.__and__.Tensor",     "aten.__and__.Scalar",     "aten.__or__.Tensor",
        "aten.__or__.Scalar",      "aten.__xor__.Tensor",     "aten.__xor__.Scalar",
        "aten.__lshift__.Tensor",  "aten.__lshift__.Scalar",  "aten.__rshift__.Tensor",
        "aten.__rshift__.Scalar",  "aten.__iand__.Tensor",    "aten.__iand__.Scalar",
        "aten.__ior__.Tensor",     "aten.__ior__.Scalar",     "aten.__ixor__.Tensor",
        "aten.__ixor__.Scalar",    "aten.__ilshift__.Tensor", "aten.__ilshift__.Scalar",
        "aten.__irshift__.Tensor", "aten.__irshift__.Scalar"}) {
    CAPTURE(alias);
    std::string_view op = canonical_target(alias);
    CHECK(op != alias);
    CHECK(find_op(op).has_value());
  }
  CHECK(canonical_target("aten.add.Tensor") == "aten.add.Tensor");
}
