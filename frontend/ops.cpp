// The op registry's declarations (frontend/ops.def) as a sorted table.
#include "frontend/ops.h"

#include <algorithm>
#include <cassert>
#include <map>
#include <string>

namespace fxc {

namespace {

// The spelling of tags in frontend/ops.def.
namespace decl_tags {
constexpr uint32_t None = 0;
#define FXC_TAG(name) constexpr uint32_t name = uint32_t(OpTag::name);
// clang-format off
FXC_TAG(Pointwise) FXC_TAG(Reduction) FXC_TAG(Scan) FXC_TAG(View) FXC_TAG(Indexing)
FXC_TAG(Random) FXC_TAG(Inplace) FXC_TAG(Nondeterministic) FXC_TAG(Differentiable)
FXC_TAG(Recomputable) FXC_TAG(Factory) FXC_TAG(DataDependent) FXC_TAG(LinalgDecomposition)
// clang-format on
#undef FXC_TAG
} // namespace decl_tags
using namespace decl_tags;

// "add.Tensor(...)" -> "aten.add.Tensor"; "abs(...)" -> "aten.abs.default".
std::string target_of(std::string_view signature) {
  std::string_view fname = signature.substr(0, signature.find('('));
  size_t dot = fname.find('.');
  if (dot == std::string_view::npos) return "aten." + std::string(fname) + ".default";
  return "aten." + std::string(fname);
}

uint32_t implied_tags(std::string_view signature) {
  std::string_view fname = signature.substr(0, signature.find_first_of(".("));
  uint32_t tags = 0;
  if (!fname.empty() && fname.back() == '_') tags |= uint32_t(OpTag::Inplace);
  // The first argument ends at the first ',' or at the ") ->" that closes the list.
  size_t lp = signature.find('(');
  size_t end = std::min(signature.find(',', lp), signature.find(") ->", lp));
  std::string_view first = signature.substr(lp + 1, end - lp - 1);
  if (first.find("(a)") != std::string_view::npos) tags |= uint32_t(OpTag::View);
  return tags;
}

struct Registry {
  std::vector<std::string> targets; // owns the strings OpInfo::target points into
  std::vector<OpInfo> by_id;
  std::vector<OpInfo> sorted;
  std::map<std::string, OpId, std::less<>> by_target;
};

const Registry& registry() {
  static const Registry* r = [] {
    auto* reg = new Registry;
    struct Decl {
      OpId id;
      const char* name;
      const char* signature;
      uint32_t tags;
    };
    static const Decl kDecls[] = {
#define FXC_OP(id, signature, tags) {OpId::id, #id, signature, uint32_t(tags)},
#include "frontend/ops.def"
#undef FXC_OP
    };
    reg->targets.reserve(kNumOps);
    for (const Decl& d : kDecls) reg->targets.push_back(target_of(d.signature));
    for (size_t i = 0; i < kNumOps; ++i) {
      const Decl& d = kDecls[i];
      assert(size_t(d.id) == i);
      reg->by_id.push_back(
          {d.id, d.name, reg->targets[i], d.signature, d.tags | implied_tags(d.signature)});
      bool inserted = reg->by_target.emplace(reg->targets[i], d.id).second;
      assert(inserted && "two declarations of one target in frontend/ops.def");
      (void)inserted;
    }
    reg->sorted = reg->by_id;
    std::sort(reg->sorted.begin(), reg->sorted.end(),
              [](const OpInfo& a, const OpInfo& b) { return a.target < b.target; });
    return reg;
  }();
  return *r;
}

} // namespace

const OpInfo& op_info(OpId id) {
  return registry().by_id[size_t(id)];
}

std::string_view canonical_target(std::string_view target) {
  static const std::pair<std::string_view, std::string_view> kAliases[] = {
      {"aten.__and__.Scalar", "aten.bitwise_and.Scalar"},
      {"aten.__and__.Tensor", "aten.bitwise_and.Tensor"},
      {"aten.__iand__.Scalar", "aten.bitwise_and_.Scalar"},
      {"aten.__iand__.Tensor", "aten.bitwise_and_.Tensor"},
      {"aten.__ilshift__.Scalar", "aten.bitwise_left_shift_.Tensor_Scalar"},
      {"aten.__ilshift__.Tensor", "aten.bitwise_left_shift_.Tensor"},
      {"aten.__ior__.Scalar", "aten.bitwise_or_.Scalar"},
      {"aten.__ior__.Tensor", "aten.bitwise_or_.Tensor"},
      {"aten.__irshift__.Scalar", "aten.bitwise_right_shift_.Tensor_Scalar"},
      {"aten.__irshift__.Tensor", "aten.bitwise_right_shift_.Tensor"},
      {"aten.__ixor__.Scalar", "aten.bitwise_xor_.Scalar"},
      {"aten.__ixor__.Tensor", "aten.bitwise_xor_.Tensor"},
      {"aten.__lshift__.Scalar", "aten.bitwise_left_shift.Tensor_Scalar"},
      {"aten.__lshift__.Tensor", "aten.bitwise_left_shift.Tensor"},
      {"aten.__or__.Scalar", "aten.bitwise_or.Scalar"},
      {"aten.__or__.Tensor", "aten.bitwise_or.Tensor"},
      {"aten.__rshift__.Scalar", "aten.bitwise_right_shift.Tensor_Scalar"},
      {"aten.__rshift__.Tensor", "aten.bitwise_right_shift.Tensor"},
      {"aten.__xor__.Scalar", "aten.bitwise_xor.Scalar"},
      {"aten.__xor__.Tensor", "aten.bitwise_xor.Tensor"},
  };
  for (const auto& [alias, op] : kAliases)
    if (target == alias) return op;
  return target;
}

std::optional<OpId> find_op(std::string_view target) {
  const auto& m = registry().by_target;
  auto it = m.find(target);
  if (it == m.end()) return std::nullopt;
  return it->second;
}

const std::vector<OpInfo>& all_ops() {
  return registry().sorted;
}

bool target_has_tag(std::string_view target, OpTag tag) {
  std::optional<OpId> id = find_op(target);
  return id && has_tag(*id, tag);
}

std::string_view tag_name(OpTag tag) {
  switch (tag) {
  case OpTag::Pointwise:
    return "pointwise";
  case OpTag::Reduction:
    return "reduction";
  case OpTag::Scan:
    return "scan";
  case OpTag::View:
    return "view";
  case OpTag::Indexing:
    return "indexing";
  case OpTag::Random:
    return "random";
  case OpTag::Inplace:
    return "inplace";
  case OpTag::Nondeterministic:
    return "nondeterministic";
  case OpTag::Differentiable:
    return "differentiable";
  case OpTag::Recomputable:
    return "recomputable";
  case OpTag::Factory:
    return "factory";
  case OpTag::DataDependent:
    return "data-dependent";
  case OpTag::LinalgDecomposition:
    return "linalg-decomposition";
  }
  return "?";
}

} // namespace fxc
