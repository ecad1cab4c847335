// output_code.cpp rendering: the host plan as straight-line C++ calling the generated kernels.
#include "codegen/cpp_wrapper.h"

#include "frontend/custom_ops.h"
#include "frontend/fxg.h"
#include "runtime/onednn.h"

#include <array>
#include <cassert>
#include <cstdio>
#include <set>
#include <sstream>

namespace fxc {

namespace {

/// Element type spelled in C++ for random fills and BLAS calls.
std::string c_type(DType t) {
  switch (t) {
  case DType::F32:
    return "float";
  case DType::F64:
    return "double";
  case DType::I64:
    return "int64_t";
  case DType::I32:
    return "int32_t";
  case DType::I16:
    return "int16_t";
  case DType::F16:
  case DType::BF16:
    return "uint16_t";
  case DType::I8:
    return "int8_t";
  case DType::U8:
  case DType::Bool:
    return "uint8_t";
  }
  return "uint8_t";
}

/// The fill call for a slot holding `numel` elements of `t`.
std::string fill_call(int slot, DType t, int64_t numel, int seed) {
  std::string kind = is_floating(t) && t != DType::F16 && t != DType::BF16 ? "fill_float"
                     : t == DType::F16 || t == DType::BF16                 ? "fill_zero"
                                                                           : "fill_int";
  return "  " + kind + "(static_cast<" + c_type(t) + "*>(slot[" + std::to_string(slot) + "]), " +
         std::to_string(numel) + ", " + std::to_string(seed) + ");\n";
}

std::string ptr(const PlanView& v) {
  return "static_cast<" + c_type(v.meta.dtype) + "*>(slot[" + std::to_string(v.slot) + "]) + " +
         std::to_string(v.meta.storage_offset);
}

std::string render_gemm(const PlanExtern& e) {
  const TensorMeta &a = e.inputs[0].meta, &b = e.inputs[1].meta, &c = e.outputs[0].meta;
  bool batched = a.sizes.size() == 3;
  int o = batched ? 1 : 0;
  int64_t B = batched ? a.sizes[0] : 1, M = a.sizes[o], K = a.sizes[o + 1], N = b.sizes[o + 1];
  BlasMatrix la = blas_matrix(M, K, a.strides[o], a.strides[o + 1]);
  BlasMatrix lb = blas_matrix(K, N, b.strides[o], b.strides[o + 1]);
  std::string t = c_type(c.dtype);
  std::ostringstream s;
  s << "  { // " << e.name << ": [" << B << " x] " << M << "x" << K << " @ " << K << "x" << N
    << "\n";
  s << "    const " << t << "* A = " << ptr(e.inputs[0]) << ";\n";
  s << "    const " << t << "* Bm = " << ptr(e.inputs[1]) << ";\n";
  s << "    " << t << "* C = " << ptr(e.outputs[0]) << ";\n";
  s << "    for (int64_t i = 0; i < " << B << "; ++i) {\n";
  int64_t sa = batched ? a.strides[0] : 0, sb = batched ? b.strides[0] : 0;
  if (la.ok && lb.ok && K > 0 && (c.dtype == DType::F32 || c.dtype == DType::F64)) {
    s << "      cblas_" << (c.dtype == DType::F32 ? "s" : "d") << "gemm(101, "
      << (la.trans ? 112 : 111) << ", " << (lb.trans ? 112 : 111) << ", " << M << ", " << N << ", "
      << K << ", 1, A + i * " << sa << ", " << la.ld << ", Bm + i * " << sb << ", " << lb.ld
      << ", 0, C + i * " << M * N << ", " << N << ");\n";
  } else {
    // Strides BLAS cannot read in place: plain loops over the strided operands.
    s << "      for (int64_t m = 0; m < " << M << "; ++m)\n"
      << "        for (int64_t n = 0; n < " << N << "; ++n) {\n"
      << "          double acc = 0;\n"
      << "          for (int64_t k = 0; k < " << K << "; ++k)\n"
      << "            acc += double(A[i * " << sa << " + m * " << a.strides[o] << " + k * "
      << a.strides[o + 1] << "]) * double(Bm[i * " << sb << " + k * " << b.strides[o] << " + n * "
      << b.strides[o + 1] << "]);\n"
      << "          C[i * " << M * N << " + m * " << N << " + n] = " << t << "(acc);\n"
      << "        }\n";
  }
  s << "    }\n  }\n";
  return s.str();
}

/// A CPU convolution's input or weight gradient (oneDNN in fxc's runtime) as plain loops over
/// every (output position, kernel tap) pair, accumulated in double; NCHW.
std::string render_conv_backward(const PlanExtern& e) {
  const bool data = e.kind == PlanExtern::Kind::ConvBackwardData;
  const onednn::ConvShape shape = onednn::backward_shape_of(e);
  const auto &x = shape.x, &w = shape.w, &o = shape.out;
  const size_t sp = x.size() - 2, lead = 3 - sp;
  std::array<int64_t, 3> I, R, O, st, pd, dl;
  for (size_t i = 0; i < 3; ++i) {
    bool real = i >= lead;
    I[i] = real ? x[2 + i - lead] : 1;
    R[i] = real ? w[2 + i - lead] : 1;
    O[i] = real ? o[2 + i - lead] : 1;
    st[i] = real ? e.stride[i - lead] : 1;
    pd[i] = real ? e.padding[i - lead] : 0;
    dl[i] = real ? e.dilation[i - lead] : 1;
  }
  const int64_t KG = w[0] / e.groups, Isz = I[0] * I[1] * I[2], Osz = O[0] * O[1] * O[2];
  const int64_t Rsz = R[0] * R[1] * R[2];
  const int64_t out_numel = data ? x[0] * x[1] * Isz : w[0] * w[1] * Rsz;
  std::ostringstream s;
  s << "  { // " << e.name << ": " << sp << "-D convolution " << (data ? "input" : "weight")
    << " gradient (oneDNN in fxc)\n";
  s << "    const float* A = " << ptr(e.inputs[0]) << "; // " << (data ? "dy" : "x") << "\n";
  s << "    const float* B = " << ptr(e.inputs[1]) << "; // " << (data ? "w" : "dy") << "\n";
  s << "    float* Out = " << ptr(e.outputs[0]) << ";\n";
  s << "    std::vector<double> acc(" << out_numel << ", 0.0);\n";
  s << "    for (int64_t n = 0; n < " << x[0] << "; ++n)\n"
    << "      for (int64_t k = 0; k < " << w[0] << "; ++k)\n"
    << "        for (int64_t c = 0; c < " << w[1] << "; ++c)\n"
    << "          for (int64_t od = 0; od < " << O[0] << "; ++od)\n"
    << "          for (int64_t oh = 0; oh < " << O[1] << "; ++oh)\n"
    << "            for (int64_t ow = 0; ow < " << O[2] << "; ++ow)\n"
    << "              for (int64_t a = 0; a < " << R[0] << "; ++a)\n"
    << "              for (int64_t r = 0; r < " << R[1] << "; ++r)\n"
    << "                for (int64_t q = 0; q < " << R[2] << "; ++q) {\n"
    << "                  int64_t id = od * " << st[0] << " - " << pd[0] << " + a * " << dl[0]
    << ", ih = oh * " << st[1] << " - " << pd[1] << " + r * " << dl[1] << ", iw = ow * " << st[2]
    << " - " << pd[2] << " + q * " << dl[2] << ";\n"
    << "                  if (id < 0 || id >= " << I[0] << " || ih < 0 || ih >= " << I[1]
    << " || iw < 0 || iw >= " << I[2] << ") continue;\n"
    << "                  int64_t xi = (n * " << x[1] << " + k / " << KG << " * " << w[1]
    << " + c) * " << Isz << " + (id * " << I[1] << " + ih) * " << I[2] << " + iw;\n"
    << "                  int64_t wi = ((k * " << w[1] << " + c) * " << R[0] << " + a) * " << R[1]
    << " * " << R[2] << " + r * " << R[2] << " + q;\n"
    << "                  int64_t yi = (n * " << w[0] << " + k) * " << Osz << " + (od * " << O[1]
    << " + oh) * " << O[2] << " + ow;\n";
  if (data)
    s << "                  acc[xi] += double(A[yi]) * double(B[wi]);\n";
  else
    s << "                  acc[wi] += double(A[xi]) * double(B[yi]);\n";
  s << "                }\n"
    << "    for (int64_t i = 0; i < " << out_numel << "; ++i) Out[i] = float(acc[i]);\n  }\n";
  return s.str();
}

/// A CPU convolution (oneDNN in fxc's runtime) as plain loops with its post-ops, NCHW.
std::string render_conv(const PlanExtern& e) {
  std::vector<onednn::PostOp> ops = onednn::parse_post_ops(e.post_ops);
  size_t sums = 0;
  for (const onednn::PostOp& op : ops) sums += op.kind == onednn::PostOp::Kind::Sum;
  bool bias = e.inputs.size() - sums == 3;
  const onednn::ConvShape shape = onednn::shape_of(e); // logical sizes
  const auto &x = shape.x, &w = shape.w, &o = shape.out;
  auto f = [](float v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.9gf", double(v));
    return std::string(b);
  };
  std::ostringstream s;
  s << "  { // " << e.name << ": " << x.size() - 2 << "-D convolution (oneDNN in fxc)"
    << (e.post_ops.empty() ? "" : ", post-ops " + e.post_ops) << "\n";
  s << "    const float* X = " << ptr(e.inputs[0]) << ";\n";
  s << "    const float* Wt = " << ptr(e.inputs[1]) << ";\n";
  if (bias) s << "    const float* Bias = " << ptr(e.inputs[2]) << ";\n";
  for (size_t i = 0; i < sums; ++i)
    s << "    const float* R" << i << " = " << ptr(e.inputs[e.inputs.size() - sums + i]) << ";\n";
  s << "    float* Y = " << ptr(e.outputs[0]) << ";\n";
  if (!e.scale.empty()) { // a folded batch norm: y = scale · conv + shift per channel
    for (const char* name : {"Scale", "Shift"}) {
      const std::vector<float>& v = name[1] == 'c' ? e.scale : e.shift;
      s << "    static const float " << name << "[] = {";
      for (size_t i = 0; i < v.size(); ++i) s << (i ? ", " : "") << f(v[i]);
      s << "};\n";
    }
  }
  // As a 3-D convolution, the missing spatial dims of size 1 in front.
  const size_t sp = x.size() - 2, lead = 3 - sp;
  std::array<int64_t, 3> I, R, O, st, pd, dl;
  for (size_t i = 0; i < 3; ++i) {
    bool real = i >= lead;
    I[i] = real ? x[2 + i - lead] : 1;
    R[i] = real ? w[2 + i - lead] : 1;
    O[i] = real ? o[2 + i - lead] : 1;
    st[i] = real ? e.stride[i - lead] : 1;
    pd[i] = real ? e.padding[i - lead] : 0;
    dl[i] = real ? e.dilation[i - lead] : 1;
  }
  int64_t KG = w[0] / e.groups;
  // The element strides of a channel and of a spatial position (d, h, w linear) in X and Y.
  const int64_t Isz = I[0] * I[1] * I[2], Osz = O[0] * O[1] * O[2];
  const int64_t xc = e.channels_last ? 1 : Isz, xp = e.channels_last ? x[1] : 1;
  const int64_t yc = e.channels_last ? 1 : Osz, yp = e.channels_last ? o[1] : 1;
  s << "    for (int64_t n = 0; n < " << x[0] << "; ++n)\n"
    << "      for (int64_t k = 0; k < " << w[0] << "; ++k)\n"
    << "        for (int64_t od = 0; od < " << O[0] << "; ++od)\n"
    << "        for (int64_t oh = 0; oh < " << O[1] << "; ++oh)\n"
    << "          for (int64_t ow = 0; ow < " << O[2] << "; ++ow) {\n"
    << "            double v = " << (bias ? "Bias[k]" : "0") << ";\n"
    << "            for (int64_t c = 0; c < " << w[1] << "; ++c)\n"
    << "              for (int64_t a = 0; a < " << R[0] << "; ++a)\n"
    << "              for (int64_t r = 0; r < " << R[1] << "; ++r)\n"
    << "                for (int64_t q = 0; q < " << R[2] << "; ++q) {\n"
    << "                  int64_t id = od * " << st[0] << " - " << pd[0] << " + a * " << dl[0]
    << ", ih = oh * " << st[1] << " - " << pd[1] << " + r * " << dl[1] << ", iw = ow * " << st[2]
    << " - " << pd[2] << " + q * " << dl[2] << ";\n"
    << "                  if (id < 0 || id >= " << I[0] << " || ih < 0 || ih >= " << I[1]
    << " || iw < 0 || iw >= " << I[2] << ") continue;\n"
    << "                  v += double(X[n * " << x[1] * Isz << " + (k / " << KG << " * " << w[1]
    << " + c) * " << xc << " + ((id * " << I[1] << " + ih) * " << I[2] << " + iw) * " << xp
    << "]) * double(Wt[(((k * " << w[1] << " + c) * " << R[0] << " + a) * " << R[1] << " + r) * "
    << R[2] << " + q]);\n"
    << "                }\n"
    << "            int64_t i = n * " << o[1] * Osz << " + k * " << yc << " + ((od * " << O[1]
    << " + oh) * " << O[2] << " + ow) * " << yp << ";\n";
  if (!e.scale.empty()) s << "            v = v * Scale[k] + Shift[k];\n";
  size_t next = 0;
  for (const onednn::PostOp& op : ops) {
    s << "            ";
    switch (op.kind) {
    case onednn::PostOp::Kind::Relu:
      s << "v = v > 0 ? v : 0;";
      break;
    case onednn::PostOp::Kind::Sigmoid:
      s << "v = 1 / (1 + std::exp(-v));";
      break;
    case onednn::PostOp::Kind::Tanh:
      s << "v = std::tanh(v);";
      break;
    case onednn::PostOp::Kind::Hardswish:
      s << "v = v * std::min(std::max(v + 3, 0.0), 6.0) / 6;";
      break;
    case onednn::PostOp::Kind::Silu:
      s << "v = v / (1 + std::exp(-v));";
      break;
    case onednn::PostOp::Kind::GeluErf:
      s << "v = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));";
      break;
    case onednn::PostOp::Kind::GeluTanh:
      s << "v = 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));";
      break;
    case onednn::PostOp::Kind::Linear:
      s << "v = " << f(op.a) << " * v + " << f(op.b) << ";";
      break;
    case onednn::PostOp::Kind::Clip:
      s << "v = std::min(std::max(v, double(" << f(op.a) << ")), double(" << f(op.b) << "));";
      break;
    case onednn::PostOp::Kind::Sum:
      s << "v += R" << next++ << "[i];";
      break;
    }
    s << "\n";
  }
  s << "            Y[i] = float(v);\n"
    << "          }\n  }\n";
  return s.str();
}

std::string meta_literal(const TensorMeta& m) {
  std::string s = "{";
  for (size_t i = 0; i < m.sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(m.sizes[i]);
  s += "}, {";
  for (size_t i = 0; i < m.strides.size(); ++i) s += (i ? ", " : "") + std::to_string(m.strides[i]);
  return s + "}, " + std::to_string(m.storage_offset);
}

std::string render_fallback(const PlanExtern& e, int index, const Plan& plan) {
  std::ostringstream s;
  s << "  { // " << e.name << ": fxc reference kernel for " << e.graph->nodes[0].target << "\n";
  s << "    std::vector<fxc::Tensor> in;\n";
  for (const PlanView& v : e.inputs)
    s << "    in.push_back(host_view(" << v.slot << ", fxc::DType(" << int(v.meta.dtype) << "), "
      << meta_literal(v.meta) << "));\n";
  s << "    auto out = fxc::interpret(fallback_graph(" << index << "), in);\n";
  for (size_t i = 0; i < e.outputs.size(); ++i) {
    const PlanView& v = e.outputs[i];
    s << "    copy_out(out[" << i << "], slot[" << v.slot << "], " << plan.slot_bytes[v.slot]
      << ");\n";
  }
  s << "  }\n";
  return s.str();
}

} // namespace

std::string render_cpp_wrapper(const Plan& plan, const std::string& source) {
  std::ostringstream s;
  std::vector<int> fallbacks;
  std::vector<std::string> custom; // custom ops among the fallbacks (plugins loaded by main)
  for (int i = 0; i < int(plan.externs.size()); ++i)
    if (plan.externs[i].kind == PlanExtern::Kind::Fallback) fallbacks.push_back(i);
  s << "// output_code.cpp: the host plan of " << (source.empty() ? "<graph>" : source)
    << ", generated by fxc's inductor backend (CPU).\n"
    << "//\n"
    << "// Build and run from the directory holding this file and kernels/:\n"
    << "//   for f in kernels/*.ll; do llc-19 -O2 -filetype=obj -relocation-model=pic \"$f\" -o "
       "\"${f%.ll}.o\"; done\n"
    << "//   g++ -std=c++20 -O2 output_code.cpp kernels/*.o -lopenblas -lpthread -o model && "
       "./model [runs]\n";
  if (!fallbacks.empty()) {
    std::set<std::string> ops;
    for (int i : fallbacks) ops.insert(plan.externs[i].graph->nodes[0].target);
    s << "// This graph calls fxc's reference kernels for";
    for (auto& op : ops) s << " " << op;
    s << "; build it instead with\n"
      << "//   g++ -std=c++20 -O2 -DFXC_WITH_RUNTIME -I<fxc source> -I<fxc source>/include "
         "output_code.cpp kernels/*.o <fxc build>/libfxc_runtime.a <fxc build>/libfxc_frontend.a "
         "-lzstd -lzip -lopenblas -lpthread -ldl -o model\n";
    for (auto& op : ops)
      if (find_custom_op(op)) custom.push_back(op);
    if (!custom.empty())
      s << "// and run it with FXC_PLUGINS=<lib.so>[:<lib.so>...] naming the plugins of its "
           "custom ops.\n";
  }
  s << "// Inputs and weights are seeded random values; the program prints its median time.\n\n";
  s << "#include <algorithm>\n#include <atomic>\n#include <chrono>\n#include <cstdint>\n"
    << "#include <cstdio>\n#include <cstdlib>\n#include <cstring>\n#include <random>\n"
    << "#include <thread>\n#include <vector>\n";
  for (const PlanExtern& e : plan.externs)
    if (e.kind == PlanExtern::Kind::Conv) {
      s << "#include <cmath>\n"; // convolution post-ops
      break;
    }
  if (!fallbacks.empty()) {
    s << "\n#ifndef FXC_WITH_RUNTIME\n"
      << "#error \"this graph calls fxc reference kernels: build with -DFXC_WITH_RUNTIME (see the "
         "top)\"\n"
      << "#endif\n"
      << "#include \"frontend/import.h\"\n#include \"runtime/interpreter.h\"\n#include <fstream>\n";
    if (!custom.empty())
      s << "#include \"frontend/diag.h\"\n#include \"runtime/plugin.h\"\n#include <string>\n";
  }
  s << "\nusing KernelFn = void (*)(void* const*, int64_t, int64_t);\n";
  std::set<std::string> declared;
  for (const PlanKernel& k : plan.kernels)
    if (declared.insert(k.name).second)
      s << "extern \"C\" void " << k.name << "(void* const* args, int64_t xbegin, int64_t xend);\n";
  s << "extern \"C\" void cblas_sgemm(int, int, int, int, int, int, float, const float*, int,\n"
    << "                            const float*, int, float, float*, int);\n"
    << "extern \"C\" void cblas_dgemm(int, int, int, int, int, int, double, const double*, int,\n"
    << "                            const double*, int, double, double*, int);\n\n";
  s << "namespace {\n\n";
  s << "void* slot[" << std::max<size_t>(plan.slot_bytes.size(), 1) << "] = {};\n";
  s << "const int64_t slot_bytes[" << std::max<size_t>(plan.slot_bytes.size(), 1) << "] = {";
  for (size_t i = 0; i < plan.slot_bytes.size(); ++i) s << (i ? ", " : "") << plan.slot_bytes[i];
  if (plan.slot_bytes.empty()) s << "0";
  s << "};\n\n";
  s << "// Outputs of the previous run are released when their slot is allocated again.\n"
    << "void alloc_slot(int i) {\n"
    << "  std::free(slot[i]);\n"
    << "  slot[i] = std::calloc(size_t(std::max<int64_t>(slot_bytes[i], 1)), 1);\n"
    << "}\n\n"
    << "// Rows [0, xnumel) in chunks of `grain`, spread over the hardware threads.\n"
    << "void launch(KernelFn fn, void* const* args, int64_t xnumel, int64_t grain) {\n"
    << "  int64_t tasks = (xnumel + grain - 1) / grain;\n"
    << "  unsigned nt = unsigned(std::min<int64_t>(std::max(1u, "
       "std::thread::hardware_concurrency()), tasks));\n"
    << "  std::atomic<int64_t> next{0};\n"
    << "  auto work = [&] {\n"
    << "    for (int64_t t; (t = next++) < tasks;) fn(args, t * grain, std::min(xnumel, (t + 1) * "
       "grain));\n"
    << "  };\n"
    << "  std::vector<std::thread> pool;\n"
    << "  for (unsigned i = 1; i < nt; ++i) pool.emplace_back(work);\n"
    << "  work();\n"
    << "  for (auto& t : pool) t.join();\n"
    << "}\n\n"
    << "template <class T> void fill_float(T* p, int64_t n, unsigned seed) {\n"
    << "  std::mt19937 g(seed);\n"
    << "  std::uniform_real_distribution<double> d(-1, 1);\n"
    << "  for (int64_t i = 0; i < n; ++i) p[i] = T(d(g));\n"
    << "}\n"
    << "template <class T> void fill_int(T* p, int64_t n, unsigned seed) {\n"
    << "  std::mt19937 g(seed);\n"
    << "  for (int64_t i = 0; i < n; ++i) p[i] = T(g() % 2);\n"
    << "}\n"
    << "template <class T> void fill_zero(T* p, int64_t n, unsigned) { std::memset(p, 0, size_t(n) "
       "* sizeof(T)); }\n\n";
  if (!fallbacks.empty()) {
    s << "fxc::Tensor host_view(int i, fxc::DType t, std::vector<int64_t> sizes, "
         "std::vector<int64_t> strides,\n"
      << "                      int64_t offset) {\n"
      << "  auto st = std::make_shared<fxc::Storage>(size_t(std::max<int64_t>(slot_bytes[i], "
         "1)));\n"
      << "  std::memcpy(st->data(), slot[i], size_t(slot_bytes[i]));\n"
      << "  return fxc::Tensor(st, fxc::TensorMeta{t, sizes, strides, offset, {}});\n"
      << "}\n"
      << "void copy_out(const fxc::Tensor& t, void* dst, int64_t bytes) {\n"
      << "  fxc::Tensor c = t.contiguous();\n"
      << "  std::memcpy(dst, c.raw_data(), size_t(bytes));\n"
      << "}\n"
      << "const fxc::Graph& fallback_graph(int i) {\n"
      << "  static std::vector<fxc::Graph> graphs;\n"
      << "  static const char* const fxg[] = {\n";
    for (size_t j = 0; j < plan.externs.size(); ++j) {
      const PlanExtern& e = plan.externs[j];
      std::string json = e.kind == PlanExtern::Kind::Fallback ? fxg_to_json(*e.graph, {}) : "";
      s << "      R\"fxc_fxg(" << json << ")fxc_fxg\",\n";
    }
    s << "  };\n"
      << "  if (graphs.empty()) {\n"
      << "    for (const char* text : fxg) {\n"
      << "      if (!*text) { graphs.emplace_back(); continue; }\n"
      << "      std::string path = \"output_code_fallback.fxg\";\n"
      << "      std::ofstream(path) << text;\n"
      << "      graphs.push_back(fxc::import_fxg(path));\n"
      << "    }\n"
      << "  }\n"
      << "  return graphs[i];\n"
      << "}\n\n";
  }
  auto render_step = [&](const PlanStep& st) {
    switch (st.kind) {
    case PlanStep::Kind::Alloc:
      s << "  alloc_slot(" << st.index << ");\n";
      break;
    case PlanStep::Kind::Free:
      s << "  std::free(slot[" << st.index << "]);\n  slot[" << st.index << "] = nullptr;\n";
      break;
    case PlanStep::Kind::Kernel: {
      const PlanKernel& k = plan.kernels[st.index];
      s << "  {\n    void* args[] = {";
      for (size_t i = 0; i < k.arg_slots.size(); ++i)
        s << (i ? ", " : "") << "slot[" << k.arg_slots[i] << "]";
      if (k.arg_slots.empty()) s << "nullptr";
      s << "};\n    launch(" << k.name << ", args, " << k.xnumel << ", " << k.grain << ");\n  }\n";
      break;
    }
    case PlanStep::Kind::Extern: {
      const PlanExtern& e = plan.externs[st.index];
      assert(e.epilogue == PlanExtern::Epilogue::None && "CPU plans have no matmul epilogues");
      assert(e.kind != PlanExtern::Kind::Attention && "CPU plans have no cuDNN attention");
      const bool grad = e.kind == PlanExtern::Kind::ConvBackwardData ||
                        e.kind == PlanExtern::Kind::ConvBackwardFilter;
      s << (e.kind == PlanExtern::Kind::Gemm   ? render_gemm(e)
            : e.kind == PlanExtern::Kind::Conv ? render_conv(e)
            : grad                             ? render_conv_backward(e)
                                               : render_fallback(e, st.index, plan));
      break;
    }
    }
  };
  if (!plan.prepare.empty()) {
    // Freezing: what reads only the weights, computed once before the first run.
    s << "void prepare() {\n";
    for (const PlanStep& st : plan.prepare) render_step(st);
    s << "}\n\n";
  }
  s << "void run() {\n";
  for (const PlanStep& st : plan.steps) render_step(st);
  s << "}\n\n} // namespace\n\n";
  s << "int main(int argc, char** argv) {\n"
    << "  int runs = argc > 1 ? std::atoi(argv[1]) : 20;\n"
    << "  if (runs < 1) runs = 1;\n";
  if (!custom.empty())
    s << "  // The plugins of the custom ops, from FXC_PLUGINS (colon-separated).\n"
      << "  try {\n"
      << "    const char* env = std::getenv(\"FXC_PLUGINS\");\n"
      << "    std::string libs = env ? env : \"\";\n"
      << "    for (size_t b = 0; b < libs.size();) {\n"
      << "      size_t e = std::min(libs.find(':', b), libs.size());\n"
      << "      if (e > b) fxc::load_plugin(libs.substr(b, e - b));\n"
      << "      b = e + 1;\n"
      << "    }\n"
      << "  } catch (const fxc::Error& e) {\n"
      << "    std::fprintf(stderr, \"%s\\n\", e.what());\n"
      << "    return 1;\n"
      << "  }\n";
  int seed = 0;
  for (size_t i = 0; i < plan.input_slots.size(); ++i) {
    int sl = plan.input_slots[i];
    s << "  alloc_slot(" << sl << "); // input " << i << "\n";
    s << fill_call(sl, plan.input_metas[i].dtype, plan.input_metas[i].numel(), seed++);
  }
  for (auto& [sl, t] : plan.constant_slots) {
    s << "  alloc_slot(" << sl << "); // weight\n";
    s << fill_call(sl, t.dtype(), t.numel(), seed++);
  }
  for (int sl : plan.prepared_slots) s << "  alloc_slot(" << sl << "); // prepared\n";
  if (!plan.prepare.empty()) s << "  prepare();\n";
  s << "  run(); // warm-up\n"
    << "  std::vector<double> ms;\n"
    << "  for (int i = 0; i < runs; ++i) {\n"
    << "    auto t0 = std::chrono::steady_clock::now();\n"
    << "    run();\n"
    << "    ms.push_back(std::chrono::duration<double, "
       "std::milli>(std::chrono::steady_clock::now() - t0).count());\n"
    << "  }\n"
    << "  std::sort(ms.begin(), ms.end());\n"
    << "  std::printf(\"median %.4f ms over %d runs\\n\", ms[ms.size() / 2], runs);\n"
    << "  return 0;\n"
    << "}\n";
  return s.str();
}

} // namespace fxc
