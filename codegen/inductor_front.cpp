// Steps "lower" and "fuse" (the front half of every inductor build), the step hooks, and the
// --log=inductor summary of what they made.
#include "codegen/inductor_steps.h"

#include "frontend/diag.h"
#include "frontend/log.h"
#include "frontend/pass_timer.h"
#include "passes/loop_ir_verify.h"

namespace fxc {

bool after_inductor_step(const InductorOptions& opts, const std::string& step,
                         const LoopProgram* program, const std::function<std::string()>& text) {
  const StepHooks& h = opts.steps;
  if (h.verify_each && program) verify_loop_program(*program, "after " + step);
  if (h.print && (h.print_after == step || h.stop_after == step)) h.print(step, text());
  return h.stop_after == step;
}

InductorFront lower_and_fuse(const Graph& g, const LowerOptions& lo, const InductorOptions& opts) {
  InductorFront f;
  f.program = [&] {
    PassTimer t("lower");
    return lower(g, lo);
  }();
  f.ir_pre_fusion = print_loop_program(f.program);
  if (after_inductor_step(opts, "lower", &f.program, [&] { return f.ir_pre_fusion; })) {
    f.stopped = true;
    return f;
  }
  // Fusion works on the whole loop program: it needs every buffer's readers, which only a
  // complete lowering knows.
  fuse_step(f, opts);
  return f;
}

void fuse_step(InductorFront& f, const InductorOptions& opts) {
  FuseOptions fo;
  fo.enable = opts.fuse;
  f.schedule = [&] {
    PassTimer t("fuse");
    return fuse(f.program, fo);
  }();
  f.ir_post_fusion = print_schedule(f.program, f.schedule);
  f.stopped = after_inductor_step(opts, "fuse", &f.program, [&] { return f.ir_post_fusion; });
}

namespace {

// "buf3 (addmm, relu)": a buffer and the graph nodes it computes.
std::string buffer_label(const Buffer& b) {
  std::string s = b.name;
  for (size_t i = 0; i < b.origins.size(); ++i) s += (i ? ", " : " (") + b.origins[i];
  return b.origins.empty() ? s : s + ")";
}

// What runs an extern step, and why it is not generated code.
std::string extern_reason(const LoopProgram& p, const Buffer& b, bool cuda) {
  const ExternCall& c = b.call;
  switch (c.kind) {
  case ExternCall::Kind::Gemm: {
    std::string s = cuda ? "cuBLASLt matmul"
                         : "BLAS matmul (cblas_sgemm/dgemm of the BLAS found "
                           "at run time, else the reference loop)";
    if (c.epilogue != GemmEpilogue::None)
      s += std::string(" with the ") + gemm_epilogue_name(c.epilogue) + " epilogue";
    s += ": matmuls always run on the library";
    for (const std::string& origin : b.origins)
      for (const std::string& l : p.log)
        if (l.rfind("im2col: node '" + origin + "'", 0) == 0)
          s += "; " + l.substr(l.find("): ") + 3);
    return s;
  }
  case ExternCall::Kind::Conv:
    if (!cuda)
      return "oneDNN convolution" +
             (c.post_ops.empty() ? std::string() : " with post-ops " + c.post_ops) +
             ": float32 convolutions (1-D to 3-D) run on oneDNN when libdnnl.so.2 is found";
    return "cuDNN convolution: 2-D convolutions run on cuDNN when it is found";
  case ExternCall::Kind::ConvBackwardData:
    if (!cuda)
      return "oneDNN convolution backward (data): the input gradients of float32 convolutions "
             "(1-D to 3-D) run on oneDNN when libdnnl.so.2 is found";
    return "cuDNN convolution backward (data): the input gradients of 2-D convolutions run on "
           "cuDNN when it is found";
  case ExternCall::Kind::ConvBackwardFilter:
    if (!cuda)
      return "oneDNN convolution backward (filter): the weight gradients of float32 convolutions "
             "(1-D to 3-D) run on oneDNN when libdnnl.so.2 is found";
    return "cuDNN convolution backward (filter): the weight gradients of 2-D convolutions run on "
           "cuDNN when it is found";
  case ExternCall::Kind::Attention:
    return std::string("cuDNN fused attention") + (c.causal ? " (causal)" : "") +
           ": f16/bf16 scaled_dot_product_attention runs on cuDNN's flash-attention engine when "
           "it is found";
  case ExternCall::Kind::Fallback:
    break;
  }
  return "the reference kernel (fallback): " + c.reason;
}

} // namespace

// INFO: buffer, kernel and extern counts (and the planned peak when there is a memory plan,
// peak >= 0). DEBUG: why each kernel did not take in the node scheduled just before it, and
// every extern step with what runs it and why.
void log_inductor(const std::string& name, const Graph& g, const LoopProgram& p, const Schedule& s,
                  bool cuda, int64_t peak) {
  if (!log_enabled(Component::Inductor, Level::Info)) return;
  int pointwise = 0, reductions = 0, extern_buffers = 0;
  for (const Buffer& b : p.buffers) {
    pointwise += b.kind == Buffer::Kind::Pointwise;
    reductions += b.kind == Buffer::Kind::Reduction;
    extern_buffers += b.kind == Buffer::Kind::Extern;
  }
  int reduction_kernels = 0;
  for (const Kernel& k : s.kernels) {
    bool r = false;
    for (const KernelMember& m : k.members) r = r || m.role == MemberRole::Reduce;
    reduction_kernels += r;
  }
  int gemm = 0, conv = 0, attention = 0, fallback = 0;
  std::string externs;
  for (const ScheduleItem& item : s.items) {
    if (item.is_kernel) continue;
    const Buffer& b = p.buffers[size_t(item.index)];
    gemm += b.call.kind == ExternCall::Kind::Gemm;
    conv += b.call.kind == ExternCall::Kind::Conv ||
            b.call.kind == ExternCall::Kind::ConvBackwardData ||
            b.call.kind == ExternCall::Kind::ConvBackwardFilter;
    attention += b.call.kind == ExternCall::Kind::Attention;
    fallback += b.call.kind == ExternCall::Kind::Fallback;
    externs += "\n" + name + ": extern " + buffer_label(b) + " = " + b.call.op + ": " +
               extern_reason(p, b, cuda);
  }
  log_message(Component::Inductor, Level::Info,
              name + ": lowered " + std::to_string(g.nodes.size()) + " nodes to " +
                  std::to_string(pointwise + reductions + extern_buffers) + " buffers (" +
                  std::to_string(pointwise) + " pointwise, " + std::to_string(reductions) +
                  " reductions, " + std::to_string(extern_buffers) + " extern calls)");
  log_message(Component::Inductor, Level::Info,
              name + ": " + std::to_string(s.kernels.size()) + " kernels (" +
                  std::to_string(int(s.kernels.size()) - reduction_kernels) + " pointwise, " +
                  std::to_string(reduction_kernels) + " with a reduction), " +
                  std::to_string(gemm + conv + attention + fallback) + " extern calls (" +
                  std::to_string(gemm) + " matmul, " + std::to_string(conv) + " convolution, " +
                  (attention ? std::to_string(attention) + " attention, " : std::string()) +
                  std::to_string(fallback) + " fallback)" +
                  (peak >= 0 ? ", planned peak " + std::to_string(peak) + " bytes" : ""));
  if (!log_enabled(Component::Inductor, Level::Debug)) return;
  std::string text;
  for (const std::string& u : s.unfused) text += "\n" + name + ": " + u;
  text += externs;
  if (!text.empty()) log_message(Component::Inductor, Level::Debug, text.substr(1));
}

} // namespace fxc
