// Executes a compiled host plan on a CUDA device: device slots, kernel launches, cuBLASLt, copies.
#include "frontend/diag.h"
#include "runtime/cublaslt.h"
#include "runtime/cuda_driver.h"
#include "runtime/cuda_tensor.h"
#include "runtime/interpreter.h"
#include "runtime/plan_executor.h"

#include <algorithm>

namespace fxc {

namespace {

using cuda::Context;
using cuda::DevicePtr;

/// Device allocations of one run, released however the run ends.
struct DeviceSlots {
  Context& ctx;
  std::vector<DevicePtr> ptr;
  std::vector<bool> owned;
  DeviceSlots(Context& c, size_t n) : ctx(c), ptr(n, 0), owned(n, false) {}
  ~DeviceSlots() {
    for (size_t i = 0; i < ptr.size(); ++i)
      if (owned[i] && ptr[i]) ctx.mem_free(ptr[i]);
  }
  void alloc(int i, int64_t bytes) {
    release(i);
    ptr[i] = ctx.mem_alloc(size_t(std::max<int64_t>(bytes, 256)));
    owned[i] = true;
  }
  void release(int i) {
    if (owned[i] && ptr[i]) ctx.mem_free(ptr[i]);
    ptr[i] = 0;
    owned[i] = false;
  }
};

/// The host copy of a view of slot `v.slot` (the whole slot is copied, then viewed).
Tensor download_view(Context& ctx, const DeviceSlots& s, const Plan& plan, const PlanView& v) {
  int64_t elem = int64_t(dtype_size(v.meta.dtype));
  Tensor flat = cuda::download(ctx, s.ptr[v.slot], v.meta.dtype, {plan.slot_bytes[v.slot] / elem});
  return flat.as_strided(v.meta.sizes, v.meta.strides, v.meta.storage_offset);
}

void run_gemm(Context& ctx, const DeviceSlots& s, const PlanExtern& e, const std::string& source) {
  const TensorMeta &a = e.inputs[0].meta, &b = e.inputs[1].meta, &c = e.outputs[0].meta;
  bool batched = a.sizes.size() == 3;
  int o = batched ? 1 : 0;
  cuda::MatmulProblem p;
  p.dtype = c.dtype;
  p.m = a.sizes[o];
  p.k = a.sizes[o + 1];
  p.n = b.sizes[o + 1];
  BlasMatrix la = blas_matrix(p.m, p.k, a.strides[o], a.strides[o + 1]);
  BlasMatrix lb = blas_matrix(p.k, p.n, b.strides[o], b.strides[o + 1]);
  if (!la.ok || !lb.ok)
    throw Error(source, "matmul operand strides are not supported on CUDA", e.name);
  p.trans_a = la.trans;
  p.trans_b = lb.trans;
  p.lda = la.ld;
  p.ldb = lb.ld;
  p.batch = batched ? a.sizes[0] : 1;
  p.stride_a = batched ? a.strides[0] : 0;
  p.stride_b = batched ? b.strides[0] : 0;
  p.stride_d = p.m * p.n;
  int64_t elem = int64_t(dtype_size(c.dtype));
  DevicePtr pa = s.ptr[e.inputs[0].slot] + uint64_t(a.storage_offset * elem);
  DevicePtr pb = s.ptr[e.inputs[1].slot] + uint64_t(b.storage_offset * elem);
  DevicePtr pd = s.ptr[e.outputs[0].slot];
  if (p.m == 0 || p.n == 0) return;
  if (p.k == 0) {
    ctx.fill_bytes(pd, 0, size_t(p.batch * p.m * p.n * elem));
    return;
  }
  cuda::CublasLt::get().matmul(p, pa, pb, 0, pd);
}

void run_fallback(Context& ctx, DeviceSlots& s, const Plan& plan, const PlanExtern& e,
                  const std::string& source) {
  std::vector<Tensor> ins;
  for (const PlanView& v : e.inputs) ins.push_back(download_view(ctx, s, plan, v));
  std::vector<Tensor> outs = interpret(*e.graph, ins);
  if (outs.size() != e.outputs.size())
    throw Error(source, "reference kernel returned " + std::to_string(outs.size()) + " outputs",
                e.name);
  for (size_t i = 0; i < outs.size(); ++i) {
    const PlanView& v = e.outputs[i];
    Tensor t = outs[i].dtype() == v.meta.dtype ? outs[i] : outs[i].to(v.meta.dtype);
    if (t.numel() * int64_t(dtype_size(t.dtype())) > plan.slot_bytes[v.slot])
      throw Error(source, "reference kernel output " + std::to_string(i) + " is too large", e.name);
    cuda::upload(ctx, t, s.ptr[v.slot]);
  }
}

} // namespace

CudaPlanRunner::CudaPlanRunner(const Plan& plan, std::string source)
    : plan_(plan), source_(std::move(source)), constants_(plan.slot_bytes.size(), 0) {
  try {
    Context& ctx = Context::get();
    for (auto& [slot, t] : plan.constant_slots) {
      constants_[slot] = ctx.mem_alloc(std::max<size_t>(cuda::device_bytes(t), 256));
      cuda::upload(ctx, t, constants_[slot]);
    }
  } catch (const cuda::CudaError& e) {
    throw Error(source_, e.what());
  }
}

CudaPlanRunner::~CudaPlanRunner() {
  if (!Context::unavailable_reason().empty()) return;
  Context& ctx = Context::get();
  for (uint64_t p : constants_)
    if (p) ctx.mem_free(p);
}

std::vector<Tensor> CudaPlanRunner::run(const std::vector<Tensor>& user_inputs) {
  const Plan& plan = plan_;
  if (user_inputs.size() != plan.input_slots.size())
    throw Error(source_, "expected " + std::to_string(plan.input_slots.size()) + " inputs, got " +
                             std::to_string(user_inputs.size()));
  try {
    Context& ctx = Context::get();
    DeviceSlots s(ctx, plan.slot_bytes.size());
    for (size_t i = 0; i < user_inputs.size(); ++i) {
      const Tensor& t = user_inputs[i];
      const TensorMeta& m = plan.input_metas[i];
      if (t.dtype() != m.dtype || t.sizes() != m.sizes)
        throw Error(source_, "input " + std::to_string(i) + " is " + format_meta(t.meta()) +
                                 " but the graph expects " + format_meta(m));
      int sl = plan.input_slots[i];
      s.alloc(sl, plan.slot_bytes[sl]);
      cuda::upload(ctx, t, s.ptr[sl]);
    }
    for (auto& [slot, t] : plan.constant_slots) s.ptr[slot] = constants_[slot];
    for (const PlanStep& st : plan.steps) {
      switch (st.kind) {
      case PlanStep::Kind::Alloc:
        s.alloc(st.index, plan.slot_bytes[st.index]);
        break;
      case PlanStep::Kind::Free:
        s.release(st.index);
        break;
      case PlanStep::Kind::Kernel: {
        const PlanKernel& k = plan.kernels[st.index];
        if (!k.fail.empty()) throw Error(source_, k.fail, k.name);
        if (!k.cuda_function) throw Error(source_, "kernel has no CUDA function", k.name);
        if (k.xnumel > 0x7fffffff) throw Error(source_, "too many rows for one grid", k.name);
        std::vector<DevicePtr> ptrs;
        for (int a : k.arg_slots) ptrs.push_back(s.ptr[a]);
        int64_t xn = k.xnumel;
        std::vector<void*> params;
        for (DevicePtr& p : ptrs) params.push_back(&p);
        params.push_back(&xn);
        ctx.launch(k.cuda_function, {unsigned(xn), 1, 1}, {unsigned(k.cuda_block), 1, 1}, 0,
                   params.data(), k.name);
        break;
      }
      case PlanStep::Kind::Extern: {
        const PlanExtern& e = plan.externs[st.index];
        if (e.kind == PlanExtern::Kind::Gemm)
          run_gemm(ctx, s, e, source_);
        else
          run_fallback(ctx, s, plan, e, source_);
        break;
      }
      }
    }
    ctx.synchronize();
    std::vector<Tensor> outs;
    for (const PlanView& v : plan.outputs) outs.push_back(download_view(ctx, s, plan, v).clone());
    return outs;
  } catch (const cuda::CudaError& e) {
    throw Error(source_, e.what());
  }
}

} // namespace fxc
