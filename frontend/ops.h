// The op registry: every ATen op fxc knows, declared once in frontend/ops.def with its schema
// and tags. Each layer (meta functions, reference kernels, derivatives, decompositions,
// lowerings) keys its table by OpId, so a row for an op that is not declared does not compile;
// test/unit/ops_test.cpp checks that the layers agree (docs/adding-an-op.md).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace fxc {

/// One enumerator per declared op, in the order of frontend/ops.def.
enum class OpId : uint16_t {
#define FXC_OP(id, signature, tags) id,
#include "frontend/ops.def"
#undef FXC_OP
};

inline constexpr size_t kNumOps = 0
#define FXC_OP(id, signature, tags) +1
#include "frontend/ops.def"
#undef FXC_OP
    ;

/// What an op is, for the passes that treat whole families alike.
enum class OpTag : uint32_t {
  Pointwise = 1u << 0,        ///< each output element depends on the same element of each input
  Reduction = 1u << 1,        ///< reduces dimensions (sum, amax, argmax ...)
  Scan = 1u << 2,             ///< cumulative along a dimension (cumsum ...)
  View = 1u << 3,             ///< output aliases the first input (from the signature's "(a)")
  Indexing = 1u << 4,         ///< reads or writes through an index tensor or range
  Random = 1u << 5,           ///< draws from the generator (docs/design.md says which)
  Inplace = 1u << 6,          ///< mutates `self` (from the trailing '_' of the name)
  Nondeterministic = 1u << 7, ///< results may differ in the last bits between runs on CUDA
  Differentiable = 1u << 8,   ///< float outputs depend differentiably on float inputs
  Recomputable = 1u << 9,     ///< cheap enough for the partitioner to recompute in the backward
  Factory = 1u << 10,         ///< makes a tensor from sizes and scalars only
  DataDependent = 1u << 11, ///< a result's size depends on the input's values (nonzero): eager only
  /// a dense matrix decomposition or solve (LU, Cholesky, QR, eigh, SVD ...) whose reference
  /// kernel calls LAPACK; it has no CUDA implementation yet, so a CUDA plan refuses it
  LinalgDecomposition = 1u << 12,
};
inline constexpr OpTag kAllOpTags[] = {
    OpTag::Pointwise,          OpTag::Reduction,    OpTag::Scan,    OpTag::View,
    OpTag::Indexing,           OpTag::Random,       OpTag::Inplace, OpTag::Nondeterministic,
    OpTag::Differentiable,     OpTag::Recomputable, OpTag::Factory, OpTag::DataDependent,
    OpTag::LinalgDecomposition};

/// The declaration of one op.
struct OpInfo {
  OpId id;
  std::string_view name;   ///< the C++ name, "add_Tensor"
  std::string_view target; ///< "aten.add.Tensor"
  std::string_view
      signature; ///< "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
  uint32_t tags; ///< OpTag bits, View and Inplace included
};

/// The declaration of `id`.
const OpInfo& op_info(OpId id);
/// The op a normalised target ("aten.add.Tensor") names, or nullopt (plugin ops included).
std::optional<OpId> find_op(std::string_view target);
/// The op that PyTorch's alias `target` names ("aten.__and__.Tensor" -> "aten.bitwise_and.Tensor":
/// Python's operators on tensors), or `target` itself when it is no alias.
std::string_view canonical_target(std::string_view target);
/// Every declared op, sorted by target.
const std::vector<OpInfo>& all_ops();

inline bool has_tag(OpId id, OpTag tag) {
  return (op_info(id).tags & uint32_t(tag)) != 0;
}
/// Whether `target` is a declared op with `tag` (false for plugin and unknown ops).
bool target_has_tag(std::string_view target, OpTag tag);

/// The name of one tag as --list-ops and docs/ops.md print it ("pointwise").
std::string_view tag_name(OpTag tag);

/// Which ops one layer (meta functions, kernels, derivatives ...) has an entry for: what the
/// consistency test and `fxc --list-ops` read.
class OpLayer {
public:
  bool has(OpId id) const { return present_[size_t(id)]; }
  /// The first op the layer's table lists twice, if any.
  std::optional<OpId> duplicate() const { return duplicate_; }

protected:
  OpLayer() : present_(kNumOps, false) {}
  void mark(OpId id) {
    if (present_[size_t(id)] && !duplicate_) duplicate_ = id;
    present_[size_t(id)] = true;
  }

private:
  std::vector<bool> present_;
  std::optional<OpId> duplicate_;
};

/// One layer's table, indexed by OpId. Rows name their op by OpId, so a row for an op that is
/// not declared does not compile.
template <class Fn> class OpTable : public OpLayer {
public:
  struct Row {
    OpId op;
    Fn fn;
  };
  template <size_t N> explicit OpTable(const Row (&rows)[N]) : fns_(kNumOps, nullptr) {
    for (const Row& r : rows) {
      mark(r.op);
      fns_[size_t(r.op)] = r.fn;
    }
  }
  /// The rows of several arrays (one per op family), as one table.
  explicit OpTable(std::initializer_list<std::span<const Row>> parts) : fns_(kNumOps, nullptr) {
    for (std::span<const Row> rows : parts)
      for (const Row& r : rows) {
        mark(r.op);
        fns_[size_t(r.op)] = r.fn;
      }
  }
  /// The entry for `id`, or nullptr.
  Fn operator[](OpId id) const { return fns_[size_t(id)]; }
  /// The entry for a target, or nullptr (unknown and plugin ops too).
  Fn find(std::string_view target) const {
    std::optional<OpId> id = find_op(target);
    return id ? fns_[size_t(*id)] : nullptr;
  }

private:
  std::vector<Fn> fns_;
};

} // namespace fxc
