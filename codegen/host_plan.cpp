// Step "host-plan": the plan that runs a schedule's kernels and extern calls over the memory
// plan's slots, with the weights bound (runtime/plan_executor.h runs it).
#include "codegen/inductor_steps.h"

#include "frontend/diag.h"
#include "frontend/pass_timer.h"

#include <algorithm>
#include <cassert>
#include <optional>

namespace fxc {

namespace {

PlanView view_of(const MemoryPlan& mp, const Buffer& b, int id, std::vector<int64_t> sizes,
                 std::vector<int64_t> strides, int64_t offset) {
  PlanView v;
  v.slot = mp.slot_of[id];
  assert(v.slot >= 0 && "buffer without storage");
  v.meta.dtype = b.dtype;
  v.meta.sizes = std::move(sizes);
  v.meta.strides = std::move(strides);
  v.meta.storage_offset = offset;
  return v;
}

PlanView contiguous_view(const MemoryPlan& mp, const LoopProgram& p, int id) {
  const Buffer& b = p.buffers[id];
  return view_of(mp, b, id, b.sizes, contiguous_strides(b.sizes), 0);
}

// The graph's user inputs and weights: input slots and metas, weights as constant slots.
void bind_inputs(const Graph& g, const LoopProgram& p, const MemoryPlan& mp, Plan& plan) {
  PassTimer timer("weights");
  for (int b = 0; b < int(p.buffers.size()); ++b) {
    const Buffer& buf = p.buffers[b];
    if (buf.kind != Buffer::Kind::Input) continue;
    if (buf.input_index >= 0) {
      if (size_t(buf.input_index) >= plan.input_slots.size()) {
        plan.input_slots.resize(buf.input_index + 1, -1);
        plan.input_metas.resize(buf.input_index + 1);
      }
      plan.input_slots[buf.input_index] = mp.slot_of[b];
      TensorMeta m;
      m.dtype = buf.dtype;
      m.sizes = buf.sizes;
      m.strides = contiguous_strides(buf.sizes);
      plan.input_metas[buf.input_index] = m;
      continue;
    }
    auto it = g.weights.find(buf.weight);
    if (it == g.weights.end() || !it->second.storage)
      throw Error(g.source, "no data for weight '" + buf.weight + "'");
    TensorMeta want;
    want.dtype = buf.dtype;
    want.sizes = buf.sizes;
    if (it->second.meta.dtype != buf.dtype || it->second.meta.sizes != buf.sizes)
      throw Error(g.source, "weight '" + buf.weight + "' is " + format_meta(it->second.meta) +
                                " but the graph uses it as " + format_meta(want));
    Tensor t = Tensor::from_weight(it->second).contiguous();
    if (t.storage_offset() != 0) t = t.clone();
    plan.constant_slots.push_back({mp.slot_of[b], t});
  }
}

PlanKernel plan_kernel(const Graph& g, const LoopProgram& p, const Kernel& k,
                       const MemoryPlan& mp) {
  // Testing only: a planted bug in a node computed by this kernel.
  std::string planted, planted_node;
  for (const KernelMember& m : k.members)
    for (const std::string& origin : p.buffers[m.buffer].origins)
      if (p.injected.count(origin) && planted.empty()) {
        planted = p.injected.at(origin);
        planted_node = origin;
      }
  if (planted == "compile_error")
    throw Error(g.source, "injected compile error in generated kernel " + k.name, planted_node);
  PlanKernel pk;
  pk.name = k.name;
  std::vector<int> args = kernel_args(k);
  for (int a : args) pk.arg_slots.push_back(mp.slot_of[a]);
  pk.xnumel = k.xnumel;
  int64_t work_per_row = std::max<int64_t>(k.rnumel, 1) * int64_t(k.members.size());
  int64_t grain = std::max<int64_t>(1, 16384 / work_per_row);
  // At most kMaxTasks tasks a launch: a fixed count, not the pool's size, so that the plan
  // (and an .fxo) is the same bytes with any --threads and on any machine.
  constexpr int64_t kMaxTasks = 64;
  grain = std::max(grain, (k.xnumel + kMaxTasks - 1) / kMaxTasks);
  pk.grain = grain;
  for (int a : args) pk.bytes += p.buffers[a].nbytes();
  if (planted == "runtime_error")
    pk.fail = "injected runtime error in kernel " + k.name + " (node '" + planted_node + "')";
  return pk;
}

PlanExtern plan_extern(const LoopProgram& p, const Buffer& b, const MemoryPlan& mp) {
  PlanExtern e;
  switch (b.call.kind) {
  case ExternCall::Kind::Gemm:
    e.kind = PlanExtern::Kind::Gemm;
    break;
  case ExternCall::Kind::Conv:
    e.kind = PlanExtern::Kind::Conv;
    break;
  case ExternCall::Kind::ConvBackwardData:
    e.kind = PlanExtern::Kind::ConvBackwardData;
    break;
  case ExternCall::Kind::ConvBackwardFilter:
    e.kind = PlanExtern::Kind::ConvBackwardFilter;
    break;
  case ExternCall::Kind::Attention:
    e.kind = PlanExtern::Kind::Attention;
    break;
  case ExternCall::Kind::Fallback:
    e.kind = PlanExtern::Kind::Fallback;
    break;
  }
  e.epilogue = PlanExtern::Epilogue(int(b.call.epilogue)); // same enumerators, same order
  e.stride = b.call.stride;
  e.padding = b.call.padding;
  e.dilation = b.call.dilation;
  e.groups = b.call.groups;
  e.channels_last = b.call.channels_last;
  e.post_ops = b.call.post_ops;
  e.scale = b.call.scale;
  e.shift = b.call.shift;
  e.attn_scale = b.call.attn_scale;
  e.causal = b.call.causal;
  e.name = b.origins.empty() ? b.name : b.origins[0];
  for (const ExternOperand& o : b.call.operands)
    e.inputs.push_back(view_of(mp, p.buffers[o.buffer], o.buffer, o.sizes, o.strides, o.offset));
  for (int o : b.call.outputs) e.outputs.push_back(contiguous_view(mp, p, o));
  e.graph = b.call.graph;
  for (const ExternOperand& o : b.call.operands) e.bytes += p.buffers[o.buffer].nbytes();
  for (int o : b.call.outputs) e.bytes += p.buffers[o].nbytes();
  return e;
}

} // namespace

Plan build_host_plan(const Graph& g, const LoopProgram& p, const Schedule& s, const MemoryPlan& mp,
                     const std::map<std::string, PtxKernel>& ptx, bool matmul_tf32, bool conv_tf32,
                     std::vector<int>* kernel_index) {
  Plan plan;
  plan.slot_bytes = mp.slot_bytes;
  for (size_t sl = 0; sl < mp.slot_is_prepared.size(); ++sl)
    if (mp.slot_is_prepared[sl]) plan.prepared_slots.push_back(int(sl));
  plan.matmul_tf32 = matmul_tf32;
  plan.conv_tf32 = conv_tf32;
  bind_inputs(g, p, mp, plan);
  PassTimer timer("host plan");
  kernel_index->assign(s.kernels.size(), -1);
  for (size_t i = 0; i < s.items.size(); ++i) {
    for (int sl : mp.alloc_before[i]) plan.steps.push_back({PlanStep::Kind::Alloc, sl});
    const ScheduleItem& item = s.items[i];
    // Items computed from weights only run once, when the plan is loaded (MemoryPlan::freeze).
    std::vector<PlanStep>& steps =
        i < mp.item_prepared.size() && mp.item_prepared[i] ? plan.prepare : plan.steps;
    if (item.is_kernel) {
      const Kernel& k = s.kernels[item.index];
      (*kernel_index)[item.index] = int(plan.kernels.size());
      plan.kernels.push_back(plan_kernel(g, p, k, mp));
      if (k.xnumel > 0) steps.push_back({PlanStep::Kind::Kernel, (*kernel_index)[item.index]});
    } else {
      plan.externs.push_back(plan_extern(p, p.buffers[item.index], mp));
      steps.push_back({PlanStep::Kind::Extern, int(plan.externs.size()) - 1});
    }
    for (int sl : mp.free_after[i]) plan.steps.push_back({PlanStep::Kind::Free, sl});
  }
  for (const OutputView& o : p.outputs) {
    PlanView v;
    v.slot = mp.slot_of[o.buffer];
    v.meta = o.meta;
    plan.outputs.push_back(v);
  }
  for (size_t ki = 0; ki < s.kernels.size() && !ptx.empty(); ++ki) {
    const PtxKernel& pk = ptx.at(s.kernels[ki].name);
    assert(pk.args == kernel_args(s.kernels[ki]) && "PTX kernel arguments differ from the plan's");
    plan.kernels[(*kernel_index)[ki]].cuda_block = pk.block;
    plan.kernels[(*kernel_index)[ki]].cuda_rows = pk.rows;
  }
  return plan;
}

} // namespace fxc
