// Memory planning: liveness over the schedule, slot reuse by size, in-place kernel outputs.
#include "passes/memory_plan.h"

#include <algorithm>
#include <cassert>
#include <map>
#include <set>

namespace fxc {

namespace {

/// Buffers written by schedule item `item`.
std::vector<int> item_writes(const LoopProgram& p, const Schedule& s, const ScheduleItem& item) {
  if (item.is_kernel) return s.kernels[item.index].outputs;
  return p.buffers[item.index].call.outputs;
}

std::vector<int> item_reads(const LoopProgram& p, const Schedule& s, const ScheduleItem& item) {
  if (item.is_kernel) return s.kernels[item.index].inputs;
  std::vector<int> r;
  for (auto& o : p.buffers[item.index].call.operands) r.push_back(o.buffer);
  return r;
}

/// Whether output `out` of kernel k may overwrite input `in` element by element.
bool inplace_ok(const LoopProgram& p, const Kernel& k, int in, int out) {
  int out_member = -1;
  for (int i = 0; i < int(k.members.size()); ++i)
    if (k.members[i].buffer == out) out_member = i;
  if (out_member < 0 || k.members[out_member].role != MemberRole::Inner) return false;
  if (p.buffers[in].nbytes() != p.buffers[out].nbytes() ||
      dtype_size(p.buffers[in].dtype) != dtype_size(p.buffers[out].dtype))
    return false;
  IndexExpr same = IndexExpr::var(kXVar, k.xnumel) * k.rnumel + IndexExpr::var(kRVar, k.rnumel);
  int out_stage = -1;
  for (int si = 0; si < int(k.stages.size()); ++si)
    for (int mi : k.stages[si].members)
      if (mi == out_member) out_stage = si;
  bool ok = true;
  for (int si = 0; si < int(k.stages.size()); ++si)
    for (int mi : k.stages[si].members) {
      const KernelMember& m = k.members[mi];
      const Buffer& b = p.buffers[m.buffer];
      auto sub = member_subst(b, m.role, k.xnumel, k.rnumel);
      for_each_load(b.body, [&](const VExpr& l) {
        if (l.buffer != in) return;
        // Reads after the write (a later member of the same loop, or a later stage) or at
        // another element would see overwritten data.
        if (si != out_stage || mi > out_member || m.role != MemberRole::Inner)
          ok = false;
        else if (l.index.substitute(sub) != same)
          ok = false;
      });
    }
  return ok;
}

} // namespace

MemoryPlan plan_memory(const LoopProgram& p, const Schedule& s, const MemoryPlanOptions& opts) {
  MemoryPlan mp;
  size_t nb = p.buffers.size(), ni = s.items.size();
  mp.slot_of.assign(nb, -1);
  mp.alloc_before.resize(ni);
  mp.free_after.resize(ni);
  mp.item_prepared.assign(ni, false);
  std::vector<bool> is_output(nb, false);
  for (auto& o : p.outputs) is_output[o.buffer] = true;
  if (opts.freeze) {
    // Buffers whose value is the same every run: weights, then what prepared items write.
    std::vector<bool> constant(nb, false);
    for (size_t b = 0; b < nb; ++b)
      constant[b] = p.buffers[b].kind == Buffer::Kind::Input && p.buffers[b].input_index < 0;
    for (size_t i = 0; i < ni; ++i) {
      const ScheduleItem& item = s.items[i];
      if (!item.is_kernel && p.buffers[item.index].call.kind == ExternCall::Kind::Fallback)
        continue;
      bool ok = true;
      for (int b : item_reads(p, s, item)) ok = ok && constant[b];
      for (int b : item_writes(p, s, item)) ok = ok && !is_output[b];
      if (!ok) continue;
      mp.item_prepared[i] = true;
      for (int b : item_writes(p, s, item)) constant[b] = true;
      mp.log += std::string("prepare: ") +
                (item.is_kernel ? s.kernels[item.index].name : p.buffers[item.index].name) +
                " reads weights only\n";
    }
  }
  std::vector<int> last_use(nb, -1);
  for (size_t i = 0; i < ni; ++i)
    for (int b : item_reads(p, s, s.items[i])) last_use[b] = std::max(last_use[b], int(i));
  auto new_slot = [&](int64_t bytes, bool input, bool prepared = false) {
    mp.slot_bytes.push_back(bytes);
    mp.slot_is_input.push_back(input);
    mp.slot_is_prepared.push_back(prepared);
    return int(mp.slot_bytes.size()) - 1;
  };
  for (size_t b = 0; b < nb; ++b)
    if (p.buffers[b].kind == Buffer::Kind::Input)
      mp.slot_of[b] = new_slot(p.buffers[b].nbytes(), true);
  std::multimap<int64_t, int> free_slots; // bytes → slot, smallest slot id first among equals
  int64_t live = 0;
  for (size_t i = 0; i < ni; ++i) {
    const ScheduleItem& item = s.items[i];
    if (mp.item_prepared[i]) {
      // Its reads are weights and prepared slots, which are never freed: nothing to release.
      for (int b : item_writes(p, s, item))
        mp.slot_of[b] = new_slot(p.buffers[b].nbytes(), false, /*prepared=*/true);
      continue;
    }
    for (int b : item_writes(p, s, item)) {
      int64_t bytes = p.buffers[b].nbytes();
      mp.total_bytes += bytes;
      if (opts.inplace && item.is_kernel) {
        const Kernel& k = s.kernels[item.index];
        for (int in : k.inputs) {
          int sl = mp.slot_of[in];
          if (sl < 0 || mp.slot_is_input[sl] || mp.slot_is_prepared[sl] || is_output[in] ||
              last_use[in] != int(i))
            continue;
          bool taken = false;
          for (size_t q = 0; q < nb; ++q)
            if (int(q) != in && mp.slot_of[q] == sl && last_use[q] >= int(i)) taken = true;
          for (int w : item_writes(p, s, item))
            if (w != b && mp.slot_of[w] == sl) taken = true;
          if (taken || !inplace_ok(p, k, in, b)) continue;
          mp.slot_of[b] = sl;
          mp.log += "inplace: " + p.buffers[b].name + " reuses " + p.buffers[in].name + " in " +
                    k.name + "\n";
          break;
        }
        if (mp.slot_of[b] >= 0) continue;
      }
      auto it = opts.reuse ? free_slots.find(bytes) : free_slots.end();
      if (it != free_slots.end()) {
        mp.slot_of[b] = it->second;
        mp.log +=
            "reuse: " + p.buffers[b].name + " takes slot " + std::to_string(it->second) + "\n";
        free_slots.erase(it);
      } else {
        mp.slot_of[b] = new_slot(bytes, false);
      }
      mp.alloc_before[i].push_back(mp.slot_of[b]);
      live += bytes;
    }
    mp.peak_bytes = std::max(mp.peak_bytes, live);
    // Release slots whose every buffer is dead after this item.
    std::set<int> candidates;
    for (int b : item_reads(p, s, item)) candidates.insert(b);
    for (int b : item_writes(p, s, item)) candidates.insert(b);
    for (int b : candidates) {
      int sl = mp.slot_of[b];
      if (sl < 0 || mp.slot_is_input[sl] || mp.slot_is_prepared[sl] || is_output[b]) continue;
      bool dead = true;
      for (size_t q = 0; q < nb; ++q)
        if (mp.slot_of[q] == sl && (last_use[q] > int(i) || is_output[q])) dead = false;
      if (!dead) continue;
      if (std::find(mp.free_after[i].begin(), mp.free_after[i].end(), sl) != mp.free_after[i].end())
        continue;
      bool already = false;
      for (auto& [bytes, fs] : free_slots) already = already || fs == sl;
      if (already) continue;
      mp.free_after[i].push_back(sl);
      free_slots.insert({mp.slot_bytes[sl], sl});
      live -= mp.slot_bytes[sl];
    }
  }
  // In-place slots are allocated once: drop duplicate allocations of a slot still alive.
  mp.log += "peak " + std::to_string(mp.peak_bytes) + " bytes, " + std::to_string(mp.total_bytes) +
            " bytes without reuse\n";
  return mp;
}

} // namespace fxc
