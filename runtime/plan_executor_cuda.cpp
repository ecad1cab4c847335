// Executes a compiled host plan on a CUDA device: one arena, launches, cuBLASLt, cuDNN, graphs.
#include "frontend/diag.h"
#include "runtime/cublaslt.h"
#include "runtime/cuda_alloc.h"
#include "runtime/cuda_driver.h"
#include "runtime/cuda_tensor.h"
#include "runtime/cudnn.h"
#include "runtime/interpreter.h"
#include "runtime/plan_executor.h"
#include "runtime/plugin.h"

#include <algorithm>
#include <cassert>

namespace fxc {

const char* epilogue_name(PlanExtern::Epilogue e) {
  switch (e) {
  case PlanExtern::Epilogue::None:
    return "none";
  case PlanExtern::Epilogue::Bias:
    return "bias";
  case PlanExtern::Epilogue::ReluBias:
    return "relu_bias";
  case PlanExtern::Epilogue::GeluTanhBias:
    return "gelu_tanh_bias";
  case PlanExtern::Epilogue::BiasResidual:
    return "bias_residual";
  }
  return "?";
}

ArenaLayout plan_arena(const Plan& plan, bool intermediates_only) {
  constexpr int64_t kAlign = 256;
  size_t n = plan.slot_bytes.size();
  int64_t last = int64_t(plan.steps.size());
  // Lifetime of each slot in step indices: [first Alloc, last Free]; whole run otherwise.
  std::vector<int64_t> begin(n, -2), end(n, -2);
  for (int64_t i = 0; i < last; ++i) {
    const PlanStep& st = plan.steps[size_t(i)];
    if (st.kind == PlanStep::Kind::Alloc && begin[st.index] == -2) begin[st.index] = i;
    if (st.kind == PlanStep::Kind::Free) end[st.index] = i;
  }
  std::vector<bool> constant(n, false);
  for (auto& [slot, t] : plan.constant_slots) constant[slot] = true;
  for (int slot : plan.prepared_slots) constant[slot] = true; // allocated once, like weights
  // Inputs hold their uploaded values for the whole run (and the next resident run); outputs
  // live from their Alloc to the end, until download().
  std::vector<bool> input(n, false), output(n, false);
  for (int s : plan.input_slots)
    if (s >= 0) input[s] = true;
  for (const PlanView& v : plan.outputs) output[v.slot] = true;
  ArenaLayout a;
  a.offset.assign(n, -1);
  std::vector<size_t> order;
  for (size_t s = 0; s < n; ++s) {
    if (constant[s] || (intermediates_only && (input[s] || output[s]))) continue;
    if (input[s] || begin[s] == -2) begin[s] = -1;
    if (input[s] || output[s] || end[s] == -2 || end[s] < begin[s]) end[s] = last;
    order.push_back(s);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return begin[x] < begin[y]; });
  struct Live {
    int64_t offset, size, end;
  };
  std::vector<Live> live; // sorted by offset
  for (size_t s : order) {
    int64_t size = (std::max<int64_t>(plan.slot_bytes[s], 1) + kAlign - 1) / kAlign * kAlign;
    // A slot freed at a step before this slot's first Alloc no longer needs its bytes.
    live.erase(
        std::remove_if(live.begin(), live.end(), [&](const Live& l) { return l.end < begin[s]; }),
        live.end());
    int64_t at = 0; // first fit
    for (const Live& l : live) {
      if (l.offset - at >= size) break;
      at = std::max(at, l.offset + l.size);
    }
    a.offset[s] = at;
    a.bytes = std::max(a.bytes, at + size);
    Live nl{at, size, end[s]};
    live.insert(std::upper_bound(live.begin(), live.end(), nl,
                                 [](const Live& x, const Live& y) { return x.offset < y.offset; }),
                nl);
  }
  return a;
}

namespace {

using cuda::Context;
using cuda::DevicePtr;

DevicePtr view_ptr(const std::vector<uint64_t>& slot_ptr, const PlanView& v) {
  return slot_ptr[v.slot] + uint64_t(v.meta.storage_offset * int64_t(dtype_size(v.meta.dtype)));
}

/// The host copy of a view of slot `v.slot` (the whole slot is copied, then viewed).
Tensor download_view(Context& ctx, const std::vector<uint64_t>& slot_ptr, const Plan& plan,
                     const PlanView& v) {
  int64_t elem = int64_t(dtype_size(v.meta.dtype));
  Tensor flat =
      cuda::download(ctx, slot_ptr[v.slot], v.meta.dtype, {plan.slot_bytes[v.slot] / elem});
  return flat.as_strided(v.meta.sizes, v.meta.strides, v.meta.storage_offset);
}

cuda::Epilogue lt_epilogue(PlanExtern::Epilogue e) {
  switch (e) {
  case PlanExtern::Epilogue::None:
    return cuda::Epilogue::None;
  case PlanExtern::Epilogue::Bias:
    return cuda::Epilogue::Bias;
  case PlanExtern::Epilogue::ReluBias:
    return cuda::Epilogue::ReluBias;
  case PlanExtern::Epilogue::GeluTanhBias:
    return cuda::Epilogue::GeluBias;
  case PlanExtern::Epilogue::BiasResidual:
    return cuda::Epilogue::Bias; // the residual is C, with beta = 1
  }
  return cuda::Epilogue::None;
}

/// A gemm call's cuBLASLt problem and operands.
struct GemmCall {
  cuda::MatmulProblem p;
  DevicePtr a = 0, b = 0, bias = 0, d = 0;
  DevicePtr c = 0; ///< the residual added as cuBLASLt's C (p.beta = 1), or 0
  /// What to do instead of calling cuBLASLt: nothing (an empty product), or fill D with zeros
  /// (an empty inner dimension).
  bool empty = false, zero = false;
};

GemmCall gemm_call(const std::vector<uint64_t>& slot_ptr, const Plan& plan, const PlanExtern& e,
                   const std::string& source) {
  const TensorMeta &a = e.inputs[0].meta, &b = e.inputs[1].meta, &c = e.outputs[0].meta;
  bool batched = a.sizes.size() == 3;
  int o = batched ? 1 : 0;
  bool has_bias = e.epilogue != PlanExtern::Epilogue::None;
  bool has_residual = e.epilogue == PlanExtern::Epilogue::BiasResidual;
  if (e.inputs.size() != 2 + size_t(has_bias) + size_t(has_residual))
    throw Error(source, "matmul epilogue and operands do not match", e.name);
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
  p.epilogue = lt_epilogue(e.epilogue);
  p.allow_tf32 = plan.matmul_tf32;
  p.algo = e.algo;
  GemmCall call;
  call.d = slot_ptr[e.outputs[0].slot];
  if (p.m == 0 || p.n == 0) {
    call.empty = true;
    return call;
  }
  if (has_bias) {
    const TensorMeta& bm = e.inputs[2].meta;
    if (bm.dtype != c.dtype || bm.sizes != std::vector<int64_t>{p.n} ||
        (p.n > 1 && bm.strides[0] != 1))
      throw Error(source, "matmul bias must be " + std::to_string(p.n) + " contiguous values",
                  e.name);
    call.bias = view_ptr(slot_ptr, e.inputs[2]);
  }
  if (has_residual) {
    const TensorMeta& rm = e.inputs[3].meta;
    if (batched || rm.dtype != c.dtype || rm.sizes != c.sizes || !rm.is_contiguous())
      throw Error(source,
                  "matmul residual must be a contiguous [" + std::to_string(p.m) + ", " +
                      std::to_string(p.n) + "] matrix like the result",
                  e.name);
    call.c = view_ptr(slot_ptr, e.inputs[3]);
    p.beta = 1.0f;
  }
  if (p.k == 0) {
    if (has_bias)
      throw Error(source, "matmul with an epilogue and an empty inner dimension", e.name);
    call.zero = true;
  }
  call.a = view_ptr(slot_ptr, e.inputs[0]);
  call.b = view_ptr(slot_ptr, e.inputs[1]);
  call.p = p;
  return call;
}

void run_gemm(Context& ctx, const std::vector<uint64_t>& slot_ptr, const Plan& plan,
              const PlanExtern& e, const std::string& source) {
  GemmCall g = gemm_call(slot_ptr, plan, e, source);
  if (g.empty) return;
  if (g.zero) {
    int64_t elem = int64_t(dtype_size(g.p.dtype));
    ctx.fill_bytes(g.d, 0, size_t(g.p.batch * g.p.m * g.p.n * elem));
    return;
  }
  cuda::CublasLt::get(ctx).matmul(g.p, g.a, g.b, g.bias, g.d, g.c);
}

/// A convolution argument of a cuDNN call as its {h, w} pair.
std::array<int64_t, 2> hw(const std::vector<int64_t>& v, const PlanExtern& e,
                          const std::string& source) {
  if (v.size() != 2)
    throw Error(source,
                "cuDNN convolution calls are 2-D; this one has " + std::to_string(v.size()) +
                    " spatial dims",
                e.name);
  return {v[0], v[1]};
}

void run_conv(Context& ctx, const std::vector<uint64_t>& slot_ptr, const Plan& plan,
              const PlanExtern& e, const std::string& source) {
  if (e.inputs.size() < 2 || e.inputs.size() > 3 || e.outputs.size() != 1)
    throw Error(source, "convolution call needs x, w (and a bias) and one output", e.name);
  if (e.channels_last && e.inputs.size() != 2)
    throw Error(source, "a channels-last convolution call takes no bias", e.name);
  std::optional<cuda::Conv2dProblem> p = cuda::conv2d_problem(
      e.inputs[0].meta, e.inputs[1].meta, hw(e.stride, e, source), hw(e.padding, e, source),
      hw(e.dilation, e, source), e.groups, e.channels_last);
  if (!p)
    throw Error(source,
                std::string("convolution operands are not ") +
                    (e.channels_last ? "channels-last" : "contiguous NCHW"),
                e.name);
  p->allow_tf32 = plan.conv_tf32;
  // The output buffer: [N, K, OH, OW], or [N, OH, OW, K] channels-last.
  std::array<int64_t, 4> out = cuda::conv2d_output_sizes(*p);
  if (e.channels_last) out = {out[0], out[2], out[3], out[1]};
  if (e.outputs[0].meta.sizes != std::vector<int64_t>(out.begin(), out.end()))
    throw Error(source, "convolution output shape differs from cuDNN's", e.name);
  DevicePtr bias = e.inputs.size() == 3 ? view_ptr(slot_ptr, e.inputs[2]) : 0;
  cuda::Cudnn::get(ctx).conv2d_forward(*p, view_ptr(slot_ptr, e.inputs[0]),
                                       view_ptr(slot_ptr, e.inputs[1]), bias,
                                       slot_ptr[e.outputs[0].slot]);
}

// The input (dy, w -> dx) or weight (x, dy -> dw) gradient of a 2-D convolution: the forward
// problem is rebuilt from x (dx) and w (dw), and dy must have the forward's output shape.
void run_conv_backward(Context& ctx, const std::vector<uint64_t>& slot_ptr, const Plan& plan,
                       const PlanExtern& e, const std::string& source) {
  bool data = e.kind == PlanExtern::Kind::ConvBackwardData;
  if (e.inputs.size() != 2 || e.outputs.size() != 1)
    throw Error(source,
                std::string("convolution backward (") + (data ? "data" : "filter") +
                    ") call needs two operands and one output",
                e.name);
  const PlanView& x = data ? e.outputs[0] : e.inputs[0];
  const PlanView& w = data ? e.inputs[1] : e.outputs[0];
  const PlanView& dy = data ? e.inputs[0] : e.inputs[1];
  std::optional<cuda::Conv2dProblem> p =
      cuda::conv2d_problem(x.meta, w.meta, hw(e.stride, e, source), hw(e.padding, e, source),
                           hw(e.dilation, e, source), e.groups);
  if (!p || !dy.meta.is_contiguous())
    throw Error(source, "convolution gradient operands are not contiguous NCHW", e.name);
  p->allow_tf32 = plan.conv_tf32;
  std::array<int64_t, 4> out = cuda::conv2d_output_sizes(*p);
  if (dy.meta.dtype != p->dtype || std::vector<int64_t>(out.begin(), out.end()) != dy.meta.sizes)
    throw Error(source,
                "convolution gradient: grad_output is " + format_meta(dy.meta) +
                    ", the convolution's output has another shape or dtype",
                e.name);
  if (data)
    cuda::Cudnn::get(ctx).conv2d_backward_data(*p, view_ptr(slot_ptr, dy), view_ptr(slot_ptr, w),
                                               slot_ptr[x.slot]);
  else
    cuda::Cudnn::get(ctx).conv2d_backward_filter(*p, view_ptr(slot_ptr, x), view_ptr(slot_ptr, dy),
                                                 slot_ptr[w.slot]);
}

// Fused scaled-dot-product attention: q, k, v [B, H, S, D] as the views give them, the output
// buffer [B, Sq, H, Dv] (read by cuDNN as [B, H, Sq, Dv] with those strides).
void run_attention(Context& ctx, const std::vector<uint64_t>& slot_ptr, const PlanExtern& e,
                   const std::string& source) {
  if (e.inputs.size() < 3 || e.inputs.size() > 4 || e.outputs.size() != 1)
    throw Error(source, "attention call needs q, k, v (a bias) and one output", e.name);
  for (const PlanView& v : e.inputs)
    if (v.meta.sizes.size() != 4 || v.meta.strides.size() != 4)
      throw Error(source, "attention operands must be of rank 4", e.name);
  const TensorMeta &q = e.inputs[0].meta, &k = e.inputs[1].meta, &v = e.inputs[2].meta;
  const TensorMeta& o = e.outputs[0].meta;
  cuda::AttentionProblem p;
  p.dtype = q.dtype;
  p.b = q.sizes[0], p.h = q.sizes[1], p.s_q = q.sizes[2], p.d = q.sizes[3];
  p.h_kv = k.sizes[1], p.s_kv = k.sizes[2], p.d_v = v.sizes[3];
  if (k.dtype != q.dtype || v.dtype != q.dtype || o.dtype != q.dtype ||
      k.sizes != std::vector<int64_t>{p.b, p.h_kv, p.s_kv, p.d} ||
      v.sizes != std::vector<int64_t>{p.b, p.h_kv, p.s_kv, p.d_v} ||
      o.sizes != std::vector<int64_t>{p.b, p.s_q, p.h, p.d_v} || !o.is_contiguous())
    throw Error(source,
                "attention operands do not fit: q " + format_meta(q) + ", k " + format_meta(k) +
                    ", v " + format_meta(v) + ", output " + format_meta(o),
                e.name);
  for (size_t i = 0; i < 4; ++i) {
    p.q_strides[i] = q.strides[i];
    p.k_strides[i] = k.strides[i];
    p.v_strides[i] = v.strides[i];
  }
  p.o_strides = {p.s_q * p.h * p.d_v, p.d_v, p.h * p.d_v, 1};
  p.scale = e.attn_scale;
  p.causal = e.causal;
  DevicePtr bias = 0;
  if (e.inputs.size() == 4) {
    const TensorMeta& bm = e.inputs[3].meta;
    if (bm.dtype != q.dtype || bm.sizes.size() != 4 || !bm.is_contiguous() ||
        bm.sizes[2] != p.s_q || bm.sizes[3] != p.s_kv)
      throw Error(source, "attention bias " + format_meta(bm) + " is not [B|1, H|1, Sq, Skv]",
                  e.name);
    p.has_bias = true;
    p.bias_b = bm.sizes[0], p.bias_h = bm.sizes[1];
    bias = view_ptr(slot_ptr, e.inputs[3]);
  }
  cuda::Cudnn::get(ctx).attention_forward(
      p, view_ptr(slot_ptr, e.inputs[0]), view_ptr(slot_ptr, e.inputs[1]),
      view_ptr(slot_ptr, e.inputs[2]), bias, slot_ptr[e.outputs[0].slot]);
}

// A fallback calling a plugin's op that has a CUDA kernel: runs it on the device buffers in
// place (runtime/plugin.h). False when the op has none or an operand is not contiguous.
bool run_custom_op_on_device(Context& ctx, const std::vector<uint64_t>& slot_ptr,
                             const PlanExtern& e, const std::string& source) {
  if (!e.graph || e.graph->inputs.size() != e.inputs.size()) return false;
  auto device_ptrs = [&](const std::vector<PlanView>& views, std::vector<uint64_t>* out) {
    for (const PlanView& v : views) {
      if (!v.meta.is_contiguous()) return false;
      out->push_back(slot_ptr[v.slot] + uint64_t(v.meta.storage_offset) * dtype_size(v.meta.dtype));
    }
    return true;
  };
  for (size_t k = 0; k < e.inputs.size(); ++k)
    if (e.inputs[k].meta.sizes != e.graph->values[e.graph->inputs[k].value].meta.sizes)
      return false;
  std::vector<uint64_t> ins, outs;
  if (!device_ptrs(e.inputs, &ins) || !device_ptrs(e.outputs, &outs)) return false;
  try {
    return run_custom_op_cuda(*e.graph, ins, outs, ctx.stream());
  } catch (const TensorError& err) {
    throw Error(source, err.what(), e.name);
  }
}

void run_fallback(Context& ctx, const std::vector<uint64_t>& slot_ptr, const Plan& plan,
                  const PlanExtern& e, const std::string& source) {
  if (run_custom_op_on_device(ctx, slot_ptr, e, source)) return;
  std::vector<Tensor> ins;
  for (const PlanView& v : e.inputs) ins.push_back(download_view(ctx, slot_ptr, plan, v));
  std::vector<Tensor> outs = interpret(*e.graph, ins);
  if (outs.size() != e.outputs.size())
    throw Error(source, "reference kernel returned " + std::to_string(outs.size()) + " outputs",
                e.name);
  for (size_t i = 0; i < outs.size(); ++i) {
    const PlanView& v = e.outputs[i];
    Tensor t = outs[i].dtype() == v.meta.dtype ? outs[i] : outs[i].to(v.meta.dtype);
    if (t.numel() * int64_t(dtype_size(t.dtype())) > plan.slot_bytes[v.slot])
      throw Error(source, "reference kernel output " + std::to_string(i) + " is too large", e.name);
    cuda::upload(ctx, t, slot_ptr[v.slot]);
  }
}

} // namespace

CudaPlanRunner::CudaPlanRunner(const Plan& plan, std::string source, CudaRunnerOptions opts)
    : plan_(plan), source_(std::move(source)), opts_(opts), arena_(plan_arena(plan)),
      slot_ptr_(plan.slot_bytes.size(), 0), constants_(plan.slot_bytes.size(), 0),
      prepared_(plan.slot_bytes.size(), 0) {
  try {
    ctx_ = &Context::get(opts_.device);
    Context& ctx = *ctx_;
    cuda::CachingAllocator& alloc = cuda::device_allocator(ctx);
    arena_base_ = alloc.allocate(size_t(std::max<int64_t>(arena_.bytes, 256)));
    for (size_t s = 0; s < slot_ptr_.size(); ++s)
      if (arena_.offset[s] >= 0) slot_ptr_[s] = arena_base_ + uint64_t(arena_.offset[s]);
    for (auto& [slot, t] : plan.constant_slots) {
      constants_[slot] = alloc.allocate(std::max<size_t>(cuda::device_bytes(t), 256));
      cuda::upload(ctx, t, constants_[slot]);
      slot_ptr_[slot] = constants_[slot];
    }
    // Freezing: what reads only the weights is computed once, here, into buffers of its own,
    // before any run (and so before any CUDA graph capture).
    for (int slot : plan.prepared_slots) {
      prepared_[slot] =
          alloc.allocate(size_t(std::max<int64_t>(plan.slot_bytes[size_t(slot)], 256)));
      slot_ptr_[slot] = prepared_[slot];
    }
    if (!plan.prepare.empty()) {
      ctx.make_current();
      for (const PlanStep& st : plan.prepare) run_step(st);
      ctx.synchronize();
    }
  } catch (const cuda::CudaError& e) {
    release();
    throw Error(source_, e.what());
  } catch (const Error&) {
    release();
    throw;
  }
  if (opts_.cuda_graphs)
    for (const PlanExtern& e : plan.externs)
      if (e.kind == PlanExtern::Kind::Fallback) {
        graph_note_ =
            "CUDA graph not captured: node '" + e.name + "' runs on the host (fallback " +
            (e.graph && !e.graph->nodes.empty() ? e.graph->nodes[0].target : std::string("call")) +
            "); the plan runs step by step";
        break;
      }
}

void CudaPlanRunner::release() {
  if (!ctx_) return; // no context: nothing was allocated
  try {
    Context& ctx = *ctx_;
    ctx.make_current();
    ctx.synchronize();
    ctx.destroy_graph(graph_, graph_exec_);
    graph_ = graph_exec_ = nullptr;
    for (void*& x : step_execs_) ctx.destroy_graph(nullptr, x), x = nullptr;
    step_execs_.clear();
    cuda::CachingAllocator& alloc = cuda::device_allocator(ctx);
    for (uint64_t& p : constants_)
      if (p) alloc.free(p), p = 0;
    for (uint64_t& p : prepared_)
      if (p) alloc.free(p), p = 0;
    if (arena_base_) alloc.free(arena_base_);
    arena_base_ = 0;
  } catch (const cuda::CudaError&) {
    // At process exit the driver may already be shutting down; nothing more can be released.
  }
}

CudaPlanRunner::~CudaPlanRunner() {
  release();
}

void CudaPlanRunner::upload(const std::vector<Tensor>& user_inputs) {
  const Plan& plan = plan_;
  if (user_inputs.size() != plan.input_slots.size())
    throw Error(source_, "expected " + std::to_string(plan.input_slots.size()) + " inputs, got " +
                             std::to_string(user_inputs.size()));
  for (size_t i = 0; i < user_inputs.size(); ++i) {
    const Tensor& t = user_inputs[i];
    const TensorMeta& m = plan.input_metas[i];
    if (t.dtype() != m.dtype || t.sizes() != m.sizes)
      throw Error(source_, "input " + std::to_string(i) + " is " + format_meta(t.meta()) +
                               " but the graph expects " + format_meta(m));
  }
  try {
    Context& ctx = *ctx_;
    ctx.make_current();
    for (size_t i = 0; i < user_inputs.size(); ++i)
      cuda::upload(ctx, user_inputs[i], slot_ptr_[plan.input_slots[i]]);
  } catch (const cuda::CudaError& e) {
    throw Error(source_, e.what());
  }
  uploaded_ = true;
}

void CudaPlanRunner::run_step(const PlanStep& st) {
  const Plan& plan = plan_;
  Context& ctx = *ctx_;
  switch (st.kind) {
  case PlanStep::Kind::Alloc: // slots are arena offsets: nothing to do at run time
  case PlanStep::Kind::Free:
    break;
  case PlanStep::Kind::Kernel: {
    const PlanKernel& k = plan.kernels[st.index];
    if (!k.fail.empty()) throw Error(source_, k.fail, k.name);
    if (!k.cuda_function) throw Error(source_, "kernel has no CUDA function", k.name);
    if (k.xnumel > 0x7fffffff) throw Error(source_, "too many rows for one grid", k.name);
    std::vector<DevicePtr> ptrs;
    for (int a : k.arg_slots) ptrs.push_back(slot_ptr_[a]);
    int64_t xn = k.xnumel;
    std::vector<void*> params;
    for (DevicePtr& p : ptrs) params.push_back(&p);
    params.push_back(&xn);
    if (k.cuda_rows < 1) throw Error(source_, "kernel has no rows per block", k.name);
    int64_t grid = (xn + k.cuda_rows - 1) / k.cuda_rows;
    ctx.launch(k.cuda_function, {unsigned(grid), 1, 1}, {unsigned(k.cuda_block), 1, 1}, 0,
               params.data(), k.name);
    break;
  }
  case PlanStep::Kind::Extern: {
    const PlanExtern& e = plan.externs[st.index];
    switch (e.kind) {
    case PlanExtern::Kind::Gemm:
      run_gemm(ctx, slot_ptr_, plan, e, source_);
      break;
    case PlanExtern::Kind::Conv:
      run_conv(ctx, slot_ptr_, plan, e, source_);
      break;
    case PlanExtern::Kind::ConvBackwardData:
    case PlanExtern::Kind::ConvBackwardFilter:
      run_conv_backward(ctx, slot_ptr_, plan, e, source_);
      break;
    case PlanExtern::Kind::Attention:
      run_attention(ctx, slot_ptr_, e, source_);
      break;
    case PlanExtern::Kind::Fallback:
      run_fallback(ctx, slot_ptr_, plan, e, source_);
      break;
    }
    break;
  }
  }
}

void CudaPlanRunner::run_resident() {
  if (!uploaded_) throw Error(source_, "run_resident() before upload()");
  try {
    Context& ctx = *ctx_;
    ctx.make_current();
    if (graph_exec_) {
      ctx.launch_graph(graph_exec_);
      return;
    }
    // The first run goes step by step (a plan run once gains nothing from a graph); it, or
    // time_steps(), sizes the libraries' workspaces and chooses their algorithms. The second
    // records the same launches into a graph and launches it; later runs replay it.
    if (!ran_ || !opts_.cuda_graphs || !graph_note_.empty()) {
      for (const PlanStep& st : plan_.steps) run_step(st);
      ran_ = true;
      return;
    }
    {
      ctx.begin_capture();
      try {
        for (const PlanStep& st : plan_.steps) run_step(st);
      } catch (...) {
        try {
          ctx.destroy_graph(ctx.end_capture(), nullptr);
        } catch (const cuda::CudaError&) {
        }
        throw;
      }
      graph_ = ctx.end_capture();
      graph_exec_ = ctx.instantiate_graph(graph_);
      ctx.launch_graph(graph_exec_);
    }
  } catch (const cuda::CudaError& e) {
    throw Error(source_, e.what());
  }
}

std::vector<Tensor> CudaPlanRunner::download() {
  if (!ran_) throw Error(source_, "download() before run_resident()");
  try {
    Context& ctx = *ctx_;
    ctx.make_current();
    ctx.synchronize();
    std::vector<Tensor> outs;
    for (const PlanView& v : plan_.outputs)
      outs.push_back(download_view(ctx, slot_ptr_, plan_, v).clone());
    return outs;
  } catch (const cuda::CudaError& e) {
    throw Error(source_, e.what());
  }
}

std::vector<Tensor> CudaPlanRunner::run(const std::vector<Tensor>& user_inputs) {
  upload(user_inputs);
  run_resident();
  return download();
}

void CudaPlanRunner::run_device(const std::vector<uint64_t>& inputs,
                                const std::vector<uint64_t>& outputs, void* stream) {
  const Plan& plan = plan_;
  if (inputs.size() != plan.input_slots.size())
    throw Error(source_, "expected " + std::to_string(plan.input_slots.size()) +
                             " input buffers, got " + std::to_string(inputs.size()));
  if (outputs.size() != plan.outputs.size())
    throw Error(source_, "expected " + std::to_string(plan.outputs.size()) +
                             " output buffers, got " + std::to_string(outputs.size()));
  auto bytes_of = [](const TensorMeta& m) { return size_t(m.numel()) * dtype_size(m.dtype); };
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i] && bytes_of(plan.input_metas[i]) > 0)
      throw Error(source_, "input " + std::to_string(i) + ": null device pointer");
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!outputs[i] && bytes_of(plan.outputs[i].meta) > 0)
      throw Error(source_, "output " + std::to_string(i) + ": null device pointer");
  try {
    Context& ctx = *ctx_;
    ctx.make_current();
    ctx.stream_wait_for(stream);
    for (size_t i = 0; i < inputs.size(); ++i)
      ctx.copy_device(slot_ptr_[plan.input_slots[i]], inputs[i], bytes_of(plan.input_metas[i]));
    uploaded_ = true;
    run_resident();
    for (size_t i = 0; i < outputs.size(); ++i) {
      const PlanView& v = plan.outputs[i];
      if (v.meta.is_contiguous()) {
        ctx.copy_device(outputs[i], view_ptr(slot_ptr_, v), bytes_of(v.meta));
      } else {
        Tensor t = download_view(ctx, slot_ptr_, plan, v).clone();
        ctx.copy_to_device(outputs[i], t.raw_data(), bytes_of(v.meta));
      }
    }
    ctx.stream_signal(stream);
  } catch (const cuda::CudaError& e) {
    throw Error(source_, e.what());
  }
}

int CudaPlanRunner::gemm_algorithm_count(size_t extern_index) {
  if (extern_index >= plan_.externs.size() ||
      plan_.externs[extern_index].kind != PlanExtern::Kind::Gemm)
    return 0;
  try {
    GemmCall g = gemm_call(slot_ptr_, plan_, plan_.externs[extern_index], source_);
    if (g.empty || g.zero) return 0;
    return cuda::CublasLt::get(*ctx_).algorithm_count(g.p, g.a, g.b, g.bias, g.d, g.c);
  } catch (const cuda::CudaError& e) {
    throw Error(source_, e.what());
  }
}

std::vector<StepProfile> CudaPlanRunner::time_steps() {
  if (!uploaded_) throw Error(source_, "time_steps() before upload()");
  auto timed = [](const PlanStep& st) {
    return st.kind == PlanStep::Kind::Kernel || st.kind == PlanStep::Kind::Extern;
  };
  try {
    Context& ctx = *ctx_;
    ctx.make_current();
    if (opts_.cuda_graphs && graph_note_.empty() && step_execs_.empty()) {
      // A run first sizes the libraries' workspaces and picks their algorithms (no allocation
      // may happen while a graph is captured); then each step is captured alone.
      if (!ran_) {
        for (const PlanStep& st : plan_.steps) run_step(st);
        ran_ = true;
      }
      std::vector<void*> execs;
      try {
        for (const PlanStep& st : plan_.steps) {
          if (!timed(st)) continue;
          ctx.begin_capture();
          try {
            run_step(st);
          } catch (...) {
            try {
              ctx.destroy_graph(ctx.end_capture(), nullptr);
            } catch (const cuda::CudaError&) {
            }
            throw;
          }
          void* g = ctx.end_capture();
          try {
            execs.push_back(ctx.instantiate_graph(g));
          } catch (...) {
            ctx.destroy_graph(g, nullptr);
            throw;
          }
          ctx.destroy_graph(g, nullptr);
        }
      } catch (...) {
        for (void* x : execs) ctx.destroy_graph(nullptr, x);
        throw;
      }
      step_execs_ = std::move(execs);
    }
    std::vector<StepProfile> prof;
    std::vector<std::unique_ptr<cuda::Event>> ev;
    size_t i = 0;
    for (const PlanStep& st : plan_.steps) {
      if (!timed(st)) continue;
      ev.push_back(ctx.create_event());
      ev.back()->record();
      if (step_execs_.empty())
        run_step(st);
      else
        ctx.launch_graph(step_execs_[i]);
      ++i;
      ev.push_back(ctx.create_event());
      ev.back()->record();
      if (st.kind == PlanStep::Kind::Kernel) {
        const PlanKernel& k = plan_.kernels[st.index];
        prof.push_back({k.name, true, 0, k.bytes});
      } else {
        const PlanExtern& e = plan_.externs[st.index];
        prof.push_back({e.name, false, 0, e.bytes});
      }
    }
    ran_ = true;
    for (size_t j = 0; j < prof.size(); ++j)
      prof[j].ms = ev[2 * j + 1]->elapsed_ms_since(*ev[2 * j]);
    return prof;
  } catch (const cuda::CudaError& e) {
    throw Error(source_, e.what());
  }
}

} // namespace fxc
