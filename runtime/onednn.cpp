// oneDNN via dlopen: the function table, convolution primitives with post-ops, the direct loop.
#include "runtime/onednn.h"

#include "frontend/diag.h"

#include <dlfcn.h>
#include <dnnl.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>

namespace fxc::onednn {
namespace {

// ---- the function table

#define FXC_DNNL_FUNCTIONS(X)                                                                      \
  X(dnnl_engine_create)                                                                            \
  X(dnnl_stream_create)                                                                            \
  X(dnnl_stream_wait)                                                                              \
  X(dnnl_memory_desc_init_by_tag)                                                                  \
  X(dnnl_memory_desc_equal)                                                                        \
  X(dnnl_memory_desc_get_size)                                                                     \
  X(dnnl_memory_create)                                                                            \
  X(dnnl_memory_destroy)                                                                           \
  X(dnnl_memory_set_data_handle)                                                                   \
  X(dnnl_dilated_convolution_forward_desc_init)                                                    \
  X(dnnl_dilated_convolution_backward_data_desc_init)                                              \
  X(dnnl_dilated_convolution_backward_weights_desc_init)                                           \
  X(dnnl_primitive_attr_create)                                                                    \
  X(dnnl_primitive_attr_destroy)                                                                   \
  X(dnnl_primitive_attr_set_post_ops)                                                              \
  X(dnnl_post_ops_create)                                                                          \
  X(dnnl_post_ops_destroy)                                                                         \
  X(dnnl_post_ops_append_eltwise)                                                                  \
  X(dnnl_post_ops_append_sum)                                                                      \
  X(dnnl_primitive_desc_create)                                                                    \
  X(dnnl_primitive_desc_destroy)                                                                   \
  X(dnnl_primitive_desc_query_md)                                                                  \
  X(dnnl_primitive_desc_query)                                                                     \
  X(dnnl_reorder_primitive_desc_create)                                                            \
  X(dnnl_primitive_create)                                                                         \
  X(dnnl_primitive_destroy)                                                                        \
  X(dnnl_primitive_execute)

struct Api {
#define FXC_DNNL_FIELD(name) decltype(&::name) name = nullptr;
  FXC_DNNL_FUNCTIONS(FXC_DNNL_FIELD)
#undef FXC_DNNL_FIELD
  void (*omp_set_num_threads)(int) = nullptr;
  dnnl_engine_t engine = nullptr;
  dnnl_stream_t stream = nullptr;
  std::string why; ///< empty: usable
};

const Api& api() {
  static Api a;
  static std::once_flag once;
  std::call_once(once, [] {
    const char* env = std::getenv("FXC_ONEDNN");
    if (env && std::string(env) == "0") {
      a.why = "FXC_ONEDNN=0";
      return;
    }
    // libgomp reads its environment when it is loaded (here, as libdnnl's dependency): idle
    // OpenMP workers then sleep instead of spinning on the cores the kernels run on.
    setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
    void* h = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = dlerror();
      a.why = e ? e : "cannot open libdnnl.so.2";
      return;
    }
#define FXC_DNNL_RESOLVE(name)                                                                     \
  a.name = reinterpret_cast<decltype(&::name)>(dlsym(h, #name));                                   \
  if (!a.name) {                                                                                   \
    a.why = "libdnnl.so.2 lacks " #name;                                                           \
    return;                                                                                        \
  }
    FXC_DNNL_FUNCTIONS(FXC_DNNL_RESOLVE)
#undef FXC_DNNL_RESOLVE
    // libdnnl's OpenMP runtime, loaded with it (RTLD_DEFAULT does not see RTLD_LOCAL objects).
    if (void* g = dlopen("libgomp.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD))
      a.omp_set_num_threads = reinterpret_cast<void (*)(int)>(dlsym(g, "omp_set_num_threads"));
    if (a.dnnl_engine_create(&a.engine, dnnl_cpu, 0) != dnnl_success ||
        a.dnnl_stream_create(&a.stream, a.engine, dnnl_stream_default_flags) != dnnl_success) {
      a.why = "oneDNN cannot make a CPU engine";
      return;
    }
  });
  return a;
}

// ---- post-ops

struct Token {
  const char* name;
  PostOp::Kind kind;
  int params;
};
constexpr Token kTokens[] = {
    {"relu", PostOp::Kind::Relu, 0},          {"sigmoid", PostOp::Kind::Sigmoid, 0},
    {"tanh", PostOp::Kind::Tanh, 0},          {"hardswish", PostOp::Kind::Hardswish, 0},
    {"silu", PostOp::Kind::Silu, 0},          {"gelu_erf", PostOp::Kind::GeluErf, 0},
    {"gelu_tanh", PostOp::Kind::GeluTanh, 0}, {"linear", PostOp::Kind::Linear, 2},
    {"clip", PostOp::Kind::Clip, 2},          {"sum", PostOp::Kind::Sum, 0},
};

std::string fmt_float(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", double(v));
  return buf;
}

double apply(const PostOp& op, double v) {
  switch (op.kind) {
  case PostOp::Kind::Relu:
    return v > 0 ? v : 0;
  case PostOp::Kind::Sigmoid:
    return 1 / (1 + std::exp(-v));
  case PostOp::Kind::Tanh:
    return std::tanh(v);
  case PostOp::Kind::Hardswish:
    return v * std::min(std::max(v + 3, 0.0), 6.0) / 6;
  case PostOp::Kind::Silu:
    return v / (1 + std::exp(-v));
  case PostOp::Kind::GeluErf:
    return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
  case PostOp::Kind::GeluTanh:
    return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
  case PostOp::Kind::Linear:
    return double(op.a) * v + double(op.b);
  case PostOp::Kind::Clip:
    return std::min(std::max(v, double(op.a)), double(op.b));
  case PostOp::Kind::Sum:
    break;
  }
  return v;
}

// ---- primitives

/// Owns oneDNN handles.
struct Prepared {
  dnnl_primitive_t conv = nullptr;
  dnnl_primitive_t src_reorder = nullptr, dst_reorder = nullptr, dst_in_reorder = nullptr;
  dnnl_memory_desc_t src_md{}, w_md{}, dst_md{};          ///< what the primitive reads and writes
  dnnl_memory_desc_t plain_src{}, plain_w{}, plain_dst{}; ///< NCHW / (g)oihw
  bool src_plain = true, w_plain = true, dst_plain = true;
  std::vector<float> src_buf, dst_buf, w_buf; ///< blocked copies (w_buf: reordered weights)
  std::vector<float> bias_buf;                ///< with a folded affine map: scale · bias + shift
  bool w_ready = false; ///< w_buf (and bias_buf) hold the constant weights, reordered and scaled
  int sums = 0;
  std::string impl;
  ~Prepared() {
    const Api& a = api();
    for (dnnl_primitive_t p : {conv, src_reorder, dst_reorder, dst_in_reorder})
      if (p) a.dnnl_primitive_destroy(p);
  }
};

dnnl_memory_desc_t md(const std::vector<int64_t>& dims, dnnl_format_tag_t tag) {
  dnnl_memory_desc_t m;
  dnnl_dims_t d;
  for (size_t i = 0; i < dims.size(); ++i) d[i] = dims[i];
  api().dnnl_memory_desc_init_by_tag(&m, int(dims.size()), d, dnnl_f32, tag);
  return m;
}

/// The row-major (plain) layout of a tensor of `rank` dims: NCW/NCHW/NCDHW, (g)oi(d)(h)w.
dnnl_format_tag_t plain_tag(size_t rank) {
  switch (rank) {
  case 1:
    return dnnl_a;
  case 3:
    return dnnl_abc;
  case 4:
    return dnnl_abcd;
  case 5:
    return dnnl_abcde;
  default:
    return dnnl_abcdef;
  }
}

/// The channels-last layout of an activation of `rank` dims: NWC, NHWC, NDHWC.
dnnl_format_tag_t channels_last_tag(size_t rank) {
  return rank == 3 ? dnnl_acb : rank == 4 ? dnnl_acdb : dnnl_acdeb;
}

std::vector<int64_t> weight_dims(const ConvShape& s) {
  if (s.groups == 1) return s.w;
  std::vector<int64_t> d = {s.groups, s.w[0] / s.groups};
  d.insert(d.end(), s.w.begin() + 1, s.w.end());
  return d;
}

/// Whether every spatial dim is 1x..x1, unstrided and unpadded: one sgemm per image.
bool pointwise_window(const ConvShape& s) {
  for (size_t i = 0; i < s.spatial(); ++i)
    if (s.w[2 + i] != 1 || s.stride[i] != 1 || s.padding[i] != 0) return false;
  return true;
}

/// oneDNN's window arguments of a convolution: strides, dilations (gaps), left and right
/// padding.
void window(const ConvShape& s, dnnl_dims_t strides, dnnl_dims_t dil, dnnl_dims_t pl,
            dnnl_dims_t pr) {
  for (size_t i = 0; i < s.spatial(); ++i) {
    strides[i] = s.stride[i];
    dil[i] = s.dilation[i] - 1; // oneDNN counts the gaps
    pl[i] = s.padding[i];
    // Right padding: what makes the output size PyTorch computed (floor division).
    int64_t in = s.x[2 + i], k = (s.w[2 + i] - 1) * s.dilation[i] + 1;
    pr[i] = (s.out[2 + i] - 1) * s.stride[i] + k - in - s.padding[i];
  }
}

/// A reorder primitive from `from` to `to`, or null when they are the same layout.
dnnl_primitive_t make_reorder(const dnnl_memory_desc_t& from, const dnnl_memory_desc_t& to,
                              std::string* why) {
  const Api& a = api();
  if (a.dnnl_memory_desc_equal(&from, &to)) return nullptr;
  dnnl_primitive_desc_t pd = nullptr;
  if (a.dnnl_reorder_primitive_desc_create(&pd, &from, a.engine, &to, a.engine, nullptr) !=
      dnnl_success) {
    *why = "oneDNN has no reorder between the layouts";
    return nullptr;
  }
  dnnl_primitive_t p = nullptr;
  if (a.dnnl_primitive_create(&p, pd) != dnnl_success) *why = "oneDNN cannot make a reorder";
  a.dnnl_primitive_desc_destroy(pd);
  return p;
}

/// Makes the convolution's primitive (src/dst/weights in the layouts oneDNN prefers; `any`
/// everywhere), or returns null with `why`. `buffers`: also the blocked copies a run needs (not
/// for a primitive made only to ask what oneDNN would run).
std::unique_ptr<Prepared> make_conv(const ConvShape& s, const std::vector<PostOp>& ops,
                                    std::string* why, bool buffers = true) {
  const Api& a = api();
  if (!a.why.empty()) {
    *why = a.why;
    return nullptr;
  }
  auto p = std::make_unique<Prepared>();
  std::vector<int64_t> wd = weight_dims(s);
  p->plain_src = md(s.x, s.channels_last ? channels_last_tag(s.x.size()) : plain_tag(s.x.size()));
  p->plain_dst =
      md(s.out, s.channels_last ? channels_last_tag(s.out.size()) : plain_tag(s.out.size()));
  p->plain_w = md(wd, plain_tag(wd.size()));
  dnnl_memory_desc_t src_any = md(s.x, dnnl_format_tag_any),
                     dst_any = md(s.out, dnnl_format_tag_any), w_any = md(wd, dnnl_format_tag_any),
                     bias_md = md({s.w[0]}, dnnl_x);
  dnnl_dims_t strides, dil, pl, pr;
  window(s, strides, dil, pl, pr);
  dnnl_primitive_attr_t attr = nullptr;
  dnnl_post_ops_t po = nullptr;
  a.dnnl_primitive_attr_create(&attr);
  a.dnnl_post_ops_create(&po);
  bool ok = true;
  for (const PostOp& op : ops) {
    dnnl_alg_kind_t alg = dnnl_eltwise_relu;
    float alpha = 0, beta = 0;
    switch (op.kind) {
    case PostOp::Kind::Relu:
      break;
    case PostOp::Kind::Sigmoid:
      alg = dnnl_eltwise_logistic;
      break;
    case PostOp::Kind::Tanh:
      alg = dnnl_eltwise_tanh;
      break;
    case PostOp::Kind::Hardswish:
      alg = dnnl_eltwise_hardswish;
      break;
    case PostOp::Kind::Silu:
      alg = dnnl_eltwise_swish;
      alpha = 1;
      break;
    case PostOp::Kind::GeluErf:
      alg = dnnl_eltwise_gelu_erf;
      break;
    case PostOp::Kind::GeluTanh:
      alg = dnnl_eltwise_gelu_tanh;
      break;
    case PostOp::Kind::Linear:
      alg = dnnl_eltwise_linear;
      alpha = op.a;
      beta = op.b;
      break;
    case PostOp::Kind::Clip:
      alg = dnnl_eltwise_clip_v2; // [lo, hi] inclusive, as torch.clamp
      alpha = op.a;
      beta = op.b;
      break;
    case PostOp::Kind::Sum:
      ok = ok && a.dnnl_post_ops_append_sum(po, 1.0f) == dnnl_success;
      ++p->sums;
      continue;
    }
    ok = ok && a.dnnl_post_ops_append_eltwise(po, 1.0f, alg, alpha, beta) == dnnl_success;
  }
  ok = ok && a.dnnl_primitive_attr_set_post_ops(attr, po) == dnnl_success;
  // First with NCHW activations (no reorders around the call): taken unless oneDNN has only its
  // reference or an im2col-based (gemm) implementation for them, as for depthwise convolutions;
  // then in the layouts it prefers, with src and dst reordered in the call.
  dnnl_primitive_desc_t pd = nullptr;
  const char* impl = nullptr;
  for (int attempt = 0; attempt < 2 && ok && !pd; ++attempt) {
    const dnnl_memory_desc_t& src = attempt == 0 ? p->plain_src : src_any;
    const dnnl_memory_desc_t& dst = attempt == 0 ? p->plain_dst : dst_any;
    dnnl_convolution_desc_t cd;
    if (a.dnnl_dilated_convolution_forward_desc_init(
            &cd, dnnl_forward_inference, dnnl_convolution_direct, &src, &w_any,
            s.bias ? &bias_md : nullptr, &dst, strides, dil, pl, pr) != dnnl_success)
      continue;
    if (a.dnnl_primitive_desc_create(&pd, &cd, attr, a.engine, nullptr) != dnnl_success) {
      pd = nullptr;
      continue;
    }
    a.dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    std::string name = impl ? impl : "";
    // oneDNN's gemm convolution is one sgemm for a 1x1, stride-1, unpadded, ungrouped kernel
    // and im2col + sgemm otherwise (3x3 64->64 at 28x28: 6.0 ms, against 1.8 ms blocked with
    // the two reorders).
    bool plain_gemm = s.groups == 1 && pointwise_window(s);
    bool slow = name.find("ref") != std::string::npos ||
                (name.find("gemm") != std::string::npos && !plain_gemm);
    if (attempt == 0 && slow) {
      a.dnnl_primitive_desc_destroy(pd);
      pd = nullptr;
    }
  }
  a.dnnl_post_ops_destroy(po);
  a.dnnl_primitive_attr_destroy(attr);
  if (!pd) {
    *why = ok ? "oneDNN has no implementation of the convolution with these post-ops"
              : "oneDNN rejects the post-ops";
    return nullptr;
  }
  p->src_md = *a.dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
  p->w_md = *a.dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
  p->dst_md = *a.dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
  p->impl = impl ? impl : "?";
  dnnl_status_t st = a.dnnl_primitive_create(&p->conv, pd);
  a.dnnl_primitive_desc_destroy(pd);
  if (st != dnnl_success) {
    *why = "oneDNN cannot make the convolution primitive";
    return nullptr;
  }
  p->src_plain = a.dnnl_memory_desc_equal(&p->src_md, &p->plain_src);
  p->dst_plain = a.dnnl_memory_desc_equal(&p->dst_md, &p->plain_dst);
  p->w_plain = a.dnnl_memory_desc_equal(&p->w_md, &p->plain_w);
  why->clear();
  if (!p->src_plain) {
    p->src_reorder = make_reorder(p->plain_src, p->src_md, why);
    if (buffers) p->src_buf.resize(a.dnnl_memory_desc_get_size(&p->src_md) / sizeof(float));
  }
  if (!p->dst_plain) {
    p->dst_reorder = make_reorder(p->dst_md, p->plain_dst, why);
    if (p->sums) p->dst_in_reorder = make_reorder(p->plain_dst, p->dst_md, why);
    if (buffers) p->dst_buf.resize(a.dnnl_memory_desc_get_size(&p->dst_md) / sizeof(float));
  }
  if (!p->w_plain && buffers)
    p->w_buf.resize(a.dnnl_memory_desc_get_size(&p->w_md) / sizeof(float));
  if (!why->empty()) return nullptr;
  p->impl += std::string(!p->src_plain     ? ", blocked"
                         : s.channels_last ? ", channels-last"
                                           : ", nchw") +
             " activations";
  return p;
}

/// A convolution gradient's primitive: backward data (in: dy, w; out: dx) or backward weights
/// (in: x, dy; out: dw), with the reorders of its operands between the plain layouts the call
/// reads and writes and the ones the primitive does.
struct PreparedBwd {
  dnnl_primitive_t prim = nullptr;
  std::array<dnnl_primitive_t, 2> in_reorder{};
  dnnl_primitive_t out_reorder = nullptr;
  std::array<dnnl_memory_desc_t, 2> in_md{}, plain_in{};
  dnnl_memory_desc_t out_md{}, plain_out{};
  std::array<bool, 2> in_plain{true, true};
  bool out_plain = true;
  std::array<std::vector<float>, 2> in_buf;
  std::vector<float> out_buf;
  std::string impl;
  ~PreparedBwd() {
    const Api& a = api();
    for (dnnl_primitive_t p : {prim, in_reorder[0], in_reorder[1], out_reorder})
      if (p) a.dnnl_primitive_destroy(p);
  }
};

/// Makes the backward-data (`data`) or backward-weights primitive of the convolution, or returns
/// null with `why`. First with plain activations (no reorders): taken unless oneDNN has only its
/// reference or an im2col-based (gemm) implementation for them; then with every operand in the
/// layout oneDNN prefers. `buffers`: also the blocked copies a run needs.
std::unique_ptr<PreparedBwd> make_conv_backward(const ConvShape& s, bool data, std::string* why,
                                                bool buffers = true) {
  const Api& a = api();
  if (!a.why.empty()) {
    *why = a.why;
    return nullptr;
  }
  auto p = std::make_unique<PreparedBwd>();
  std::vector<int64_t> wd = weight_dims(s);
  const dnnl_memory_desc_t x_plain = md(s.x, plain_tag(s.x.size())),
                           y_plain = md(s.out, plain_tag(s.out.size())),
                           w_plain = md(wd, plain_tag(wd.size()));
  const dnnl_memory_desc_t x_any = md(s.x, dnnl_format_tag_any),
                           y_any = md(s.out, dnnl_format_tag_any),
                           w_any = md(wd, dnnl_format_tag_any);
  dnnl_dims_t strides, dil, pl, pr;
  window(s, strides, dil, pl, pr);
  dnnl_primitive_desc_t pd = nullptr;
  const char* impl = nullptr;
  for (int attempt = 0; attempt < 2 && !pd; ++attempt) {
    const dnnl_memory_desc_t& x = attempt == 0 ? x_plain : x_any;
    const dnnl_memory_desc_t& y = attempt == 0 ? y_plain : y_any;
    // The forward-training primitive descriptor oneDNN wants as the backward's hint.
    dnnl_convolution_desc_t fd, bd;
    dnnl_primitive_desc_t hint = nullptr;
    if (a.dnnl_dilated_convolution_forward_desc_init(&fd, dnnl_forward_training,
                                                     dnnl_convolution_direct, &x, &w_any, nullptr,
                                                     &y, strides, dil, pl, pr) != dnnl_success ||
        a.dnnl_primitive_desc_create(&hint, &fd, nullptr, a.engine, nullptr) != dnnl_success)
      continue;
    dnnl_status_t st =
        data ? a.dnnl_dilated_convolution_backward_data_desc_init(&bd, dnnl_convolution_direct, &x,
                                                                  &w_any, &y, strides, dil, pl, pr)
             : a.dnnl_dilated_convolution_backward_weights_desc_init(
                   &bd, dnnl_convolution_direct, &x, &w_any, nullptr, &y, strides, dil, pl, pr);
    if (st != dnnl_success ||
        a.dnnl_primitive_desc_create(&pd, &bd, nullptr, a.engine, hint) != dnnl_success)
      pd = nullptr;
    a.dnnl_primitive_desc_destroy(hint);
    if (!pd) continue;
    a.dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    std::string name = impl ? impl : "";
    bool slow = name.find("ref") != std::string::npos ||
                (name.find("gemm") != std::string::npos && !(s.groups == 1 && pointwise_window(s)));
    if (attempt == 0 && slow) {
      a.dnnl_primitive_desc_destroy(pd);
      pd = nullptr;
    }
  }
  if (!pd) {
    *why = std::string("oneDNN has no implementation of the convolution's ") +
           (data ? "backward data" : "backward weights");
    return nullptr;
  }
  auto query = [&](dnnl_query_t q) { return *a.dnnl_primitive_desc_query_md(pd, q, 0); };
  if (data) {
    p->in_md = {query(dnnl_query_diff_dst_md), query(dnnl_query_weights_md)};
    p->plain_in = {y_plain, w_plain};
    p->out_md = query(dnnl_query_diff_src_md);
    p->plain_out = x_plain;
  } else {
    p->in_md = {query(dnnl_query_src_md), query(dnnl_query_diff_dst_md)};
    p->plain_in = {x_plain, y_plain};
    p->out_md = query(dnnl_query_diff_weights_md);
    p->plain_out = w_plain;
  }
  p->impl = impl ? impl : "?";
  dnnl_status_t st = a.dnnl_primitive_create(&p->prim, pd);
  a.dnnl_primitive_desc_destroy(pd);
  if (st != dnnl_success) {
    *why = "oneDNN cannot make the convolution gradient's primitive";
    return nullptr;
  }
  why->clear();
  for (size_t i = 0; i < 2; ++i) {
    p->in_plain[i] = a.dnnl_memory_desc_equal(&p->in_md[i], &p->plain_in[i]);
    if (p->in_plain[i]) continue;
    p->in_reorder[i] = make_reorder(p->plain_in[i], p->in_md[i], why);
    if (buffers) p->in_buf[i].resize(a.dnnl_memory_desc_get_size(&p->in_md[i]) / sizeof(float));
  }
  p->out_plain = a.dnnl_memory_desc_equal(&p->out_md, &p->plain_out);
  if (!p->out_plain) {
    p->out_reorder = make_reorder(p->out_md, p->plain_out, why);
    if (buffers) p->out_buf.resize(a.dnnl_memory_desc_get_size(&p->out_md) / sizeof(float));
  }
  if (!why->empty()) return nullptr;
  // The activations: dy and dx (data), x and dy (weights).
  bool blocked = !p->in_plain[0] || (data ? !p->out_plain : !p->in_plain[1]);
  p->impl += blocked ? ", blocked activations" : ", nchw activations";
  return p;
}

/// A memory object over `data` (released at scope end).
struct Mem {
  dnnl_memory_t m = nullptr;
  Mem(const dnnl_memory_desc_t& d, const void* data) {
    api().dnnl_memory_create(&m, &d, api().engine, const_cast<void*>(data));
  }
  ~Mem() {
    if (m) api().dnnl_memory_destroy(m);
  }
  Mem(const Mem&) = delete;
  Mem& operator=(const Mem&) = delete;
};

void exec(dnnl_primitive_t p, std::vector<dnnl_exec_arg_t> args, const std::string& source,
          const std::string& name) {
  const Api& a = api();
  if (a.dnnl_primitive_execute(p, a.stream, int(args.size()), args.data()) != dnnl_success ||
      a.dnnl_stream_wait(a.stream) != dnnl_success)
    throw Error(source, "oneDNN convolution failed", name);
}

void reorder(dnnl_primitive_t r, const dnnl_memory_desc_t& from, const void* src,
             const dnnl_memory_desc_t& to, void* dst, const std::string& source,
             const std::string& name) {
  Mem f(from, src), t(to, dst);
  exec(r, {{DNNL_ARG_FROM, f.m}, {DNNL_ARG_TO, t.m}}, source, name);
}

int count_sums(const std::vector<PostOp>& ops) {
  int n = 0;
  for (const PostOp& op : ops) n += op.kind == PostOp::Kind::Sum;
  return n;
}

/// Fills p.w_buf with the weights w in oneDNN's layout, each output channel's scaled by
/// e.scale when the call has a folded affine map (p.bias_buf then gets scale · bias + shift).
void prepare_weights(Prepared& p, const PlanExtern& e, const float* w, const float* bias,
                     const std::string& source) {
  const auto& ws = e.inputs[1].meta.sizes;
  int64_t K = ws[0], per = 1;
  for (size_t i = 1; i < ws.size(); ++i) per *= ws[i];
  const float* src = w;
  std::vector<float> scaled;
  if (!e.scale.empty()) {
    scaled.resize(size_t(K * per));
    p.bias_buf.resize(size_t(K));
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t i = 0; i < per; ++i)
        scaled[size_t(k * per + i)] = w[k * per + i] * e.scale[size_t(k)];
      p.bias_buf[size_t(k)] = (bias ? bias[k] : 0.0f) * e.scale[size_t(k)] + e.shift[size_t(k)];
    }
    src = scaled.data();
  }
  if (p.w_plain) {
    p.w_buf.assign(src, src + K * per);
    return;
  }
  std::string why;
  dnnl_primitive_t r = make_reorder(p.plain_w, p.w_md, &why);
  if (!why.empty()) throw Error(source, "oneDNN convolution: " + why, e.name);
  reorder(r, p.plain_w, src, p.w_md, p.w_buf.data(), source, e.name);
  api().dnnl_primitive_destroy(r);
}

const float* f32_of(const std::vector<std::shared_ptr<Storage>>& slots, const PlanView& v) {
  return reinterpret_cast<const float*>(slots[v.slot]->data()) + v.meta.storage_offset;
}

} // namespace

ConvShape shape_of(const PlanExtern& e) {
  ConvShape s;
  s.x = e.inputs[0].meta.sizes;
  s.w = e.inputs[1].meta.sizes;
  s.out = e.outputs[0].meta.sizes;
  s.channels_last = e.channels_last;
  if (e.channels_last && s.out.size() >= 3) { // [N, ..., K] -> [N, K, ...]
    s.out.insert(s.out.begin() + 1, s.out.back());
    s.out.pop_back();
  }
  s.stride = e.stride;
  s.padding = e.padding;
  s.dilation = e.dilation;
  s.groups = e.groups;
  int sums = 0;
  try {
    sums = count_sums(parse_post_ops(e.post_ops));
  } catch (const Error&) {
  }
  s.bias = int(e.inputs.size()) - sums == 3;
  return s;
}

const std::string& unavailable_reason() {
  return api().why;
}

std::vector<PostOp> parse_post_ops(const std::string& text) {
  std::vector<PostOp> out;
  std::istringstream in(text);
  std::string tok;
  while (in >> tok) {
    std::vector<std::string> parts;
    size_t start = 0;
    for (size_t c = tok.find(':');; c = tok.find(':', start)) {
      parts.push_back(tok.substr(start, c == std::string::npos ? c : c - start));
      if (c == std::string::npos) break;
      start = c + 1;
    }
    const Token* t = nullptr;
    for (const Token& k : kTokens)
      if (parts[0] == k.name) t = &k;
    if (!t || int(parts.size()) != 1 + t->params)
      throw Error("", "unknown convolution post-op '" + tok + "'");
    PostOp op;
    op.kind = t->kind;
    try {
      if (t->params) {
        op.a = std::stof(parts[1]);
        op.b = std::stof(parts[2]);
      }
    } catch (const std::exception&) {
      throw Error("", "bad number in convolution post-op '" + tok + "'");
    }
    out.push_back(op);
  }
  return out;
}

std::string post_op_token(const PostOp& op) {
  for (const Token& k : kTokens)
    if (k.kind == op.kind)
      return k.params ? std::string(k.name) + ":" + fmt_float(op.a) + ":" + fmt_float(op.b)
                      : std::string(k.name);
  return "?";
}

namespace {

/// What oneDNN makes of a convolution: nothing (`why` says why) or an implementation (`impl`).
struct ConvVerdict {
  bool made = false;
  std::string why, impl;
};

/// The shape as a memo key.
std::string shape_key(const ConvShape& shape) {
  std::string key;
  for (const auto* a :
       {&shape.x, &shape.w, &shape.out, &shape.stride, &shape.padding, &shape.dilation}) {
    for (int64_t v : *a) key += std::to_string(v) + ",";
    key += "|";
  }
  return key + std::to_string(shape.groups) + (shape.bias ? ",b" : ",-") +
         (shape.channels_last ? ",cl" : ",-");
}

/// make_conv_backward's verdict, remembered as conv_verdict's.
const ConvVerdict& backward_verdict(const ConvShape& shape, bool data) {
  static std::mutex mu;
  static std::map<std::string, ConvVerdict>* memo = new std::map<std::string, ConvVerdict>;
  std::string key = shape_key(shape) + (data ? ";data" : ";weights");
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = memo->find(key);
    if (it != memo->end()) return it->second;
  }
  ConvVerdict v;
  std::unique_ptr<PreparedBwd> p = make_conv_backward(shape, data, &v.why, /*buffers=*/false);
  v.made = p != nullptr;
  if (p) v.impl = p->impl;
  std::lock_guard<std::mutex> lock(mu);
  return memo->emplace(std::move(key), std::move(v)).first->second;
}

/// make_conv's verdict on (shape, post_ops), remembered for the process: a model's repeated
/// blocks ask about the same convolutions many times (ResNet-50's train graphs: 300 questions
/// about 23 shapes), and making a primitive costs milliseconds.
const ConvVerdict& conv_verdict(const ConvShape& shape, const std::vector<PostOp>& post_ops) {
  static std::mutex mu;
  static std::map<std::string, ConvVerdict>* memo = new std::map<std::string, ConvVerdict>;
  std::string key = shape_key(shape);
  for (const PostOp& op : post_ops) key += ";" + post_op_token(op);
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = memo->find(key);
    if (it != memo->end()) return it->second;
  }
  ConvVerdict v;
  std::unique_ptr<Prepared> p = make_conv(shape, post_ops, &v.why, /*buffers=*/false);
  v.made = p != nullptr;
  if (p) v.impl = p->impl;
  std::lock_guard<std::mutex> lock(mu);
  return memo->emplace(std::move(key), std::move(v)).first->second; // std::map: stable
}

} // namespace

std::string check_conv(const ConvShape& shape, const std::vector<PostOp>& post_ops) {
  return conv_verdict(shape, post_ops).why;
}

std::string conv_impl_name(const ConvShape& shape, const std::vector<PostOp>& post_ops) {
  const ConvVerdict& v = conv_verdict(shape, post_ops);
  return v.made ? v.impl : "direct loop (" + v.why + ")";
}

ConvShape backward_shape_of(const PlanExtern& e) {
  ConvShape s;
  bool data = e.kind == PlanExtern::Kind::ConvBackwardData;
  if (e.inputs.size() != 2 || e.outputs.size() != 1) return s; // shape_error says what is wrong
  s.x = data ? e.outputs[0].meta.sizes : e.inputs[0].meta.sizes;
  s.w = data ? e.inputs[1].meta.sizes : e.outputs[0].meta.sizes;
  s.out = data ? e.inputs[0].meta.sizes : e.inputs[1].meta.sizes;
  s.stride = e.stride;
  s.padding = e.padding;
  s.dilation = e.dilation;
  s.groups = e.groups;
  return s;
}

std::string check_conv_backward(const ConvShape& shape, bool data) {
  if (std::string why = shape_error(shape); !why.empty()) return why;
  return backward_verdict(shape, data).why;
}

std::string conv_backward_impl_name(const ConvShape& shape, bool data) {
  const ConvVerdict& v = backward_verdict(shape, data);
  return v.made ? v.impl : "direct loop (" + v.why + ")";
}

void set_threads(int threads) {
  const Api& a = api();
  if (a.omp_set_num_threads && threads > 0) a.omp_set_num_threads(threads);
}

void prepare_plan(Plan& plan, const std::string& source) {
  bool any = false;
  for (const PlanExtern& e : plan.externs)
    any = any || e.kind == PlanExtern::Kind::Conv || e.kind == PlanExtern::Kind::ConvBackwardData ||
          e.kind == PlanExtern::Kind::ConvBackwardFilter;
  if (!any || !api().why.empty()) return;
  std::map<int, const Tensor*> constants;
  for (auto& [slot, t] : plan.constant_slots) constants[slot] = &t;
  for (PlanExtern& e : plan.externs) {
    if (e.kind == PlanExtern::Kind::ConvBackwardData ||
        e.kind == PlanExtern::Kind::ConvBackwardFilter) {
      std::string why;
      std::unique_ptr<PreparedBwd> p = make_conv_backward(
          backward_shape_of(e), e.kind == PlanExtern::Kind::ConvBackwardData, &why);
      if (!p) throw Error(source, "oneDNN convolution gradient: " + why, e.name);
      e.prepared = std::shared_ptr<PreparedBwd>(std::move(p));
      continue;
    }
    if (e.kind != PlanExtern::Kind::Conv) continue;
    std::vector<PostOp> ops = parse_post_ops(e.post_ops);
    ConvShape s = shape_of(e);
    ConvShape made = s;
    made.bias = s.bias || !e.scale.empty();
    std::string why;
    std::unique_ptr<Prepared> p = make_conv(made, ops, &why);
    if (!p) throw Error(source, "oneDNN convolution: " + why, e.name);
    // Weights bound at compile time are reordered into oneDNN's layout (and a folded batch
    // norm's scale multiplied in) once, here.
    auto cw = constants.find(e.inputs[1].slot);
    auto cb = s.bias ? constants.find(e.inputs[2].slot) : constants.end();
    bool need = !p->w_plain || !e.scale.empty();
    if (need && cw != constants.end() && (!s.bias || cb != constants.end())) {
      auto data = [&](const Tensor* t, const PlanView& v) {
        return reinterpret_cast<const float*>(t->raw_data()) + v.meta.storage_offset;
      };
      prepare_weights(*p, e, data(cw->second, e.inputs[1]),
                      s.bias ? data(cb->second, e.inputs[2]) : nullptr, source);
      p->w_ready = true;
    }
    e.prepared = std::shared_ptr<Prepared>(std::move(p));
  }
}

void run_conv(const PlanExtern& e, const std::vector<std::shared_ptr<Storage>>& slots,
              ThreadPool& pool, const std::string& source) {
  std::vector<PostOp> ops = parse_post_ops(e.post_ops);
  int sums = count_sums(ops);
  ConvShape s = shape_of(e);
  const float* x = f32_of(slots, e.inputs[0]);
  const float* w = f32_of(slots, e.inputs[1]);
  const float* bias = s.bias ? f32_of(slots, e.inputs[2]) : nullptr;
  std::vector<const float*> extra;
  for (size_t i = e.inputs.size() - size_t(sums); i < e.inputs.size(); ++i)
    extra.push_back(f32_of(slots, e.inputs[i]));
  float* out =
      reinterpret_cast<float*>(slots[e.outputs[0].slot]->data()) + e.outputs[0].meta.storage_offset;
  const float* scale = e.scale.empty() ? nullptr : e.scale.data();
  const float* shift = e.shift.empty() ? nullptr : e.shift.data();
  if (!api().why.empty()) {
    conv_direct(s, x, w, bias, scale, shift, extra, ops, out, pool);
    return;
  }
  std::shared_ptr<Prepared> p = std::static_pointer_cast<Prepared>(e.prepared);
  if (!p) { // a plan nobody prepared: make the primitive for this run only
    std::string why;
    ConvShape made = s;
    made.bias = s.bias || scale;
    p = make_conv(made, ops, &why);
    if (!p) throw Error(source, "oneDNN convolution: " + why, e.name);
  }
  set_threads(pool.size());
  int64_t out_numel = 1;
  for (int64_t d : s.out) out_numel *= d;
  // The residual of a `sum` is what dst holds before the convolution adds to it.
  if (sums > 1) throw Error(source, "oneDNN convolution: more than one sum post-op", e.name);
  const void* src = x;
  if (!p->src_plain) {
    reorder(p->src_reorder, p->plain_src, x, p->src_md, p->src_buf.data(), source, e.name);
    src = p->src_buf.data();
  }
  const void* wts = w;
  if (!p->w_plain || scale) {
    // Weights computed at run time: reordered (and scaled) for this run.
    if (!p->w_ready) prepare_weights(*p, e, w, bias, source);
    wts = p->w_buf.data();
    if (scale) bias = p->bias_buf.data();
  }
  void* dst = p->dst_plain ? static_cast<void*>(out) : p->dst_buf.data();
  if (sums) {
    if (p->dst_plain) {
      if (extra[0] != out) std::memmove(out, extra[0], size_t(out_numel) * sizeof(float));
    } else {
      reorder(p->dst_in_reorder, p->plain_dst, extra[0], p->dst_md, dst, source, e.name);
    }
  }
  dnnl_memory_desc_t bias_md = md({s.w[0]}, dnnl_x);
  Mem ms(p->src_md, src), mw(p->w_md, wts), md_(p->dst_md, dst), mb(bias_md, bias);
  std::vector<dnnl_exec_arg_t> args = {
      {DNNL_ARG_SRC, ms.m}, {DNNL_ARG_WEIGHTS, mw.m}, {DNNL_ARG_DST, md_.m}};
  if (bias) args.push_back({DNNL_ARG_BIAS, mb.m});
  exec(p->conv, args, source, e.name);
  if (!p->dst_plain) reorder(p->dst_reorder, p->dst_md, dst, p->plain_dst, out, source, e.name);
}

void run_conv_backward(const PlanExtern& e, const std::vector<std::shared_ptr<Storage>>& slots,
                       ThreadPool& pool, const std::string& source) {
  const bool data = e.kind == PlanExtern::Kind::ConvBackwardData;
  const ConvShape s = backward_shape_of(e);
  if (e.inputs.size() != 2 || e.outputs.size() != 1 || !shape_error(s).empty())
    throw Error(source, "convolution gradient call: " + shape_error(s), e.name);
  const float* in[2] = {f32_of(slots, e.inputs[0]), f32_of(slots, e.inputs[1])};
  float* out =
      reinterpret_cast<float*>(slots[e.outputs[0].slot]->data()) + e.outputs[0].meta.storage_offset;
  if (!api().why.empty()) {
    conv_backward_direct(s, data, in[0], in[1], out, pool);
    return;
  }
  std::shared_ptr<PreparedBwd> p = std::static_pointer_cast<PreparedBwd>(e.prepared);
  if (!p) { // a plan nobody prepared: make the primitive for this run only
    std::string why;
    p = make_conv_backward(s, data, &why);
    if (!p) throw Error(source, "oneDNN convolution gradient: " + why, e.name);
  }
  set_threads(pool.size());
  const void* args_in[2];
  for (size_t i = 0; i < 2; ++i) {
    args_in[i] = in[i];
    if (p->in_plain[i]) continue;
    reorder(p->in_reorder[i], p->plain_in[i], in[i], p->in_md[i], p->in_buf[i].data(), source,
            e.name);
    args_in[i] = p->in_buf[i].data();
  }
  void* dst = p->out_plain ? static_cast<void*>(out) : p->out_buf.data();
  Mem m0(p->in_md[0], args_in[0]), m1(p->in_md[1], args_in[1]), mo(p->out_md, dst);
  std::vector<dnnl_exec_arg_t> args =
      data ? std::vector<dnnl_exec_arg_t>{{DNNL_ARG_DIFF_DST, m0.m},
                                          {DNNL_ARG_WEIGHTS, m1.m},
                                          {DNNL_ARG_DIFF_SRC, mo.m}}
           : std::vector<dnnl_exec_arg_t>{
                 {DNNL_ARG_SRC, m0.m}, {DNNL_ARG_DIFF_DST, m1.m}, {DNNL_ARG_DIFF_WEIGHTS, mo.m}};
  exec(p->prim, args, source, e.name);
  if (!p->out_plain) reorder(p->out_reorder, p->out_md, dst, p->plain_out, out, source, e.name);
}

/// A convolution's spatial geometry as a 3-D one's, the missing spatial dims of size 1 in front:
/// input, kernel and output extents, stride, padding and dilation per dim.
static std::array<std::array<int64_t, 3>, 6> as_3d(const ConvShape& s) {
  const size_t lead = 3 - s.spatial();
  std::array<std::array<int64_t, 3>, 6> g;
  for (size_t i = 0; i < 3; ++i) {
    bool real = i >= lead;
    g[0][i] = real ? s.x[2 + i - lead] : 1;
    g[1][i] = real ? s.w[2 + i - lead] : 1;
    g[2][i] = real ? s.out[2 + i - lead] : 1;
    g[3][i] = real ? s.stride[i - lead] : 1;
    g[4][i] = real ? s.padding[i - lead] : 0;
    g[5][i] = real ? s.dilation[i - lead] : 1;
  }
  return g;
}

void conv_backward_direct(const ConvShape& s, bool data, const float* a, const float* b, float* out,
                          ThreadPool& pool) {
  const auto [I, R, O, st, pd, dl] = as_3d(s);
  const int64_t N = s.x[0], C = s.x[1], K = s.w[0], CG = s.w[1], KG = K / s.groups;
  const int64_t Isz = I[0] * I[1] * I[2], Rsz = R[0] * R[1] * R[2], Osz = O[0] * O[1] * O[2];
  // Visits every (input position, kernel tap, output position) of one window: f(i, r, o).
  auto taps = [&](auto&& f) {
    for (int64_t o = 0; o < Osz; ++o) {
      const int64_t od = o / (O[1] * O[2]), oh = o / O[2] % O[1], ow = o % O[2];
      for (int64_t u = 0; u < R[0]; ++u) {
        int64_t id = od * st[0] - pd[0] + u * dl[0];
        if (id < 0 || id >= I[0]) continue;
        for (int64_t r = 0; r < R[1]; ++r) {
          int64_t ih = oh * st[1] - pd[1] + r * dl[1];
          if (ih < 0 || ih >= I[1]) continue;
          for (int64_t q = 0; q < R[2]; ++q) {
            int64_t iw = ow * st[2] - pd[2] + q * dl[2];
            if (iw < 0 || iw >= I[2]) continue;
            f((id * I[1] + ih) * I[2] + iw, (u * R[1] + r) * R[2] + q, o);
          }
        }
      }
    }
  };
  if (data) { // dx[n, c] = sum over k of c's group, taps: dy[n, k] · w[k, c % CG]
    const float *dy = a, *w = b;
    pool.parallel_for(N * C, [&](int64_t nc) {
      const int64_t n = nc / C, c = nc % C, g = c / CG, cl = c % CG;
      std::vector<double> acc(size_t(Isz), 0.0);
      for (int64_t k = g * KG; k < (g + 1) * KG; ++k) {
        const float* dyk = dy + (n * K + k) * Osz;
        const float* wk = w + (k * CG + cl) * Rsz;
        taps([&](int64_t i, int64_t r, int64_t o) {
          acc[size_t(i)] += double(dyk[o]) * double(wk[r]);
        });
      }
      for (int64_t i = 0; i < Isz; ++i) out[nc * Isz + i] = float(acc[size_t(i)]);
    });
    return;
  }
  // dw[k, cl] = sum over n, taps: x[n, group(k) · CG + cl] · dy[n, k]
  const float *x = a, *dy = b;
  pool.parallel_for(K * CG, [&](int64_t kc) {
    const int64_t k = kc / CG, cl = kc % CG, c = k / KG * CG + cl;
    std::vector<double> acc(size_t(Rsz), 0.0);
    for (int64_t n = 0; n < N; ++n) {
      const float* xc = x + (n * C + c) * Isz;
      const float* dyk = dy + (n * K + k) * Osz;
      taps([&](int64_t i, int64_t r, int64_t o) {
        acc[size_t(r)] += double(xc[i]) * double(dyk[o]);
      });
    }
    for (int64_t r = 0; r < Rsz; ++r) out[kc * Rsz + r] = float(acc[size_t(r)]);
  });
}

void conv_direct(const ConvShape& s, const float* x, const float* w, const float* bias,
                 const float* scale, const float* shift, const std::vector<const float*>& extra,
                 const std::vector<PostOp>& post_ops, float* out, ThreadPool& pool) {
  const auto [I, R, O, st, pd, dl] = as_3d(s);
  const int64_t N = s.x[0], C = s.x[1], K = s.w[0], CG = s.w[1], KG = K / s.groups;
  const int64_t Isz = I[0] * I[1] * I[2], Rsz = R[0] * R[1] * R[2], Osz = O[0] * O[1] * O[2];
  // Element strides of the channel and of the spatial position (d, h, w linear) in x and the
  // result: NC(D)HW, or channels-last N(D)HWC.
  const int64_t xc_st = s.channels_last ? 1 : Isz, xp_st = s.channels_last ? C : 1;
  const int64_t oc_st = s.channels_last ? 1 : Osz, op_st = s.channels_last ? K : 1;
  pool.parallel_for(N * K, [&](int64_t nk) {
    int64_t n = nk / K, k = nk % K, g = k / KG;
    for (int64_t o = 0; o < Osz; ++o) {
      const int64_t od = o / (O[1] * O[2]), oh = o / O[2] % O[1], ow = o % O[2];
      double acc = bias ? double(bias[k]) : 0.0;
      for (int64_t c = 0; c < CG; ++c) {
        const float* xc = x + n * C * Isz + (g * CG + c) * xc_st;
        const float* wc = w + (k * CG + c) * Rsz;
        for (int64_t a = 0; a < R[0]; ++a) {
          int64_t id = od * st[0] - pd[0] + a * dl[0];
          if (id < 0 || id >= I[0]) continue;
          for (int64_t r = 0; r < R[1]; ++r) {
            int64_t ih = oh * st[1] - pd[1] + r * dl[1];
            if (ih < 0 || ih >= I[1]) continue;
            for (int64_t q = 0; q < R[2]; ++q) {
              int64_t iw = ow * st[2] - pd[2] + q * dl[2];
              if (iw < 0 || iw >= I[2]) continue;
              acc += double(xc[((id * I[1] + ih) * I[2] + iw) * xp_st]) *
                     double(wc[(a * R[1] + r) * R[2] + q]);
            }
          }
        }
      }
      if (scale) acc = acc * double(scale[k]) + double(shift[k]);
      int64_t at = n * K * Osz + k * oc_st + o * op_st;
      size_t next = 0;
      for (const PostOp& op : post_ops)
        acc = op.kind == PostOp::Kind::Sum ? acc + double(extra[next++][at]) : apply(op, acc);
      out[at] = float(acc);
    }
  });
}

std::string shape_error(const ConvShape& s) {
  const size_t R = s.x.size();
  if (R < 3 || R > 5 || s.w.size() != R || s.out.size() != R)
    return "x, w and the result must have one rank among 3, 4 and 5";
  const size_t sp = R - 2;
  if (s.stride.size() != sp || s.padding.size() != sp || s.dilation.size() != sp)
    return "stride, padding and dilation need one value per spatial dim";
  // Bounds that keep the arithmetic below (and a loaded artifact's) far from overflow.
  for (const auto* v : {&s.x, &s.w, &s.out})
    for (int64_t d : *v)
      if (d < 0 || d > (int64_t(1) << 31)) return "a size is negative or above 2^31";
  for (const auto* v : {&s.stride, &s.padding, &s.dilation})
    for (int64_t d : *v)
      if (d < 0 || d > (int64_t(1) << 31)) return "a stride, padding or dilation above 2^31";
  if (s.groups < 1 || s.w[0] < 1 || s.w[0] % s.groups != 0 || s.x[1] != s.w[1] * s.groups)
    return "the channels do not match the groups";
  if (s.out[0] != s.x[0] || s.out[1] != s.w[0]) return "the result is not [N, K, ...]";
  for (size_t i = 0; i < sp; ++i) {
    if (s.stride[i] < 1 || s.dilation[i] < 1 || s.padding[i] < 0 || s.w[2 + i] < 1)
      return "a stride, dilation or kernel size below 1, or a negative padding";
    int64_t span = (s.w[2 + i] - 1) * s.dilation[i] + 1;
    int64_t o = (s.x[2 + i] + 2 * s.padding[i] - span) / s.stride[i] + 1;
    if (s.x[2 + i] + 2 * s.padding[i] < span || o != s.out[2 + i])
      return "spatial dim " + std::to_string(i) + " of the result is " +
             std::to_string(s.out[2 + i]) + ", not what the window gives";
  }
  return {};
}

} // namespace fxc::onednn
