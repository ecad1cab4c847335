// Memory planning: storage slots for the buffers of a fused schedule, reused after last use.
#pragma once

#include "passes/fuse.h"
#include "passes/loop_ir.h"

#include <string>
#include <vector>

namespace fxc {

struct MemoryPlanOptions {
  bool reuse = true;   ///< a freed slot of the same size is given to a later buffer
  bool inplace = true; ///< a kernel output may take the slot of an input it is the last user of
  /// Freezing (inference): an item that reads only weights and other such items' results, and
  /// writes no graph output, is marked `prepared`; its results get slots of their own that are
  /// never allocated, freed, reused or written in place (computed once when the plan is loaded).
  /// Fallback calls are never prepared (they run the reference interpreter on the host).
  bool freeze = false;
};

struct MemoryPlan {
  std::vector<int> slot_of; ///< per buffer; -1 when never in memory
  std::vector<int64_t> slot_bytes;
  std::vector<bool> slot_is_input;            ///< bound to a graph input or weight
  std::vector<bool> slot_is_prepared;         ///< written once by a prepared item (freeze)
  std::vector<bool> item_prepared;            ///< per schedule item: computed from weights only
  std::vector<std::vector<int>> alloc_before; ///< per schedule item: slots to allocate
  std::vector<std::vector<int>> free_after;   ///< per schedule item: slots to release
  int64_t peak_bytes = 0;                     ///< most intermediate bytes alive at once
  int64_t total_bytes = 0;                    ///< intermediate bytes without any reuse
  std::string log;                            ///< one line per reuse / in-place decision
};

/// Assigns storage to every buffer that is read or written in memory by `s`. Inputs and
/// weights get their own slots (never allocated or freed); graph outputs live to the end.
/// A buffer's slot is freed after its last reader; a new buffer takes a free slot of exactly its
/// size, or (in place) the slot of a kernel input whose last reader is that kernel, when every
/// read of the input in the kernel is at the element the output writes and happens no later.
/// With `freeze`, items computed from weights alone are `item_prepared` and their results sit in
/// `slot_is_prepared` slots, outside alloc_before/free_after and the peak.
/// Covered by test/unit/fuse_test.cpp (memory plan cases) and test/unit/freeze_test.cpp.
MemoryPlan plan_memory(const LoopProgram& p, const Schedule& s, const MemoryPlanOptions& opts = {});

} // namespace fxc
