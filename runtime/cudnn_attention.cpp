// Fused scaled-dot-product attention through cuDNN 9's backend graph API.
//
// The graph is the one cudnn-frontend's CompositeSDPANode builds for cuDNN 9.x
// (include/cudnn_frontend/node/scaled_dot_product_flash_attention.h, softmax.h,
// diagonal_band_mask.h), which cuDNN's flash-attention engine recognizes as a whole:
//
//   S = Q·Kᵀ (K described as Kᵀ: dims [b, h, d, s_kv], strides 2 and 3 swapped)
//   S = S · scale                        (a by-value float)
//   causal: S = row >= col ? S : -inf    (GEN_INDEX on axes 2 and 3, CMP_GE, BINARY_SELECT)
//   M = max_row S; E = exp(S - M); Z = sum_row E; stats = M + log Z (virtual); P = E / Z
//   O = P·V                               (P in the I/O dtype, as the engine expects)
//
// Every intermediate is virtual and float32. The execution plan is the first configuration of
// heuristics mode A that finalizes; it is built once per problem and kept.
#include "runtime/cudnn_api.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>

namespace fxc::cuda {

std::string attention_problem_error(const AttentionProblem& p) {
  if (p.dtype != DType::F16 && p.dtype != DType::BF16)
    return "cuDNN's fused attention takes f16 or bf16, not " + std::string(dtype_name(p.dtype));
  for (int64_t v : {p.b, p.h, p.h_kv, p.s_q, p.s_kv, p.d, p.d_v})
    if (v < 1 || v > INT32_MAX) return "a size is outside [1, 2^31-1]";
  if (p.h % p.h_kv != 0)
    return "k and v have " + std::to_string(p.h_kv) + " heads, not a divisor of q's " +
           std::to_string(p.h);
  if (p.has_bias && ((p.bias_b != 1 && p.bias_b != p.b) || (p.bias_h != 1 && p.bias_h != p.h)))
    return "the bias is not [1 or b, 1 or h, s_q, s_kv]";
  if (p.d % 8 != 0 || p.d_v % 8 != 0 || p.d > 128 || p.d_v > 128)
    return "head dims must be multiples of 8 up to 128, not " + std::to_string(p.d) + " and " +
           std::to_string(p.d_v);
  if (!std::isfinite(p.scale)) return "the scale is not finite";
  for (const std::array<int64_t, 4>* s : {&p.q_strides, &p.k_strides, &p.v_strides, &p.o_strides}) {
    if ((*s)[3] != 1) return "the head dim of every operand must be unit-stride";
    for (size_t i = 0; i < 3; ++i)
      if ((*s)[i] < 0 || (*s)[i] % 8 != 0)
        return "strides must be non-negative multiples of 8 elements (16-byte aligned rows)";
  }
  return "";
}

AttentionProblem with_canonical_unit_strides(AttentionProblem p) {
  auto fix = [](std::array<int64_t, 4>& st, std::array<int64_t, 4> sz) {
    int64_t extent = 1;
    for (size_t i = 0; i < 4; ++i)
      if (sz[i] != 1) extent = std::max(extent, st[i] * sz[i]);
    for (size_t i = 0; i < 4; ++i)
      if (sz[i] == 1) st[i] = i == 3 ? 1 : extent;
  };
  fix(p.q_strides, {p.b, p.h, p.s_q, p.d});
  fix(p.k_strides, {p.b, p.h_kv, p.s_kv, p.d});
  fix(p.v_strides, {p.b, p.h_kv, p.s_kv, p.d_v});
  fix(p.o_strides, {p.b, p.h, p.s_q, p.d_v});
  return p;
}

#if defined(FXC_HAVE_CUDNN_HEADERS)

namespace {

enum : int64_t { kUidQ = 1, kUidK, kUidV, kUidO, kUidScale, kUidNegInf, kUidBias };

/// The backend descriptors of one fused-attention graph, its execution plan and workspace size.
/// Owns every descriptor it made (destroyed in reverse order).
struct AttentionPlan {
  const Cudnn::Api& D;
  std::vector<cudnnBackendDescriptor_t> owned;
  cudnnBackendDescriptor_t plan = nullptr;
  int64_t workspace_bytes = 0;
  bool causal = false, has_bias = false;
  float scale = 1, neg_inf = -INFINITY; ///< the by-value scalars' host storage
  explicit AttentionPlan(const Cudnn::Api& api) : D(api) {}
  AttentionPlan(const AttentionPlan&) = delete;
  AttentionPlan& operator=(const AttentionPlan&) = delete;
  ~AttentionPlan() {
    for (auto it = owned.rbegin(); it != owned.rend(); ++it) D.cudnnBackendDestroyDescriptor(*it);
  }

  [[noreturn]] void fail(cudnnStatus_t s, const char* what) const {
    char detail[1024] = {0};
    if (D.cudnnGetLastErrorString) D.cudnnGetLastErrorString(detail, sizeof(detail));
    const char* text = D.cudnnGetErrorString(s);
    throw CudaError(std::string("cuDNN fused attention: ") + what +
                    " failed: " + (text ? text : "status " + std::to_string(int(s))) +
                    (detail[0] ? std::string(" (") + detail + ")" : std::string()));
  }
  void ok(cudnnStatus_t s, const char* what) const {
    if (s != CUDNN_STATUS_SUCCESS) fail(s, what);
  }
  cudnnBackendDescriptor_t create(cudnnBackendDescriptorType_t t) {
    cudnnBackendDescriptor_t d = nullptr;
    ok(D.cudnnBackendCreateDescriptor(t, &d), "cudnnBackendCreateDescriptor");
    owned.push_back(d);
    return d;
  }
  void set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
           cudnnBackendAttributeType_t type, int64_t count, const void* values) {
    ok(D.cudnnBackendSetAttribute(d, name, type, count, values), "cudnnBackendSetAttribute");
  }
  void set_desc(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
                cudnnBackendDescriptor_t v) {
    set(d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v);
  }
  void finalize(cudnnBackendDescriptor_t d, const char* what) {
    ok(D.cudnnBackendFinalize(d), what);
  }

  /// A rank-4 tensor (cudnn_frontend_Tensor.h's attribute order).
  cudnnBackendDescriptor_t tensor(int64_t uid, cudnnDataType_t dt, const int64_t* dims,
                                  const int64_t* strides, bool is_virtual, bool by_value = false) {
    cudnnBackendDescriptor_t t = create(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    int64_t align = 16;
    set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt);
    set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims);
    set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides);
    set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
    bool yes = true;
    if (is_virtual) set(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &yes);
    if (by_value) set(t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &yes);
    finalize(t, "a tensor descriptor");
    return t;
  }
  void pointwise(std::vector<cudnnBackendDescriptor_t>& ops, cudnnPointwiseMode_t mode,
                 cudnnDataType_t prec, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
                 cudnnBackendDescriptor_t t, cudnnBackendDescriptor_t y, int64_t axis = -1) {
    cudnnBackendDescriptor_t pw = create(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec);
    if (mode == CUDNN_POINTWISE_GEN_INDEX)
      set(pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis);
    finalize(pw, "a pointwise descriptor");
    cudnnBackendDescriptor_t op = create(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw);
    set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x);
    set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
    if (b) set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b);
    if (t) set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, t);
    float one = 1;
    set(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &one);
    set(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, &one);
    finalize(op, "a pointwise operation");
    ops.push_back(op);
  }
  void matmul(std::vector<cudnnBackendDescriptor_t>& ops, cudnnBackendDescriptor_t a,
              cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t c) {
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    cudnnBackendDescriptor_t mm = create(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    set(mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
    finalize(mm, "a matmul descriptor");
    cudnnBackendDescriptor_t op = create(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, a);
    set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, b);
    set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, c);
    set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, mm);
    finalize(op, "a matmul operation");
    ops.push_back(op);
  }
  void reduction(std::vector<cudnnBackendDescriptor_t>& ops, cudnnReduceTensorOp_t red,
                 cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y, size_t version) {
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    cudnnBackendDescriptor_t rd = create(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    set(rd, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
    set(rd, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &red);
#if CUDNN_VERSION >= 91100
    if (version >= 91100) {
      bool deterministic = false;
      set(rd, CUDNN_ATTR_REDUCTION_IS_DETERMINISTIC, CUDNN_TYPE_BOOLEAN, 1, &deterministic);
    }
#else
    (void)version;
#endif
    finalize(rd, "a reduction descriptor");
    cudnnBackendDescriptor_t op = create(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    set_desc(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, rd);
    set_desc(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x);
    set_desc(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y);
    finalize(op, "a reduction operation");
    ops.push_back(op);
  }

  /// Builds the graph of `p` and its execution plan on `handle`.
  void build(cudnnHandle_t handle, const AttentionProblem& p, size_t version) {
    const cudnnDataType_t io = p.dtype == DType::BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
    const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    causal = p.causal;
    has_bias = p.has_bias;
    scale = float(p.scale);
    // attn_score_modifiers.h: the lowest float before cuDNN 9.10, -inf from then on.
    neg_inf = version < 91000 ? -3.402823466e38f : -INFINITY;
    const int64_t b = p.b, h = p.h, hk = p.h_kv, sq = p.s_q, skv = p.s_kv;
    const int64_t q_dim[4] = {b, h, sq, p.d}, kt_dim[4] = {b, hk, p.d, skv};
    const int64_t v_dim[4] = {b, hk, skv, p.d_v}, o_dim[4] = {b, h, sq, p.d_v};
    const int64_t bias_dim[4] = {p.bias_b, p.bias_h, sq, skv};
    const int64_t bias_str[4] = {p.bias_h * sq * skv, sq * skv, skv, 1};
    const int64_t kt_str[4] = {p.k_strides[0], p.k_strides[1], p.k_strides[3], p.k_strides[2]};
    const int64_t s_dim[4] = {b, h, sq, skv}, s_str[4] = {h * sq * skv, sq * skv, skv, 1};
    const int64_t r_dim[4] = {b, h, sq, 1}, r_str[4] = {h * sq, sq, 1, 1};
    const int64_t one[4] = {1, 1, 1, 1};
    int64_t uid = 100; // virtual tensors
    std::vector<cudnnBackendDescriptor_t> ops;
    auto tQ = tensor(kUidQ, io, q_dim, p.q_strides.data(), false);
    auto tK = tensor(kUidK, io, kt_dim, kt_str, false);
    auto tV = tensor(kUidV, io, v_dim, p.v_strides.data(), false);
    auto tO = tensor(kUidO, io, o_dim, p.o_strides.data(), false);
    auto tScale = tensor(kUidScale, f32, one, one, false, true);
    auto s1 = tensor(uid++, f32, s_dim, s_str, true);
    matmul(ops, tQ, tK, s1);
    auto cur = tensor(uid++, f32, s_dim, s_str, true);
    pointwise(ops, CUDNN_POINTWISE_MUL, f32, s1, tScale, nullptr, cur);
    if (p.has_bias) {
      auto tBias = tensor(kUidBias, io, bias_dim, bias_str, false);
      auto biased = tensor(uid++, f32, s_dim, s_str, true);
      pointwise(ops, CUDNN_POINTWISE_ADD, f32, cur, tBias, nullptr, biased);
      cur = biased;
    }
    if (p.causal) {
      auto row = tensor(uid++, CUDNN_DATA_INT32, s_dim, s_str, true);
      pointwise(ops, CUDNN_POINTWISE_GEN_INDEX, f32, cur, nullptr, nullptr, row, 2);
      auto col = tensor(uid++, CUDNN_DATA_INT32, s_dim, s_str, true);
      pointwise(ops, CUDNN_POINTWISE_GEN_INDEX, f32, cur, nullptr, nullptr, col, 3);
      auto mask = tensor(uid++, CUDNN_DATA_BOOLEAN, s_dim, s_str, true);
      pointwise(ops, CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, row, col, nullptr, mask);
      auto tNegInf = tensor(kUidNegInf, f32, one, one, false, true);
      auto masked = tensor(uid++, f32, s_dim, s_str, true);
      pointwise(ops, CUDNN_POINTWISE_BINARY_SELECT, f32, cur, tNegInf, mask, masked);
      cur = masked;
    }
    auto m = tensor(uid++, f32, r_dim, r_str, true);
    reduction(ops, CUDNN_REDUCE_TENSOR_MAX, cur, m, version);
    auto sub = tensor(uid++, f32, s_dim, s_str, true);
    pointwise(ops, CUDNN_POINTWISE_SUB, f32, cur, m, nullptr, sub);
    auto e = tensor(uid++, f32, s_dim, s_str, true);
    pointwise(ops, CUDNN_POINTWISE_EXP, f32, sub, nullptr, nullptr, e);
    auto z = tensor(uid++, f32, r_dim, r_str, true);
    reduction(ops, CUDNN_REDUCE_TENSOR_ADD, e, z, version);
    auto log_z = tensor(uid++, f32, r_dim, r_str, true);
    pointwise(ops, CUDNN_POINTWISE_LOG, f32, z, nullptr, nullptr, log_z);
    auto stats = tensor(uid++, f32, r_dim, r_str, true);
    pointwise(ops, CUDNN_POINTWISE_ADD, f32, m, log_z, nullptr, stats);
    auto prob = tensor(uid++, io, s_dim, s_str, true);
    pointwise(ops, CUDNN_POINTWISE_DIV, f32, e, z, nullptr, prob);
    matmul(ops, prob, tV, tO);

    cudnnBackendDescriptor_t graph = create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, int64_t(ops.size()),
        ops.data());
    set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
    finalize(graph, "the operation graph");
    cudnnBackendDescriptor_t heur = create(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    set_desc(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph);
    set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    finalize(heur, "the engine heuristics");
    int64_t count = 0;
    ok(D.cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                  CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr),
       "the engine heuristics' result count");
    if (count <= 0)
      throw CudaError("cuDNN fused attention: no engine runs this graph (" + describe(p) + ")");
    std::vector<cudnnBackendDescriptor_t> configs;
    for (int64_t i = 0; i < count; ++i)
      configs.push_back(create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    int64_t got = 0;
    ok(D.cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                  CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, configs.data()),
       "the engine heuristics' results");
    cudnnStatus_t last = CUDNN_STATUS_NOT_SUPPORTED;
    for (int64_t i = 0; i < got; ++i) {
      cudnnBackendDescriptor_t candidate = nullptr;
      ok(D.cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &candidate),
         "cudnnBackendCreateDescriptor");
      D.cudnnBackendSetAttribute(candidate, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1,
                                 &handle);
      D.cudnnBackendSetAttribute(candidate, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &configs[size_t(i)]);
      last = D.cudnnBackendFinalize(candidate);
      if (last != CUDNN_STATUS_SUCCESS) {
        D.cudnnBackendDestroyDescriptor(candidate);
        continue;
      }
      owned.push_back(candidate);
      plan = candidate;
      int64_t n = 0;
      ok(D.cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                    CUDNN_TYPE_INT64, 1, &n, &workspace_bytes),
         "the plan's workspace size");
      return;
    }
    fail(last, ("finalizing an execution plan (" + std::to_string(got) + " engine configs, " +
                describe(p) + ")")
                   .c_str());
  }

  static std::string describe(const AttentionProblem& p) {
    return std::string(dtype_name(p.dtype)) + " b " + std::to_string(p.b) + ", h " +
           std::to_string(p.h) + "/" + std::to_string(p.h_kv) + ", s_q " + std::to_string(p.s_q) +
           ", s_kv " + std::to_string(p.s_kv) + ", d " + std::to_string(p.d) + "/" +
           std::to_string(p.d_v) + (p.causal ? ", causal" : "") + (p.has_bias ? ", bias" : "");
  }
};

} // namespace

void Cudnn::attention_forward(const AttentionProblem& given, DevicePtr q, DevicePtr k, DevicePtr v,
                              DevicePtr bias, DevicePtr o) {
  const AttentionProblem p = with_canonical_unit_strides(given);
  if (std::string why = attention_problem_error(p); !why.empty())
    throw CudaError("cuDNN fused attention: " + why);
  if (p.has_bias != (bias != 0))
    throw CudaError("cuDNN fused attention: a bias pointer without a bias, or none with one");
  for (DevicePtr ptr : {q, k, v, o, p.has_bias ? bias : o}) {
    if (!ptr) throw CudaError("cuDNN fused attention: null operand");
    if (ptr % 16 != 0) throw CudaError("cuDNN fused attention: an operand is not 16-byte aligned");
  }
  ctx_.make_current();
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int64_t> key = {int64_t(p.dtype), p.b,     p.h,   p.h_kv,   p.s_q,
                              p.s_kv,           p.d,     p.d_v, p.causal, p.has_bias,
                              p.bias_b,         p.bias_h};
  for (const auto* s : {&p.q_strides, &p.k_strides, &p.v_strides, &p.o_strides})
    key.insert(key.end(), s->begin(), s->end());
  int64_t scale_bits = 0;
  double scale = p.scale;
  std::memcpy(&scale_bits, &scale, sizeof(scale));
  key.push_back(scale_bits);
  auto it = attention_plans_.find(key);
  if (it == attention_plans_.end()) {
    auto plan = std::make_shared<AttentionPlan>(*api_);
    plan->build(static_cast<cudnnHandle_t>(handle_), p, version_);
    it = attention_plans_.emplace(key, std::static_pointer_cast<void>(plan)).first;
  }
  AttentionPlan& plan = *static_cast<AttentionPlan*>(it->second.get());
  void* ws = reinterpret_cast<void*>(uintptr_t(workspace(size_t(plan.workspace_bytes))));
  auto ptr = [](DevicePtr x) { return reinterpret_cast<void*>(uintptr_t(x)); };
  std::vector<void*> ptrs = {ptr(q), ptr(k), ptr(v), ptr(o), &plan.scale};
  std::vector<int64_t> uids = {kUidQ, kUidK, kUidV, kUidO, kUidScale};
  if (plan.causal) ptrs.push_back(&plan.neg_inf), uids.push_back(kUidNegInf);
  if (plan.has_bias) ptrs.push_back(ptr(bias)), uids.push_back(kUidBias);
  const int64_t n = int64_t(ptrs.size());
  const Api& D = *api_;
  cudnnBackendDescriptor_t pack = nullptr;
  plan.ok(D.cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack),
          "cudnnBackendCreateDescriptor");
  cudnnStatus_t s = D.cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
                                               CUDNN_TYPE_VOID_PTR, 1, &ws);
  if (s == CUDNN_STATUS_SUCCESS)
    s = D.cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
                                   n, ptrs.data());
  if (s == CUDNN_STATUS_SUCCESS)
    s = D.cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n,
                                   uids.data());
  if (s == CUDNN_STATUS_SUCCESS) s = D.cudnnBackendFinalize(pack);
  if (s == CUDNN_STATUS_SUCCESS)
    s = D.cudnnBackendExecute(static_cast<cudnnHandle_t>(handle_), plan.plan, pack);
  D.cudnnBackendDestroyDescriptor(pack);
  plan.ok(s, "cudnnBackendExecute");
}

#else // no cuDNN headers at build time

void Cudnn::attention_forward(const AttentionProblem& p, DevicePtr, DevicePtr, DevicePtr, DevicePtr,
                              DevicePtr) {
  if (std::string why = attention_problem_error(with_canonical_unit_strides(p)); !why.empty())
    throw CudaError("cuDNN fused attention: " + why);
  throw CudaError("cuDNN not available: fxc was built without cudnn.h");
}

#endif

} // namespace fxc::cuda
