// Fusion: groups loop-IR buffers into kernels (vertical, reduction prologue/epilogue, horizontal).
#pragma once

#include "passes/loop_ir.h"

#include <map>
#include <string>
#include <vector>

namespace fxc {

struct FuseOptions {
  /// false: every buffer becomes its own kernel (for bisecting fusion bugs).
  bool enable = true;
};

/// How a member buffer maps onto its kernel's iteration space (x < xnumel, r < rnumel).
enum class MemberRole : uint8_t {
  Inner,  ///< pointwise over x * rnumel + r
  Outer,  ///< pointwise over x (one value per row, after a reduction)
  Reduce, ///< reduction: one result per x, reduced over r
};
std::string_view member_role_name(MemberRole r);

struct KernelMember {
  int buffer = -1;
  MemberRole role = MemberRole::Inner;
  bool store = true; ///< written to memory (read elsewhere, a graph output, or an inner member)
};

/// A run of members evaluated together: one loop over r (loop = true) or once per x.
struct KernelStage {
  bool loop = true;
  std::vector<int> members; ///< indices into Kernel::members
};

struct Kernel {
  std::string name; ///< "fused_addmm_relu_pow_0"
  int64_t xnumel = 1, rnumel = 1;
  std::vector<KernelMember> members; ///< in dependency order
  std::vector<KernelStage> stages;
  std::vector<int> inputs;  ///< buffers read from memory (sorted)
  std::vector<int> outputs; ///< buffers written (member order)
};

struct ScheduleItem {
  bool is_kernel = true;
  int index = -1; ///< kernel index, or the Extern buffer id
};

struct Schedule {
  std::vector<Kernel> kernels;
  std::vector<ScheduleItem> items; ///< execution order
  std::string log;                 ///< fusion decisions, one per line, deterministic
  /// Each buffer that starts a new kernel while another was scheduled just before it: why it
  /// did not join that one, e.g. "buf4 (relu_1) not fused with group 2 [buf3 (addmm)]: the
  /// group is an extern call (addmm), and extern calls never fuse".
  std::vector<std::string> unfused;
};

/// Groups the computed buffers of `p` into kernels. Each node joins the earlier kernel that
/// saves the most bytes (producer-consumer traffic plus shared reads) among those it may join:
/// the iteration spaces must match (pointwise numel = xnumel * rnumel, or = xnumel after a
/// reduction; reductions with equal xnumel and rnumel), every in-kernel read must stay within
/// the same x row, and no producer of the node may run after that kernel. Extern buffers
/// never fuse. Buffers no graph output depends on are dropped (logged as dead). Requires `p`
/// from lower(); guarantees every live computed buffer is in exactly one kernel or extern item
/// and items are in dependency order. Covered by test/unit/fuse_test.cpp.
Schedule fuse(const LoopProgram& p, const FuseOptions& opts = {});

/// Maps buffer b's variables onto the kernel variables x (< xnumel) and r (< rnumel).
std::map<int, IndexExpr> member_subst(const Buffer& b, MemberRole role, int64_t xnumel,
                                      int64_t rnumel);

/// ir_post_fusion: each kernel with its stages and members' bodies in terms of x and r.
std::string print_schedule(const LoopProgram& p, const Schedule& s);

} // namespace fxc
