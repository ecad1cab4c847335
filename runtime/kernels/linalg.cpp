// Reference kernels of linear algebra, convolution and attention: mm, bmm, addmm, matmul and
// linear over one double GEMM, 1-D to 3-D convolution as im2col and GEMM, and
// scaled_dot_product_attention (with grouped-query heads), _cdist_forward, _pdist_forward, im2col
// and col2im; the decompositions and solves (LU, Cholesky, QR, eigh, SVD, LDL) through LAPACK.
#include "runtime/kernels/kernel_util.h"

#include "frontend/resample.h"
#include "runtime/kernels/lapack.h"

namespace fxc::kernel_detail {
namespace {

// ---- Matrix products ----

void check_same_dtype(const Tensor& a, const Tensor& b, const char* op) {
  if (a.dtype() != b.dtype())
    fail(std::string(op) + ": expected both operands to have the same dtype, got " +
         dname(a.dtype()) + " and " + dname(b.dtype()));
}

// out[n, m] += a[n, k] @ b[k, m] on contiguous double buffers, summing over k in order.
// Compiled with optimisation even in debug builds: it dominates the interpreter's run time,
// and without -ffast-math the result is the same as at -O0.
FXC_OPTIMIZED void gemm_kernel(const double* a, const double* b, double* out, int64_t n, int64_t k,
                               int64_t m) {
  // Blocks of rows of b stay in cache across all rows of a; each out[i, j] still sums its k
  // products in ascending order.
  const int64_t kBlock = 64;
  for (int64_t p0 = 0; p0 < k; p0 += kBlock) {
    int64_t p1 = std::min(k, p0 + kBlock);
    for (int64_t i = 0; i < n; ++i) {
      double* orow = out + i * m;
      const double* arow = a + i * k;
      for (int64_t p = p0; p < p1; ++p) {
        double x = arow[p];
        const double* brow = b + p * m;
        for (int64_t j = 0; j < m; ++j) orow[j] += x * brow[j];
      }
    }
  }
}

// Row-major double copy of the [r, c] matrix at `base` with the given strides.
void load_matrix(const Tensor& t, int64_t base, int64_t r, int64_t c, int64_t sr, int64_t sc,
                 double* dst) {
  if (t.dtype() == DType::F32 || t.dtype() == DType::F64) {
    const std::byte* p = t.raw_data();
    bool f32 = t.dtype() == DType::F32;
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j) {
        int64_t off = base + i * sr + j * sc;
        if (f32) {
          float v;
          std::memcpy(&v, p + off * 4, 4);
          dst[i * c + j] = v;
        } else {
          std::memcpy(&dst[i * c + j], p + off * 8, 8);
        }
      }
    return;
  }
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) dst[i * c + j] = t.load(base + i * sr + j * sc);
}

// Batched product of a [batch..., n, k] and b [batch..., k, m] (same batch shape, any
// strides): row-major double result of batch * n * m, accumulated in double.
std::vector<double> gemm(const Tensor& a, const Tensor& b) {
  int64_t r = a.dim();
  assert(r >= 2 && b.dim() == r && "gemm expects equal ranks >= 2");
  Shape batch(a.sizes().begin(), a.sizes().end() - 2);
  int64_t n = a.size(r - 2), k = a.size(r - 1), m = b.size(r - 1);
  assert(b.size(r - 2) == k && "gemm inner sizes differ");
  auto boff_a = dim_offsets(batch, Shape(a.strides().begin(), a.strides().end() - 2));
  auto boff_b = dim_offsets(batch, Shape(b.strides().begin(), b.strides().end() - 2));
  std::vector<double> av(static_cast<size_t>(n * k)), bv(size_t(k * m)),
      out(boff_a.size() * size_t(n * m), 0.0);
  for (size_t t = 0; t < boff_a.size(); ++t) {
    // A batch operand broadcast with stride 0 is loaded once.
    if (t == 0 || boff_a[t] != boff_a[t - 1])
      load_matrix(a, boff_a[t], n, k, a.stride(r - 2), a.stride(r - 1), av.data());
    if (t == 0 || boff_b[t] != boff_b[t - 1])
      load_matrix(b, boff_b[t], k, m, b.stride(r - 2), b.stride(r - 1), bv.data());
    gemm_kernel(av.data(), bv.data(), out.data() + t * size_t(n * m), n, k, m);
  }
  return out;
}

Tensor transpose_last(const Tensor& t) {
  Shape s = t.sizes(), st = t.strides();
  std::swap(s[s.size() - 1], s[s.size() - 2]);
  std::swap(st[st.size() - 1], st[st.size() - 2]);
  return view_of(t, s, st, t.storage_offset());
}

// torch.matmul over every rank combination, as double values and the result shape.
std::vector<double> matmul_values(const Tensor& a0, const Tensor& b0, Shape* shape) {
  if (a0.dim() == 0 || b0.dim() == 0)
    fail("both arguments to matmul need to be at least 1D, but they are " +
         std::to_string(a0.dim()) + "D and " + std::to_string(b0.dim()) + "D");
  Tensor a = a0.dim() == 1 ? unsqueeze_view(a0, 0) : a0;
  Tensor b = b0.dim() == 1 ? unsqueeze_view(b0, 1) : b0;
  int64_t n = a.size(a.dim() - 2), k = a.size(a.dim() - 1);
  int64_t k2 = b.size(b.dim() - 2), m = b.size(b.dim() - 1);
  if (k != k2)
    fail("mat1 and mat2 shapes cannot be multiplied (" + std::to_string(n) + "x" +
         std::to_string(k) + " and " + std::to_string(k2) + "x" + std::to_string(m) + ")");
  Shape ba(a.sizes().begin(), a.sizes().end() - 2), bb(b.sizes().begin(), b.sizes().end() - 2);
  Shape batch = broadcast(ba, bb);
  Shape sa = batch, sb = batch;
  sa.insert(sa.end(), {n, k});
  sb.insert(sb.end(), {k, m});
  *shape = batch;
  if (a0.dim() > 1) shape->push_back(n);
  if (b0.dim() > 1) shape->push_back(m);
  return gemm(expand_to(a, sa), expand_to(b, sb));
}

Tensors k_matmul(const KernelCall& c) {
  const Tensor& a = c.tensor("self");
  const Tensor& b = c.tensor("other");
  check_same_dtype(a, b, "matmul");
  Shape shape;
  auto v = matmul_values(a, b, &shape);
  return {make(c.result_dtype(a.dtype()), shape, v)};
}

Tensors k_mm(const KernelCall& c) {
  const Tensor& a = c.tensor("self");
  const Tensor& b = c.tensor("mat2");
  if (a.dim() != 2 || b.dim() != 2)
    fail("mm expects 2-D operands, got " + shape_str(a.sizes()) + " and " + shape_str(b.sizes()));
  check_same_dtype(a, b, "mm");
  Shape shape;
  auto v = matmul_values(a, b, &shape);
  return {make(c.result_dtype(a.dtype()), shape, v)};
}

Tensors k_bmm(const KernelCall& c) {
  const Tensor& a = c.tensor("self");
  const Tensor& b = c.tensor("mat2");
  if (a.dim() != 3 || b.dim() != 3)
    fail("bmm expects 3-D operands, got " + shape_str(a.sizes()) + " and " + shape_str(b.sizes()));
  if (a.size(0) != b.size(0))
    fail("bmm: batch sizes differ: " + shape_str(a.sizes()) + " and " + shape_str(b.sizes()));
  check_same_dtype(a, b, "bmm");
  Shape shape;
  auto v = matmul_values(a, b, &shape);
  return {make(c.result_dtype(a.dtype()), shape, v)};
}

// beta * bias + alpha * product, with bias broadcast to the product's shape.
Tensor add_bias(const std::vector<double>& prod, const Shape& shape, const Tensor& bias,
                double beta, double alpha, DType dt) {
  std::vector<double> out(prod.size());
  std::vector<double> bv;
  if (bias.defined() && beta != 0) bv = values(expand_to(bias, shape));
  for (size_t i = 0; i < prod.size(); ++i)
    out[i] = alpha * prod[i] + (bv.empty() ? 0.0 : beta * bv[i]);
  return make(dt, shape, out);
}

Tensors k_addmm(const KernelCall& c) {
  const Tensor& self = c.tensor("self");
  const Tensor& a = c.tensor("mat1");
  const Tensor& b = c.tensor("mat2");
  if (a.dim() != 2 || b.dim() != 2)
    fail("addmm expects 2-D matrices, got " + shape_str(a.sizes()) + " and " +
         shape_str(b.sizes()));
  check_same_dtype(a, b, "addmm");
  check_same_dtype(self, a, "addmm");
  Shape shape;
  auto v = matmul_values(a, b, &shape);
  return {add_bias(v, shape, self, c.arg("beta").scalar(), c.arg("alpha").scalar(),
                   c.result_dtype(a.dtype()))};
}

Tensors k_linear(const KernelCall& c) {
  const Tensor& x = c.tensor("input");
  const Tensor& w = c.tensor("weight");
  const Tensor& bias = c.tensor("bias");
  check_same_dtype(x, w, "linear");
  if (bias.defined()) check_same_dtype(x, bias, "linear");
  if (w.dim() != 1 && w.dim() != 2)
    fail("linear expects a 1-D or 2-D weight, got " + shape_str(w.sizes()));
  Shape shape;
  auto v = matmul_values(x, w.dim() == 2 ? transpose_last(w) : w, &shape);
  return {add_bias(v, shape, bias, 1.0, 1.0, c.result_dtype(x.dtype()))};
}

// ---- Convolution and pooling ----

// Unfolds the [C, H, W] image x into col[(c, kh, kw), (oh, ow)] (zeros where the window
// reaches into the padding).
FXC_OPTIMIZED void im2col(const double* x, int64_t C, int64_t H, int64_t W, int64_t KH, int64_t KW,
                          int64_t OH, int64_t OW, const Shape& stride, const Shape& pad,
                          const Shape& dil, double* col) {
  for (int64_t c = 0; c < C; ++c)
    for (int64_t kh = 0; kh < KH; ++kh)
      for (int64_t kw = 0; kw < KW; ++kw) {
        double* row = col + ((c * KH + kh) * KW + kw) * OH * OW;
        for (int64_t oh = 0; oh < OH; ++oh) {
          int64_t ih = oh * stride[0] - pad[0] + kh * dil[0];
          for (int64_t ow = 0; ow < OW; ++ow) {
            int64_t iw = ow * stride[1] - pad[1] + kw * dil[1];
            bool inside = ih >= 0 && ih < H && iw >= 0 && iw < W;
            row[oh * OW + ow] = inside ? x[(c * H + ih) * W + iw] : 0.0;
          }
        }
      }
}

// 2-D convolution of x [N, C, H, W] with w [O, C/groups, KH, KW].
Tensor conv2d_impl(const Tensor& x, const Tensor& w, const Tensor& bias, Shape stride, Shape pad,
                   Shape dil, int64_t groups, DType dt) {
  if (x.dim() != 4 || w.dim() != 4)
    fail("expected a 4-D input and weight for 2-D convolution, got " + shape_str(x.sizes()) +
         " and " + shape_str(w.sizes()));
  int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  int64_t O = w.size(0), CG = w.size(1), KH = w.size(2), KW = w.size(3);
  if (groups <= 0) fail("non-positive groups is not supported");
  for (int i = 0; i < 2; ++i) {
    if (stride[i] <= 0) fail("non-positive stride is not supported");
    if (pad[i] < 0) fail("negative padding is not supported");
    if (dil[i] <= 0) fail("dilation should be greater than zero");
  }
  if (CG * groups != C)
    fail("given groups=" + std::to_string(groups) + ", weight of size " + shape_str(w.sizes()) +
         ", expected input" + shape_str(x.sizes()) + " to have " + std::to_string(CG * groups) +
         " channels, but got " + std::to_string(C) + " channels instead");
  if (O % groups != 0)
    fail("given groups=" + std::to_string(groups) + ", expected weight to be divisible by " +
         std::to_string(groups) + " at dimension 0, but got weight of size " +
         shape_str(w.sizes()));
  check_affine(bias, O, "bias");
  int64_t OH = (H + 2 * pad[0] - dil[0] * (KH - 1) - 1) / stride[0] + 1;
  int64_t OW = (W + 2 * pad[1] - dil[1] * (KW - 1) - 1) / stride[1] + 1;
  if (H + 2 * pad[0] - dil[0] * (KH - 1) - 1 < 0 || W + 2 * pad[1] - dil[1] * (KW - 1) - 1 < 0)
    fail("calculated output size is too small for input " + shape_str(x.sizes()) + " and kernel " +
         shape_str(w.sizes()));
  Shape out_shape{N, O, OH, OW};
  int64_t patch = checked_numel({CG, KH, KW}), npix = checked_numel({OH, OW});
  if (checked_numel(out_shape) > Tensor::kMaxBytes / 8 ||
      checked_numel({patch, npix}) > Tensor::kMaxBytes / 8)
    fail("convolution of " + shape_str(x.sizes()) + " with " + shape_str(w.sizes()) +
         " is too large");
  std::vector<double> xv = values(x), wv = values(w);
  std::vector<double> bv = bias.defined() ? values(bias) : std::vector<double>();
  std::vector<double> out(static_cast<size_t>(N * O * npix), 0.0), col(size_t(patch * npix));
  int64_t opg = O / groups;
  // Per image and group: out[o, pixel] = sum over (c, kh, kw) of w[o, c, kh, kw] * x[c, ih, iw],
  // as a product of the weights and the unfolded input patches.
  for (int64_t nn = 0; nn < N; ++nn)
    for (int64_t g = 0; g < groups; ++g) {
      im2col(xv.data() + (nn * C + g * CG) * H * W, CG, H, W, KH, KW, OH, OW, stride, pad, dil,
             col.data());
      gemm_kernel(wv.data() + g * opg * patch, col.data(), out.data() + (nn * O + g * opg) * npix,
                  opg, patch, npix);
    }
  if (!bv.empty())
    for (int64_t nn = 0; nn < N; ++nn)
      for (int64_t o = 0; o < O; ++o)
        for (int64_t p = 0; p < npix; ++p) out[size_t((nn * O + o) * npix + p)] += bv[size_t(o)];
  return make(dt, out_shape, out);
}

// 3-D convolution of x [N, C, D, H, W] with w [O, C/groups, KD, KH, KW]: per image and group,
// the unfolded input col[(c, kd, kh, kw), (od, oh, ow)] (zeros in the padding) times the weights.
Tensor conv3d_impl(const Tensor& x, const Tensor& w, const Tensor& bias, Shape stride, Shape pad,
                   Shape dil, int64_t groups, DType dt) {
  if (x.dim() != 5 || w.dim() != 5)
    fail("expected a 5-D input and weight for 3-D convolution, got " + shape_str(x.sizes()) +
         " and " + shape_str(w.sizes()));
  const int64_t N = x.size(0), C = x.size(1), O = w.size(0), CG = w.size(1);
  const int64_t I[3] = {x.size(2), x.size(3), x.size(4)};
  const int64_t K[3] = {w.size(2), w.size(3), w.size(4)};
  if (groups <= 0) fail("non-positive groups is not supported");
  for (int i = 0; i < 3; ++i) {
    if (stride[i] <= 0) fail("non-positive stride is not supported");
    if (pad[i] < 0) fail("negative padding is not supported");
    if (dil[i] <= 0) fail("dilation should be greater than zero");
  }
  if (CG * groups != C)
    fail("given groups=" + std::to_string(groups) + ", weight of size " + shape_str(w.sizes()) +
         ", expected input" + shape_str(x.sizes()) + " to have " + std::to_string(CG * groups) +
         " channels, but got " + std::to_string(C) + " channels instead");
  if (O % groups != 0)
    fail("given groups=" + std::to_string(groups) + ", expected weight to be divisible by " +
         std::to_string(groups) + " at dimension 0, but got weight of size " +
         shape_str(w.sizes()));
  check_affine(bias, O, "bias");
  int64_t OS[3];
  for (int i = 0; i < 3; ++i) {
    int64_t eff = I[i] + 2 * pad[i] - dil[i] * (K[i] - 1) - 1;
    if (eff < 0)
      fail("calculated output size is too small for input " + shape_str(x.sizes()) +
           " and kernel " + shape_str(w.sizes()));
    OS[i] = eff / stride[i] + 1;
  }
  Shape out_shape{N, O, OS[0], OS[1], OS[2]};
  int64_t patch = checked_numel({CG, K[0], K[1], K[2]}),
          npix = checked_numel({OS[0], OS[1], OS[2]});
  if (checked_numel(out_shape) > Tensor::kMaxBytes / 8 ||
      checked_numel({patch, npix}) > Tensor::kMaxBytes / 8)
    fail("convolution of " + shape_str(x.sizes()) + " with " + shape_str(w.sizes()) +
         " is too large");
  std::vector<double> xv = values(x), wv = values(w);
  std::vector<double> bv = bias.defined() ? values(bias) : std::vector<double>();
  std::vector<double> out(static_cast<size_t>(N * O * npix), 0.0), col(size_t(patch * npix));
  const int64_t opg = O / groups, vol = I[0] * I[1] * I[2];
  for (int64_t nn = 0; nn < N; ++nn)
    for (int64_t g = 0; g < groups; ++g) {
      const double* img = xv.data() + (nn * C + g * CG) * vol;
      double* row = col.data();
      for (int64_t c = 0; c < CG; ++c)
        for (int64_t a = 0; a < K[0]; ++a)
          for (int64_t b = 0; b < K[1]; ++b)
            for (int64_t k = 0; k < K[2]; ++k)
              for (int64_t o0 = 0; o0 < OS[0]; ++o0) {
                int64_t i0 = o0 * stride[0] - pad[0] + a * dil[0];
                for (int64_t o1 = 0; o1 < OS[1]; ++o1) {
                  int64_t i1 = o1 * stride[1] - pad[1] + b * dil[1];
                  for (int64_t o2 = 0; o2 < OS[2]; ++o2) {
                    int64_t i2 = o2 * stride[2] - pad[2] + k * dil[2];
                    bool inside =
                        i0 >= 0 && i0 < I[0] && i1 >= 0 && i1 < I[1] && i2 >= 0 && i2 < I[2];
                    *row++ = inside ? img[c * vol + (i0 * I[1] + i1) * I[2] + i2] : 0.0;
                  }
                }
              }
      gemm_kernel(wv.data() + g * opg * patch, col.data(), out.data() + (nn * O + g * opg) * npix,
                  opg, patch, npix);
    }
  if (!bv.empty())
    for (int64_t nn = 0; nn < N; ++nn)
      for (int64_t o = 0; o < O; ++o)
        for (int64_t p = 0; p < npix; ++p) out[size_t((nn * O + o) * npix + p)] += bv[size_t(o)];
  return make(dt, out_shape, out);
}

// A batched convolution of `sp` spatial dims (1-D runs as 2-D with height 1).
Tensor conv_nd(Tensor x, Tensor w, const Tensor& bias, Shape stride, Shape pad, Shape dil,
               int64_t groups, DType dt) {
  if (w.dim() != x.dim())
    fail("expected a " + std::to_string(x.dim()) + "-D weight for a " + std::to_string(x.dim()) +
         "-D input, got " + shape_str(w.sizes()));
  if (x.dim() == 5)
    return conv3d_impl(x, w, bias, expand_param(stride, 3, "stride"),
                       expand_param(pad, 3, "padding"), expand_param(dil, 3, "dilation"), groups,
                       dt);
  bool one_d = x.dim() == 3;
  if (one_d) { // 1-D convolution as 2-D with height 1
    x = unsqueeze_view(x, 2);
    w = unsqueeze_view(w, 2);
    stride = {1, expand_param(stride, 1, "stride")[0]};
    pad = {0, expand_param(pad, 1, "padding")[0]};
    dil = {1, expand_param(dil, 1, "dilation")[0]};
  } else if (x.dim() != 4) {
    fail("only 1-D, 2-D and 3-D convolutions are supported by the reference interpreter, got "
         "input " +
         shape_str(x.sizes()));
  }
  Tensor out =
      conv2d_impl(x, w, bias, expand_param(stride, 2, "stride"), expand_param(pad, 2, "padding"),
                  expand_param(dil, 2, "dilation"), groups, dt);
  if (one_d)
    out = view_of(out, {out.size(0), out.size(1), out.size(3)},
                  {out.stride(0), out.stride(1), out.stride(3)}, 0);
  return out;
}

// conv1d/conv2d/conv3d: a batched or unbatched input of `sp` spatial dims.
Tensors conv_op(const KernelCall& c, int64_t sp, const char* name) {
  Tensor x = c.tensor("input");
  const Tensor& w = c.tensor("weight");
  check_same_dtype(x, w, name);
  if (x.dim() != sp + 1 && x.dim() != sp + 2)
    fail("expected " + std::to_string(sp + 1) + "D (unbatched) or " + std::to_string(sp + 2) +
         "D (batched) input to " + name + ", got " + shape_str(x.sizes()));
  bool unbatched = x.dim() == sp + 1;
  if (unbatched) x = unsqueeze_view(x, 0);
  Tensor out = conv_nd(x, w, c.tensor("bias"), c.arg("stride").ints, c.arg("padding").ints,
                       c.arg("dilation").ints, c.arg("groups").i, c.result_dtype(x.dtype()));
  if (unbatched)
    out = view_of(out, Shape(out.sizes().begin() + 1, out.sizes().end()),
                  Shape(out.strides().begin() + 1, out.strides().end()), 0);
  return {out};
}
Tensors k_conv1d(const KernelCall& c) {
  return conv_op(c, 1, "conv1d");
}
Tensors k_conv2d(const KernelCall& c) {
  return conv_op(c, 2, "conv2d");
}
Tensors k_conv3d(const KernelCall& c) {
  return conv_op(c, 3, "conv3d");
}

// Transposed convolution of a batched [N, C_in, *spatial] input with weight [C_in, C_out/groups,
// *kernel]: each input element scatters x * w into out[o = i * stride - pad + k * dil]; the output
// size is (i - 1) * stride - 2 * pad + dil * (k - 1) + output_padding + 1 per spatial dim.
Tensor conv_transposed(const Tensor& x, const Tensor& w, const Tensor& bias, const Shape& stride_a,
                       const Shape& pad_a, const Shape& dil_a, const Shape& opad_a, int64_t groups,
                       DType dt) {
  const int64_t sp = x.dim() - 2;
  if (sp < 1 || sp > 3 || w.dim() != x.dim())
    fail("transposed convolution expects a batched 1-D, 2-D or 3-D input and a weight of the "
         "same rank, got input " +
         shape_str(x.sizes()) + " and weight " + shape_str(w.sizes()));
  Shape stride = expand_param(stride_a, size_t(sp), "stride");
  Shape pad = expand_param(pad_a, size_t(sp), "padding");
  Shape dil = expand_param(dil_a, size_t(sp), "dilation");
  Shape opad = expand_param(opad_a, size_t(sp), "output_padding");
  const int64_t N = x.size(0), Ci = x.size(1);
  if (groups <= 0 || Ci % groups != 0 || w.size(0) != Ci)
    fail("transposed convolution: weight " + shape_str(w.sizes()) + " does not match input " +
         shape_str(x.sizes()) + " with groups=" + std::to_string(groups));
  const int64_t cig = Ci / groups, cog = w.size(1), Co = cog * groups;
  Shape in(x.sizes().begin() + 2, x.sizes().end()), k(w.sizes().begin() + 2, w.sizes().end());
  Shape out_shape = {N, Co};
  for (int64_t d = 0; d < sp; ++d) {
    int64_t o = (in[size_t(d)] - 1) * stride[size_t(d)] - 2 * pad[size_t(d)] +
                dil[size_t(d)] * (k[size_t(d)] - 1) + opad[size_t(d)] + 1;
    if (o <= 0) fail("transposed convolution: the output size is too small");
    out_shape.push_back(o);
  }
  // Every spatial shape padded to three dims (leading 1s) so one loop nest serves 1-D to 3-D.
  auto three = [&](const Shape& s, size_t from, int64_t fill) {
    Shape r(size_t(3 - sp), fill);
    r.insert(r.end(), s.begin() + int64_t(from), s.end());
    return r;
  };
  Shape I = three(x.sizes(), 2, 1), K = three(w.sizes(), 2, 1), O = three(out_shape, 2, 1);
  Shape St = three(stride, 0, 1), P = three(pad, 0, 0), Dl = three(dil, 0, 1);
  const int64_t in_px = I[0] * I[1] * I[2], k_px = K[0] * K[1] * K[2], out_px = O[0] * O[1] * O[2];
  std::vector<double> xv = values(x), wv = values(w);
  std::vector<double> out(static_cast<size_t>(N * Co * out_px), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ci = 0; ci < Ci; ++ci) {
      const int64_t g = ci / cig;
      for (int64_t p = 0; p < in_px; ++p) {
        const double xval = xv[size_t((n * Ci + ci) * in_px + p)];
        const int64_t i0 = p / (I[1] * I[2]), i1 = (p / I[2]) % I[1], i2 = p % I[2];
        for (int64_t q = 0; q < k_px; ++q) {
          const int64_t k0 = q / (K[1] * K[2]), k1 = (q / K[2]) % K[1], k2 = q % K[2];
          const int64_t o0 = i0 * St[0] - P[0] + k0 * Dl[0], o1 = i1 * St[1] - P[1] + k1 * Dl[1],
                        o2 = i2 * St[2] - P[2] + k2 * Dl[2];
          if (o0 < 0 || o0 >= O[0] || o1 < 0 || o1 >= O[1] || o2 < 0 || o2 >= O[2]) continue;
          const int64_t op = (o0 * O[1] + o1) * O[2] + o2;
          for (int64_t co = 0; co < cog; ++co)
            out[size_t((n * Co + g * cog + co) * out_px + op)] +=
                xval * wv[size_t((ci * cog + co) * k_px + q)];
        }
      }
    }
  if (bias.defined()) {
    check_affine(bias, Co, "bias");
    std::vector<double> bv = values(bias);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t co = 0; co < Co; ++co)
        for (int64_t p = 0; p < out_px; ++p)
          out[size_t((n * Co + co) * out_px + p)] += bv[size_t(co)];
  }
  return make(dt, out_shape, out);
}

Tensors k_convolution(const KernelCall& c) {
  Tensor x = c.tensor("input"), w = c.tensor("weight");
  if (c.arg("transposed").b) {
    check_same_dtype(x, w, "convolution");
    return {conv_transposed(x, w, c.tensor("bias"), c.arg("stride").ints, c.arg("padding").ints,
                            c.arg("dilation").ints, c.arg("output_padding").ints, c.arg("groups").i,
                            c.result_dtype(x.dtype()))};
  }
  check_same_dtype(x, w, "convolution");
  return {conv_nd(x, w, c.tensor("bias"), c.arg("stride").ints, c.arg("padding").ints,
                  c.arg("dilation").ints, c.arg("groups").i, c.result_dtype(x.dtype()))};
}

// ---- Attention ----

// Grouped-query attention: repeats each of t's heads (dim -3) so that it has `heads` of them,
// as repeat_interleave does (result head j is input head j / (heads / t's heads)).
Tensor repeat_heads(const Tensor& t, int64_t heads, const char* what) {
  int64_t r = t.dim(), hk = t.size(r - 3);
  if (hk == heads) return t;
  if (hk == 0 || heads % hk != 0)
    fail("scaled_dot_product_attention: the number of heads in " + std::string(what) + " (" +
         std::to_string(hk) + ") must divide the number of heads in query (" +
         std::to_string(heads) + ")");
  Shape sz = t.sizes(), st = t.strides();
  sz.insert(sz.begin() + (r - 2), heads / hk);
  st.insert(st.begin() + (r - 2), 0);
  Shape out = t.sizes();
  out[size_t(r - 3)] = heads;
  return reshape_impl(view_of(t, sz, st, t.storage_offset()), out);
}

Tensors k_sdpa(const KernelCall& c) {
  const Tensor& q = c.tensor("query");
  Tensor k = c.tensor("key");
  Tensor v = c.tensor("value");
  const Tensor& mask = c.tensor("attn_mask");
  if (c.arg("dropout_p").f != 0)
    fail("scaled_dot_product_attention with dropout_p != 0 is not supported by the reference "
         "interpreter");
  bool causal = c.arg("is_causal").b;
  if (causal && mask.defined())
    fail("scaled_dot_product_attention: explicit attn_mask should not be set when is_causal=True");
  if (q.dim() < 2 || k.dim() < 2 || v.dim() < 2)
    fail("scaled_dot_product_attention expects query, key and value of at least 2 dims");
  check_same_dtype(q, k, "scaled_dot_product_attention");
  check_same_dtype(q, v, "scaled_dot_product_attention");
  if (c.arg("enable_gqa").b && q.dim() >= 3 && k.dim() >= 3 && v.dim() >= 3) {
    k = repeat_heads(k, q.size(q.dim() - 3), "key");
    v = repeat_heads(v, q.size(q.dim() - 3), "value");
  }
  int64_t L = q.size(q.dim() - 2), E = q.size(q.dim() - 1);
  int64_t S = k.size(k.dim() - 2), Ev = v.size(v.dim() - 1);
  if (k.size(k.dim() - 1) != E)
    fail("scaled_dot_product_attention: query has " + std::to_string(E) + " features but key has " +
         std::to_string(k.size(k.dim() - 1)));
  if (v.size(v.dim() - 2) != S)
    fail("scaled_dot_product_attention: key has " + std::to_string(S) +
         " positions but value has " + std::to_string(v.size(v.dim() - 2)));
  Shape batch = broadcast(Shape(q.sizes().begin(), q.sizes().end() - 2),
                          Shape(k.sizes().begin(), k.sizes().end() - 2));
  batch = broadcast(batch, Shape(v.sizes().begin(), v.sizes().end() - 2));
  auto with = [&](Shape tail) {
    Shape s = batch;
    s.insert(s.end(), tail.begin(), tail.end());
    return s;
  };
  // scores = q @ k^T, computed in double for every batch entry.
  std::vector<double> scores =
      gemm(expand_to(q, with({L, E})), expand_to(transpose_last(k), with({E, S})));
  double scale = c.arg("scale").is_none() ? 1.0 / std::sqrt(double(E)) : c.arg("scale").f;
  std::vector<double> madd;
  if (mask.defined()) {
    Tensor mx = expand_to(mask, with({L, S}));
    std::vector<int64_t> off = all_offsets(mx);
    madd.resize(off.size());
    for (size_t i = 0; i < off.size(); ++i) {
      double m = mx.load(off[i]);
      madd[i] = mask.dtype() == DType::Bool ? (m != 0 ? 0.0 : -INFINITY) : m;
    }
  }
  size_t nb = scores.size() / size_t(std::max<int64_t>(L * S, 1));
  if (L * S == 0) nb = size_t(checked_numel(batch));
  std::vector<double> probs(scores.size());
  for (size_t b = 0; b < nb; ++b)
    for (int64_t i = 0; i < L; ++i) {
      size_t row = (b * size_t(L) + size_t(i)) * size_t(S);
      double mxv = -INFINITY;
      for (int64_t j = 0; j < S; ++j) {
        double s = scores[row + size_t(j)] * scale;
        if (!madd.empty()) s += madd[row + size_t(j)];
        if (causal && j > i) s = -INFINITY;
        scores[row + size_t(j)] = s;
        mxv = std::isnan(s) || std::isnan(mxv) ? NAN : std::max(mxv, s);
      }
      // PyTorch's math path uses _safe_softmax: a fully masked row gives zeros, not NaN.
      double sum = 0;
      for (int64_t j = 0; j < S; ++j) sum += std::exp(scores[row + size_t(j)] - mxv);
      for (int64_t j = 0; j < S; ++j)
        probs[row + size_t(j)] =
            mxv == -INFINITY ? 0.0 : std::exp(scores[row + size_t(j)] - mxv) / sum;
    }
  // out = probs @ v
  Tensor pt = make(DType::F64, with({L, S}), probs);
  std::vector<double> out = gemm(pt, expand_to(v, with({S, Ev})));
  return {make(c.result_dtype(q.dtype()), with({L, Ev}), out)};
}

// ---- Distances ----

// The p-norm of a difference vector accumulated one |d| at a time: p = 0 counts the non-zeros,
// p = inf takes the max, else sum |d|^p then the 1/p power (p = 1, 2 without pow, as PyTorch).
struct PNorm {
  double p, acc = 0;
  void add(double d) {
    d = std::fabs(d);
    if (p == 0)
      acc += d != 0;
    else if (std::isinf(p))
      acc = std::max(acc, d);
    else if (p == 1)
      acc += d;
    else if (p == 2)
      acc += d * d;
    else
      acc += std::pow(d, p);
  }
  double result() const {
    if (p == 0 || p == 1 || std::isinf(p)) return acc;
    if (p == 2) return std::sqrt(acc);
    return std::pow(acc, 1 / p);
  }
};

// _cdist_forward: out[..., i, j] = ||x1[..., i, :] - x2[..., j, :]||_p (batch dims broadcast),
// in double.
Tensors k_cdist_forward(const KernelCall& c) {
  const Tensor& x1 = c.tensor("x1");
  const Tensor& x2 = c.tensor("x2");
  double p = c.arg("p").f;
  if (x1.dim() < 2 || x2.dim() < 2 || x1.size(x1.dim() - 1) != x2.size(x2.dim() - 1))
    fail("_cdist_forward: x1 and x2 must be at least 2-D with the same last dim, got " +
         shape_str(x1.sizes()) + " and " + shape_str(x2.sizes()));
  if (!(p >= 0)) fail("_cdist_forward: p must be non-negative");
  Shape batch = broadcast(Shape(x1.sizes().begin(), x1.sizes().end() - 2),
                          Shape(x2.sizes().begin(), x2.sizes().end() - 2));
  const int64_t P = x1.size(x1.dim() - 2), R = x2.size(x2.dim() - 2), M = x1.size(x1.dim() - 1);
  Shape s1 = batch, s2 = batch, out = batch;
  s1.insert(s1.end(), {P, M});
  s2.insert(s2.end(), {R, M});
  out.insert(out.end(), {P, R});
  std::vector<double> a = values(expand_to(x1, s1)), b = values(expand_to(x2, s2));
  const int64_t B = checked_numel(batch);
  std::vector<double> r(static_cast<size_t>(B * P * R));
  for (int64_t n = 0; n < B; ++n)
    for (int64_t i = 0; i < P; ++i)
      for (int64_t j = 0; j < R; ++j) {
        PNorm acc{p};
        for (int64_t k = 0; k < M; ++k)
          acc.add(a[size_t((n * P + i) * M + k)] - b[size_t((n * R + j) * M + k)]);
        r[size_t((n * P + i) * R + j)] = acc.result();
      }
  return {make(c.result_dtype(x1.dtype()), out, r)};
}

// _pdist_forward: the p-norm distances of the rows i < j of a 2-D input, in double.
Tensors k_pdist_forward(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  double p = c.arg("p").f;
  if (x.dim() != 2) fail("_pdist_forward expects a 2-D input, got " + shape_str(x.sizes()));
  if (!(p >= 0)) fail("_pdist_forward: p must be non-negative");
  const int64_t N = x.size(0), M = x.size(1);
  std::vector<double> a = values(x), r;
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = i + 1; j < N; ++j) {
      PNorm acc{p};
      for (int64_t k = 0; k < M; ++k) acc.add(a[size_t(i * M + k)] - a[size_t(j * M + k)]);
      r.push_back(acc.result());
    }
  return {make(c.result_dtype(x.dtype()), {int64_t(r.size())}, r)};
}

// ---- im2col / col2im ----

struct Blocks {
  Shape k, d, p, s;
  int64_t oh, ow;
};
Blocks blocks_of(const KernelCall& c, int64_t H, int64_t W, const char* op) {
  Blocks b{expand_param(c.arg("kernel_size").ints, 2, "kernel_size"),
           expand_param(c.arg("dilation").ints, 2, "dilation"),
           expand_param(c.arg("padding").ints, 2, "padding"),
           expand_param(c.arg("stride").ints, 2, "stride"),
           0,
           0};
  for (size_t i = 0; i < 2; ++i)
    if (b.k[i] <= 0 || b.d[i] <= 0 || b.p[i] < 0 || b.s[i] <= 0)
      fail(std::string(op) + ": bad kernel_size, dilation, padding or stride");
  b.oh = resample::pool_out_size(H, b.k[0], b.p[0], b.s[0], b.d[0], false);
  b.ow = resample::pool_out_size(W, b.k[1], b.p[1], b.s[1], b.d[1], false);
  if (b.oh < 1 || b.ow < 1) fail(std::string(op) + ": no sliding block fits the input");
  return b;
}

// im2col: column (c * kh + i) * kw + j, block oh * OW + ow holds x[c, oh*sh - ph + i*dh,
// ow*sw - pw + j*dw] (0 in the padding). col2im (add = true) adds the columns back.
void im2col_planes(const Blocks& b, int64_t C, int64_t H, int64_t W, double* img, double* col,
                   bool add) {
  int64_t L = b.oh * b.ow;
  for (int64_t ch = 0; ch < C; ++ch)
    for (int64_t i = 0; i < b.k[0]; ++i)
      for (int64_t j = 0; j < b.k[1]; ++j) {
        int64_t row = (ch * b.k[0] + i) * b.k[1] + j;
        for (int64_t oh = 0; oh < b.oh; ++oh)
          for (int64_t ow = 0; ow < b.ow; ++ow) {
            int64_t h = oh * b.s[0] - b.p[0] + i * b.d[0], w = ow * b.s[1] - b.p[1] + j * b.d[1];
            bool in = h >= 0 && h < H && w >= 0 && w < W;
            double* cv = col + row * L + oh * b.ow + ow;
            if (add) {
              if (in) img[(ch * H + h) * W + w] += *cv;
            } else {
              *cv = in ? img[(ch * H + h) * W + w] : 0.0;
            }
          }
      }
}

Tensors k_im2col(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  if (x.dim() != 3 && x.dim() != 4)
    fail("im2col expects a 3-D or 4-D input, got " + shape_str(x.sizes()));
  const int64_t N = x.dim() == 4 ? x.size(0) : 1, C = x.size(x.dim() - 3), H = x.size(x.dim() - 2),
                W = x.size(x.dim() - 1);
  Blocks b = blocks_of(c, H, W, "im2col");
  const int64_t rows = C * b.k[0] * b.k[1], L = b.oh * b.ow;
  std::vector<double> xv = values(x), out(size_t(N * rows * L));
  for (int64_t n = 0; n < N; ++n)
    im2col_planes(b, C, H, W, xv.data() + n * C * H * W, out.data() + n * rows * L, false);
  Shape os(x.sizes().begin(), x.sizes().end() - 3);
  os.insert(os.end(), {rows, L});
  return {make(c.result_dtype(x.dtype()), os, out)};
}

Tensors k_col2im(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  if (x.dim() != 2 && x.dim() != 3)
    fail("col2im expects a 2-D or 3-D input, got " + shape_str(x.sizes()));
  Shape os = expand_param(c.arg("output_size").ints, 2, "output_size");
  Blocks b = blocks_of(c, os[0], os[1], "col2im");
  const int64_t N = x.dim() == 3 ? x.size(0) : 1, rows = x.size(x.dim() - 2),
                L = x.size(x.dim() - 1);
  if (rows % (b.k[0] * b.k[1]) != 0 || L != b.oh * b.ow)
    fail("col2im: input " + shape_str(x.sizes()) + " does not match kernel_size and output_size");
  const int64_t C = rows / (b.k[0] * b.k[1]), H = os[0], W = os[1];
  std::vector<double> xv = values(x), out(size_t(N * C * H * W), 0.0);
  for (int64_t n = 0; n < N; ++n)
    im2col_planes(b, C, H, W, out.data() + n * C * H * W, xv.data() + n * rows * L, true);
  Shape shape(x.sizes().begin(), x.sizes().end() - 2);
  shape.insert(shape.end(), {C, H, W});
  return {make(c.result_dtype(x.dtype()), shape, out)};
}

// ---- Decompositions and solves through LAPACK (runtime/kernels/lapack.h) ----
// Each matrix of a batch is copied to a column-major double buffer (what LAPACK takes), factored
// or solved with the routine PyTorch's CPU path uses (getrf, potrf, geqrf + orgqr, syevd, gesdd,
// sytrf), and written back row-major; the interpreter lays results out with the recorded
// (column-major) strides. `info` outputs are int32; the ops without `_ex` raise instead.

// A batch of matrices [batch..., r, c] as row-major doubles, with its batch shape.
struct Mats {
  Shape batch;
  int64_t r = 0, c = 0;
  std::vector<double> v;
  int64_t count() const { return checked_numel(batch); }
  const double* at(int64_t b) const { return v.data() + b * r * c; }
};

Mats mats_of(const Tensor& t, const char* op, const char* name) {
  if (t.dim() < 2)
    fail(std::string(op) + ": " + name + " must have at least 2 dimensions, got " +
         shape_str(t.sizes()));
  Mats m;
  m.batch.assign(t.sizes().begin(), t.sizes().end() - 2);
  m.r = t.size(t.dim() - 2);
  m.c = t.size(t.dim() - 1);
  m.v = values(t);
  return m;
}

Mats mats_expanded(const Tensor& t, const Shape& batch) {
  Shape s = batch;
  s.push_back(t.size(t.dim() - 2));
  s.push_back(t.size(t.dim() - 1));
  return mats_of(expand_to(t, s), "linalg", "operand");
}

void check_square(const Mats& m, const char* op, const char* name) {
  if (m.r != m.c)
    fail(std::string(op) + ": " + name + " must be batches of square matrices, but they are " +
         std::to_string(m.r) + " by " + std::to_string(m.c) + " matrices");
}

int lapack_int(int64_t v) {
  if (v > std::numeric_limits<int>::max())
    fail("matrix too large for LAPACK: " + std::to_string(v));
  return int(v);
}

// Row-major [r, c] -> column-major with leading dimension ld >= r.
std::vector<double> to_cm(const double* rm, int64_t r, int64_t c, int64_t ld) {
  std::vector<double> cm(size_t(std::max<int64_t>(ld, 1) * c), 0.0);
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) cm[size_t(i + j * ld)] = rm[i * c + j];
  return cm;
}

// Column-major [r, c] (leading dimension ld) appended row-major to `out`.
void append_rm(const double* cm, int64_t r, int64_t c, int64_t ld, std::vector<double>& out) {
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) out.push_back(cm[i + j * ld]);
}

Shape shape_with(Shape batch, std::initializer_list<int64_t> tail) {
  batch.insert(batch.end(), tail);
  return batch;
}

std::string batch_prefix(const Mats& m, int64_t b) {
  return m.batch.empty() ? "" : "(Batch element " + std::to_string(b) + "): ";
}

// LU with partial pivoting (getrf) of one row-major [r, c] matrix: the column-major factors,
// 1-based pivots and LAPACK's info.
struct LU {
  std::vector<double> a;
  std::vector<int> piv;
  int info = 0;
};
LU lu_factor(const double* rm, int64_t r, int64_t c) {
  LU f;
  f.a = to_cm(rm, r, c, std::max<int64_t>(r, 1));
  f.piv.assign(size_t(std::min(r, c)), 0);
  if (r == 0 || c == 0) return f;
  int m = lapack_int(r), n = lapack_int(c), lda = m;
  dgetrf_(&m, &n, f.a.data(), &lda, f.piv.data(), &f.info);
  return f;
}

// Solves op(A) X = B in place (B column-major [n, nrhs]) with the factors of A.
void lu_solve_cm(const LU& f, int64_t n, double* b, int64_t nrhs, bool trans) {
  if (n == 0 || nrhs == 0) return;
  int nn = lapack_int(n), k = lapack_int(nrhs), info = 0;
  dgetrs_(trans ? "T" : "N", &nn, &k, f.a.data(), &nn, f.piv.data(), b, &nn, &info, 1);
}

// Appends the factors (row-major) and pivots of f to the LU / pivots outputs.
void append_lu(const LU& f, int64_t r, int64_t c, std::vector<double>& lu,
               std::vector<double>& piv) {
  append_rm(f.a.data(), r, c, std::max<int64_t>(r, 1), lu);
  for (int p : f.piv) piv.push_back(p);
}

// For each index of the broadcast batch `to`, the index of the batch `from` it reads.
std::vector<int64_t> batch_index(const Shape& from, const Shape& to) {
  Shape st(to.size(), 0);
  int64_t s = 1;
  for (size_t i = from.size(); i-- > 0;) {
    size_t o = to.size() - from.size() + i;
    st[o] = from[i] == 1 ? 0 : s;
    s *= from[i];
  }
  return dim_offsets(to, st);
}

// linalg_inv_ex: getrf, then getrs against the identity (PyTorch's linalg_solve_ex(A, I)).
Tensors k_linalg_inv_ex(const KernelCall& c) {
  const Tensor& A = c.tensor("A");
  Mats a = mats_of(A, "linalg.inv", "A");
  check_square(a, "linalg.inv", "A");
  const int64_t n = a.r, B = a.count();
  std::vector<double> out, info;
  for (int64_t b = 0; b < B; ++b) {
    LU f = lu_factor(a.at(b), n, n);
    std::vector<double> x(static_cast<size_t>(n * n), 0.0);
    for (int64_t i = 0; i < n; ++i) x[size_t(i * n + i)] = 1;
    lu_solve_cm(f, n, x.data(), n, false);
    append_rm(x.data(), n, n, n, out);
    info.push_back(f.info);
    if (f.info > 0 && c.arg("check_errors").b)
      fail("linalg.inv: " + batch_prefix(a, b) + "The diagonal element " + std::to_string(f.info) +
           " is zero, the inversion could not be completed because the input matrix is "
           "singular.");
  }
  return {make(c.result_dtype(A.dtype()), A.sizes(), out), make(DType::I32, a.batch, info)};
}

// _linalg_det and _linalg_slogdet: getrf; det = product of U's diagonal, negated per swap.
struct DetParts {
  std::vector<double> det, sign, logabs, lu, piv;
};
DetParts det_parts(const Tensor& A, const char* op) {
  Mats a = mats_of(A, op, "A");
  check_square(a, op, "A");
  DetParts d;
  for (int64_t b = 0; b < a.count(); ++b) {
    LU f = lu_factor(a.at(b), a.r, a.r);
    double det = 1, sign = 1, logabs = 0;
    for (int64_t i = 0; i < a.r; ++i) {
      double u = f.a[size_t(i + i * a.r)];
      bool swap = f.piv[size_t(i)] != i + 1;
      det *= swap ? -u : u;
      sign *= (u < 0) != swap ? -1 : 1;
      if (u == 0) sign = 0;
      logabs += std::log(std::abs(u));
    }
    d.det.push_back(det);
    d.sign.push_back(sign);
    d.logabs.push_back(logabs);
    append_lu(f, a.r, a.r, d.lu, d.piv);
  }
  return d;
}

Tensors k_linalg_det(const KernelCall& c) {
  const Tensor& A = c.tensor("A");
  DetParts d = det_parts(A, "linalg.det");
  Shape batch(A.sizes().begin(), A.sizes().end() - 2);
  DType dt = c.result_dtype(A.dtype());
  return {make(dt, batch, d.det), make(dt, A.sizes(), d.lu),
          make(DType::I32, Shape(A.sizes().begin(), A.sizes().end() - 1), d.piv)};
}

Tensors k_linalg_slogdet(const KernelCall& c) {
  const Tensor& A = c.tensor("A");
  DetParts d = det_parts(A, "linalg.slogdet");
  Shape batch(A.sizes().begin(), A.sizes().end() - 2);
  DType dt = c.result_dtype(A.dtype());
  return {make(dt, batch, d.sign), make(dt, batch, d.logabs), make(dt, A.sizes(), d.lu),
          make(DType::I32, Shape(A.sizes().begin(), A.sizes().end() - 1), d.piv)};
}

// Solves A X = B (left) or X A = B (right, as A^T X^T = B^T) for a broadcast batch, with the
// factors `fs` of A's own batch. B is the (already unsqueezed) right-hand side.
std::vector<double> solve_with_lu(const std::vector<LU>& fs, const Shape& a_batch, int64_t n,
                                  const Tensor& B, bool left, bool adjoint, Shape* out_shape) {
  Shape bb(B.sizes().begin(), B.sizes().end() - 2);
  Shape batch = broadcast(a_batch, bb);
  Mats bm = mats_expanded(B, batch);
  std::vector<int64_t> ai = batch_index(a_batch, batch);
  std::vector<double> out;
  for (int64_t b = 0; b < bm.count(); ++b) {
    const LU& f = fs[size_t(ai[size_t(b)])];
    if (left) {
      std::vector<double> x = to_cm(bm.at(b), bm.r, bm.c, std::max<int64_t>(n, 1));
      lu_solve_cm(f, n, x.data(), bm.c, adjoint);
      append_rm(x.data(), bm.r, bm.c, std::max<int64_t>(n, 1), out);
    } else {
      // X op(A) = B  <=>  op(A)^T X^T = B^T: X^T column-major is X row-major.
      std::vector<double> xt(bm.at(b), bm.at(b) + bm.r * bm.c);
      lu_solve_cm(f, n, xt.data(), bm.r, !adjoint);
      out.insert(out.end(), xt.begin(), xt.end());
    }
  }
  *out_shape = shape_with(batch, {bm.r, bm.c});
  return out;
}

Tensors k_linalg_solve_ex(const KernelCall& c) {
  const Tensor& A = c.tensor("A");
  const Tensor& B0 = c.tensor("B");
  const bool left = c.arg("left").b;
  Mats a = mats_of(A, "linalg.solve", "A");
  check_square(a, "linalg.solve", "A");
  Shape a_rows(A.sizes().begin(), A.sizes().end() - 1);
  const bool vec = B0.dim() == 1 || (A.dim() - 1 == B0.dim() && B0.sizes() == a_rows);
  Tensor B = vec ? unsqueeze_view(B0, B0.dim()) : B0;
  if (B.dim() < 2 || (left ? B.size(B.dim() - 2) : B.size(B.dim() - 1)) != a.r)
    fail("linalg.solve: Incompatible shapes of A and B for the equation " +
         std::string(left ? "AX = B" : "XA = B") + " (" + shape_str(A.sizes()) + " and " +
         shape_str(B0.sizes()) + ")");
  std::vector<LU> fs;
  std::vector<double> lu, piv, info;
  for (int64_t b = 0; b < a.count(); ++b) {
    fs.push_back(lu_factor(a.at(b), a.r, a.r));
    append_lu(fs.back(), a.r, a.r, lu, piv);
    info.push_back(fs.back().info);
    if (fs.back().info > 0 && c.arg("check_errors").b)
      fail("torch.linalg.solve: " + batch_prefix(a, b) +
           "The solver failed because the input matrix is singular.");
  }
  Shape shape;
  std::vector<double> x = solve_with_lu(fs, a.batch, a.r, B, left, false, &shape);
  if (vec) shape.pop_back();
  DType dt = c.result_dtype(A.dtype());
  return {make(c.result_dtype(B0.dtype()), shape, x), make(dt, A.sizes(), lu),
          make(DType::I32, a_rows, piv), make(DType::I32, a.batch, info)};
}

Tensors k_linalg_lu_factor_ex(const KernelCall& c) {
  const Tensor& A = c.tensor("A");
  if (!c.arg("pivot").b)
    fail("linalg.lu_factor: LU without pivoting is not implemented on the CPU");
  Mats a = mats_of(A, "torch.linalg.lu_factor_ex", "A");
  std::vector<double> lu, piv, info;
  for (int64_t b = 0; b < a.count(); ++b) {
    LU f = lu_factor(a.at(b), a.r, a.c);
    append_lu(f, a.r, a.c, lu, piv);
    info.push_back(f.info);
    if (f.info > 0 && c.arg("check_errors").b)
      fail("torch.linalg.lu_factor_ex: " + batch_prefix(a, b) + "U[" + std::to_string(f.info) +
           ", " + std::to_string(f.info) +
           "] is zero and using it on lu_solve would result in a division by zero. If you still "
           "want to perform the factorization, consider calling linalg.lu(A, pivot) or "
           "linalg.lu_factor_ex(A, pivot)");
  }
  return {make(c.result_dtype(A.dtype()), A.sizes(), lu),
          make(DType::I32, shape_with(a.batch, {std::min(a.r, a.c)}), piv),
          make(DType::I32, a.batch, info)};
}

// P, L, U of one column-major factorization (ld = r) with 1-based pivots: A = P L U.
void unpack_lu(const double* lu, const int* piv, int64_t r, int64_t c, bool data, bool pivots,
               std::vector<double>& P, std::vector<double>& L, std::vector<double>& U) {
  const int64_t k = std::min(r, c), ld = std::max<int64_t>(r, 1);
  if (pivots) {
    std::vector<int64_t> perm(static_cast<size_t>(r));
    std::iota(perm.begin(), perm.end(), 0);
    for (int64_t i = 0; i < k; ++i) {
      int64_t p = piv[i] - 1;
      if (p < 0 || p >= r)
        fail("torch.lu_unpack: pivot " + std::to_string(piv[i]) + " is out of range [1, " +
             std::to_string(r) + "]");
      std::swap(perm[size_t(i)], perm[size_t(p)]);
    }
    std::vector<double> pm(static_cast<size_t>(r * r), 0.0);
    for (int64_t i = 0; i < r; ++i) pm[size_t(perm[size_t(i)] * r + i)] = 1;
    P.insert(P.end(), pm.begin(), pm.end());
  }
  if (!data) return;
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < k; ++j) L.push_back(i == j ? 1 : i > j ? lu[i + j * ld] : 0);
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < c; ++j) U.push_back(j >= i ? lu[i + j * ld] : 0);
}

Tensors k_linalg_lu(const KernelCall& c) {
  const Tensor& A = c.tensor("A");
  const bool pivot = c.arg("pivot").b;
  if (!pivot) fail("linalg.lu: LU without pivoting is not implemented on the CPU");
  Mats a = mats_of(A, "linalg.lu", "A");
  const int64_t k = std::min(a.r, a.c);
  std::vector<double> P, L, U;
  for (int64_t b = 0; b < a.count(); ++b) {
    LU f = lu_factor(a.at(b), a.r, a.c);
    unpack_lu(f.a.data(), f.piv.data(), a.r, a.c, true, true, P, L, U);
  }
  DType dt = c.result_dtype(A.dtype());
  return {make(dt, shape_with(a.batch, {a.r, a.r}), P), make(dt, shape_with(a.batch, {a.r, k}), L),
          make(dt, shape_with(a.batch, {k, a.c}), U)};
}

std::vector<int> int_values(const Tensor& t) {
  std::vector<double> v = values(t);
  return std::vector<int>(v.begin(), v.end());
}

Tensors k_lu_unpack(const KernelCall& c) {
  const Tensor& LUt = c.tensor("LU_data");
  Mats a = mats_of(LUt, "torch.lu_unpack", "LU_data");
  const int64_t k = std::min(a.r, a.c);
  std::vector<int> piv = int_values(c.tensor("LU_pivots"));
  if (int64_t(piv.size()) != a.count() * k)
    fail("torch.lu_unpack: LU_pivots must hold min(m, n) pivots per matrix of LU_data");
  const bool data = c.arg("unpack_data").b, pivots = c.arg("unpack_pivots").b;
  std::vector<double> P, L, U;
  for (int64_t b = 0; b < a.count(); ++b) {
    std::vector<double> cm = to_cm(a.at(b), a.r, a.c, std::max<int64_t>(a.r, 1));
    unpack_lu(cm.data(), piv.data() + b * k, a.r, a.c, data, pivots, P, L, U);
  }
  DType dt = c.result_dtype(LUt.dtype());
  return {pivots ? make(dt, shape_with(a.batch, {a.r, a.r}), P) : make(dt, {0}, {}),
          data ? make(dt, shape_with(a.batch, {a.r, k}), L) : make(dt, {0}, {}),
          data ? make(dt, shape_with(a.batch, {k, a.c}), U) : make(dt, {0}, {})};
}

Tensors k_linalg_lu_solve(const KernelCall& c) {
  const Tensor& LUt = c.tensor("LU");
  const Tensor& B = c.tensor("B");
  Mats a = mats_of(LUt, "linalg.lu_solve", "LU");
  check_square(a, "linalg.lu_solve", "LU");
  std::vector<int> piv = int_values(c.tensor("pivots"));
  if (int64_t(piv.size()) != a.count() * a.r)
    fail("linalg.lu_solve: Number of pivots per batch should be same as the dimension of the "
         "matrix");
  std::vector<LU> fs;
  for (int64_t b = 0; b < a.count(); ++b) {
    LU f;
    f.a = to_cm(a.at(b), a.r, a.r, std::max<int64_t>(a.r, 1));
    f.piv.assign(piv.begin() + b * a.r, piv.begin() + (b + 1) * a.r);
    fs.push_back(std::move(f));
  }
  Shape shape;
  std::vector<double> x =
      solve_with_lu(fs, a.batch, a.r, B, c.arg("left").b, c.arg("adjoint").b, &shape);
  return {make(c.result_dtype(B.dtype()), shape, x)};
}

// Cholesky (potrf, lower) of each matrix; `upper` returns L^T. Info > 0: not positive-definite.
Tensors k_linalg_cholesky_ex(const KernelCall& c) {
  const Tensor& A = c.tensor("self");
  const bool upper = c.arg("upper").b;
  Mats a = mats_of(A, "linalg.cholesky", "A");
  check_square(a, "linalg.cholesky", "A");
  const int64_t n = a.r;
  std::vector<double> out, info;
  for (int64_t b = 0; b < a.count(); ++b) {
    std::vector<double> cm = to_cm(a.at(b), n, n, std::max<int64_t>(n, 1));
    int nn = lapack_int(n), lda = std::max(nn, 1), inf = 0;
    if (n > 0) dpotrf_("L", &nn, cm.data(), &lda, &inf, 1);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double l = upper ? cm[size_t(j + i * n)] : cm[size_t(i + j * n)];
        out.push_back((upper ? j >= i : i >= j) ? l : 0);
      }
    info.push_back(inf);
    if (inf > 0 && c.arg("check_errors").b)
      fail("linalg.cholesky: " + batch_prefix(a, b) +
           "The factorization could not be completed because the input is not positive-definite "
           "(the leading minor of order " +
           std::to_string(inf) + " is not positive-definite).");
  }
  return {make(c.result_dtype(A.dtype()), A.sizes(), out), make(DType::I32, a.batch, info)};
}

// Solves op(T) X = B by substitution for triangular T (row-major [n, n]) and row-major B
// [n, k]: what BLAS trsm computes (a zero diagonal gives inf/nan, no error).
void tri_solve(const double* T, int64_t n, bool upper, bool trans, bool unit, double* B,
               int64_t k) {
  // op(T)[i][j]
  auto t = [&](int64_t i, int64_t j) { return trans ? T[j * n + i] : T[i * n + j]; };
  const bool up = upper != trans; // op(T) is upper triangular
  for (int64_t col = 0; col < k; ++col)
    for (int64_t s = 0; s < n; ++s) {
      int64_t i = up ? n - 1 - s : s;
      double acc = B[i * k + col];
      if (up)
        for (int64_t j = i + 1; j < n; ++j) acc -= t(i, j) * B[j * k + col];
      else
        for (int64_t j = 0; j < i; ++j) acc -= t(i, j) * B[j * k + col];
      B[i * k + col] = unit ? acc : acc / t(i, i);
    }
}

// Broadcast batches of the triangular A ([.., n, n]) and B; solves in place.
struct TriSolve {
  Mats a, b;
};
TriSolve tri_operands(const Tensor& A, const Tensor& B, const char* op) {
  if (A.dim() < 2 || B.dim() < 2)
    fail(std::string(op) + ": expected A and B with at least 2 dimensions, got " +
         shape_str(A.sizes()) + " and " + shape_str(B.sizes()));
  Shape batch = broadcast(Shape(A.sizes().begin(), A.sizes().end() - 2),
                          Shape(B.sizes().begin(), B.sizes().end() - 2));
  TriSolve s{mats_expanded(A, batch), mats_expanded(B, batch)};
  check_square(s.a, op, "A");
  return s;
}

Tensors k_triangular_solve(const KernelCall& c) {
  const Tensor& B = c.tensor("self");
  const Tensor& A = c.tensor("A");
  TriSolve s = tri_operands(A, B, "triangular_solve");
  if (s.b.r != s.a.r)
    fail("triangular_solve: Incompatible matrix sizes for A " + shape_str(A.sizes()) + " and b " +
         shape_str(B.sizes()));
  for (int64_t i = 0; i < s.b.count(); ++i)
    tri_solve(s.a.at(i), s.a.r, c.arg("upper").b, c.arg("transpose").b, c.arg("unitriangular").b,
              s.b.v.data() + i * s.b.r * s.b.c, s.b.c);
  return {make(c.result_dtype(B.dtype()), shape_with(s.b.batch, {s.b.r, s.b.c}), s.b.v),
          make(c.result_dtype(A.dtype()), shape_with(s.a.batch, {s.a.r, s.a.r}), s.a.v)};
}

Tensors k_linalg_solve_triangular(const KernelCall& c) {
  const Tensor& A = c.tensor("self");
  const Tensor& B = c.tensor("B");
  const bool left = c.arg("left").b;
  TriSolve s = tri_operands(A, B, "linalg.solve_triangular");
  if ((left ? s.b.r : s.b.c) != s.a.r)
    fail("linalg.solve_triangular: Incompatible shapes of A and B for the equation " +
         std::string(left ? "AX = B" : "XA = B") + " (" + shape_str(A.sizes()) + " and " +
         shape_str(B.sizes()) + ")");
  std::vector<double> out;
  for (int64_t i = 0; i < s.b.count(); ++i) {
    const int64_t r = s.b.r, k = s.b.c;
    std::vector<double> x(s.b.at(i), s.b.at(i) + r * k);
    if (left) {
      tri_solve(s.a.at(i), s.a.r, c.arg("upper").b, false, c.arg("unitriangular").b, x.data(), k);
    } else {
      // X A = B  <=>  A^T X^T = B^T
      std::vector<double> xt(static_cast<size_t>(r * k));
      for (int64_t p = 0; p < r; ++p)
        for (int64_t q = 0; q < k; ++q) xt[size_t(q * r + p)] = x[size_t(p * k + q)];
      tri_solve(s.a.at(i), s.a.r, c.arg("upper").b, true, c.arg("unitriangular").b, xt.data(), r);
      for (int64_t p = 0; p < r; ++p)
        for (int64_t q = 0; q < k; ++q) x[size_t(p * k + q)] = xt[size_t(q * r + p)];
    }
    out.insert(out.end(), x.begin(), x.end());
  }
  return {make(c.result_dtype(B.dtype()), shape_with(s.b.batch, {s.b.r, s.b.c}), out)};
}

// cholesky_solve: potrs with the factor in `input2` (lower, or upper when asked).
Tensors k_cholesky_solve(const KernelCall& c) {
  const Tensor& B = c.tensor("self");
  const Tensor& L = c.tensor("input2");
  TriSolve s = tri_operands(L, B, "cholesky_solve");
  if (s.b.r != s.a.r)
    fail("cholesky_solve: Incompatible matrix sizes for A " + shape_str(L.sizes()) + " and b " +
         shape_str(B.sizes()));
  const int64_t n = s.a.r, k = s.b.c;
  std::vector<double> out;
  for (int64_t i = 0; i < s.b.count(); ++i) {
    std::vector<double> a = to_cm(s.a.at(i), n, n, std::max<int64_t>(n, 1));
    std::vector<double> x = to_cm(s.b.at(i), n, k, std::max<int64_t>(n, 1));
    int nn = lapack_int(n), kk = lapack_int(k), ld = std::max(nn, 1), info = 0;
    if (n > 0 && k > 0)
      dpotrs_(c.arg("upper").b ? "U" : "L", &nn, &kk, a.data(), &ld, x.data(), &ld, &info, 1);
    append_rm(x.data(), n, k, std::max<int64_t>(n, 1), out);
  }
  return {make(c.result_dtype(B.dtype()), shape_with(s.b.batch, {n, k}), out)};
}

// cholesky_inverse: (L L^T)^-1 from the factor (potri), both triangles filled.
Tensors k_cholesky_inverse(const KernelCall& c) {
  const Tensor& L = c.tensor("self");
  const bool upper = c.arg("upper").b;
  Mats a = mats_of(L, "cholesky_inverse", "input");
  check_square(a, "cholesky_inverse", "input");
  const int64_t n = a.r;
  std::vector<double> out;
  for (int64_t b = 0; b < a.count(); ++b) {
    std::vector<double> cm = to_cm(a.at(b), n, n, std::max<int64_t>(n, 1));
    int nn = lapack_int(n), ld = std::max(nn, 1), info = 0;
    if (n > 0) dpotri_(upper ? "U" : "L", &nn, cm.data(), &ld, &info, 1);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        // potri fills the triangle it was given: (i, j) there, (j, i) mirrored.
        bool stored = upper ? j >= i : i >= j;
        out.push_back(stored ? cm[size_t(i + j * n)] : cm[size_t(j + i * n)]);
      }
  }
  return {make(c.result_dtype(L.dtype()), L.sizes(), out)};
}

// geqrf of one row-major matrix: the column-major factored matrix and tau.
void qr_factor(const double* rm, int64_t r, int64_t c, std::vector<double>& a,
               std::vector<double>& tau, int64_t ld_cols) {
  const int64_t ld = std::max<int64_t>(r, 1);
  a = to_cm(rm, r, c, ld);
  a.resize(size_t(ld * std::max(c, ld_cols)), 0.0);
  tau.assign(size_t(std::min(r, c)), 0.0);
  if (r == 0 || c == 0) return;
  int m = lapack_int(r), n = lapack_int(c), lda = int(ld), info = 0, lwork = -1;
  double q = 0;
  dgeqrf_(&m, &n, a.data(), &lda, tau.data(), &q, &lwork, &info);
  lwork = std::max(1, int(q));
  std::vector<double> work(static_cast<size_t>(lwork));
  dgeqrf_(&m, &n, a.data(), &lda, tau.data(), work.data(), &lwork, &info);
}

// orgqr: the first `cols` columns of Q from k reflectors (a column-major, ld = r).
void qr_q(std::vector<double>& a, int64_t r, int64_t cols, const std::vector<double>& tau,
          int64_t k) {
  if (r == 0 || cols == 0) return;
  int m = lapack_int(r), n = lapack_int(cols), kk = lapack_int(k), lda = m, info = 0, lwork = -1;
  double q = 0;
  dorgqr_(&m, &n, &kk, a.data(), &lda, tau.data(), &q, &lwork, &info);
  lwork = std::max(1, int(q));
  std::vector<double> work(static_cast<size_t>(lwork));
  dorgqr_(&m, &n, &kk, a.data(), &lda, tau.data(), work.data(), &lwork, &info);
}

Tensors k_linalg_qr(const KernelCall& c) {
  const Tensor& A = c.tensor("A");
  const std::string& mode = c.arg("mode").s;
  if (mode != "reduced" && mode != "complete" && mode != "r")
    fail("qr received unrecognized mode '" + mode +
         "' but expected one of 'reduced' (default), 'r', or 'complete'");
  Mats a = mats_of(A, "linalg.qr", "A");
  const int64_t m = a.r, n = a.c, k = std::min(m, n);
  const bool complete = mode == "complete";
  const int64_t qc = complete ? m : k, rr = complete ? m : k;
  std::vector<double> Q, R;
  for (int64_t b = 0; b < a.count(); ++b) {
    std::vector<double> f, tau;
    qr_factor(a.at(b), m, n, f, tau, qc);
    const int64_t ld = std::max<int64_t>(m, 1);
    for (int64_t i = 0; i < rr; ++i)
      for (int64_t j = 0; j < n; ++j) R.push_back(j >= i && i < m ? f[size_t(i + j * ld)] : 0);
    if (mode == "r") continue;
    qr_q(f, m, qc, tau, k);
    append_rm(f.data(), m, qc, ld, Q);
  }
  DType dt = c.result_dtype(A.dtype());
  return {mode == "r" ? make(dt, {0}, {}) : make(dt, shape_with(a.batch, {m, qc}), Q),
          make(dt, shape_with(a.batch, {rr, n}), R)};
}

Tensors k_geqrf(const KernelCall& c) {
  const Tensor& A = c.tensor("self");
  Mats a = mats_of(A, "geqrf", "input");
  std::vector<double> out, taus;
  for (int64_t b = 0; b < a.count(); ++b) {
    std::vector<double> f, tau;
    qr_factor(a.at(b), a.r, a.c, f, tau, 0);
    append_rm(f.data(), a.r, a.c, std::max<int64_t>(a.r, 1), out);
    taus.insert(taus.end(), tau.begin(), tau.end());
  }
  DType dt = c.result_dtype(A.dtype());
  return {make(dt, A.sizes(), out), make(dt, shape_with(a.batch, {std::min(a.r, a.c)}), taus)};
}

Tensors k_householder_product(const KernelCall& c) {
  const Tensor& A = c.tensor("input");
  Mats a = mats_of(A, "torch.linalg.householder_product", "input");
  std::vector<double> tau = values(c.tensor("tau"));
  const int64_t k = c.tensor("tau").size(c.tensor("tau").dim() - 1);
  if (a.r < a.c || k > a.c || int64_t(tau.size()) != a.count() * k)
    fail("torch.linalg.householder_product: expected input.shape[-2] >= input.shape[-1] >= "
         "tau.shape[-1] and matching batch dimensions, got " +
         shape_str(A.sizes()) + " and " + shape_str(c.tensor("tau").sizes()));
  std::vector<double> out;
  for (int64_t b = 0; b < a.count(); ++b) {
    std::vector<double> f = to_cm(a.at(b), a.r, a.c, std::max<int64_t>(a.r, 1));
    std::vector<double> t(tau.begin() + b * k, tau.begin() + (b + 1) * k);
    qr_q(f, a.r, a.c, t, k);
    append_rm(f.data(), a.r, a.c, std::max<int64_t>(a.r, 1), out);
  }
  return {make(c.result_dtype(A.dtype()), A.sizes(), out)};
}

Tensors k_ormqr(const KernelCall& c) {
  const Tensor& A = c.tensor("self");
  const Tensor& C = c.tensor("input3");
  const bool left = c.arg("left").b, trans = c.arg("transpose").b;
  Mats a = mats_of(A, "torch.ormqr", "input");
  Mats cm = mats_of(C, "torch.ormqr", "other");
  std::vector<double> tau = values(c.tensor("input2"));
  const int64_t k = c.tensor("input2").size(c.tensor("input2").dim() - 1);
  if (cm.count() != a.count() || int64_t(tau.size()) != a.count() * k ||
      (left ? cm.r : cm.c) != a.r || k > a.r)
    fail("torch.ormqr: input, tau and other do not match: " + shape_str(A.sizes()) + ", " +
         shape_str(c.tensor("input2").sizes()) + " and " + shape_str(C.sizes()));
  std::vector<double> out;
  for (int64_t b = 0; b < a.count(); ++b) {
    std::vector<double> af = to_cm(a.at(b), a.r, a.c, std::max<int64_t>(a.r, 1));
    std::vector<double> cf = to_cm(cm.at(b), cm.r, cm.c, std::max<int64_t>(cm.r, 1));
    if (cm.r > 0 && cm.c > 0 && k > 0) {
      int m = lapack_int(cm.r), n = lapack_int(cm.c), kk = lapack_int(k);
      int lda = std::max(lapack_int(a.r), 1), ldc = std::max(m, 1), info = 0, lwork = -1;
      double q = 0;
      const char* side = left ? "L" : "R";
      const char* tr = trans ? "T" : "N";
      dormqr_(side, tr, &m, &n, &kk, af.data(), &lda, tau.data() + b * k, cf.data(), &ldc, &q,
              &lwork, &info, 1, 1);
      lwork = std::max(1, int(q));
      std::vector<double> work(static_cast<size_t>(lwork));
      dormqr_(side, tr, &m, &n, &kk, af.data(), &lda, tau.data() + b * k, cf.data(), &ldc,
              work.data(), &lwork, &info, 1, 1);
    }
    append_rm(cf.data(), cm.r, cm.c, std::max<int64_t>(cm.r, 1), out);
  }
  return {make(c.result_dtype(C.dtype()), C.sizes(), out)};
}

// _linalg_eigh: syevd, eigenvalues ascending, eigenvectors as columns.
Tensors k_linalg_eigh(const KernelCall& c) {
  const Tensor& A = c.tensor("A");
  const std::string& uplo = c.arg("UPLO").s;
  const bool vecs = c.arg("compute_v").b;
  Mats a = mats_of(A, "linalg.eigh", "A");
  check_square(a, "linalg.eigh", "A");
  const int64_t n = a.r;
  std::vector<double> w, V;
  for (int64_t b = 0; b < a.count(); ++b) {
    std::vector<double> cm = to_cm(a.at(b), n, n, std::max<int64_t>(n, 1));
    std::vector<double> ev(static_cast<size_t>(n));
    if (n > 0) {
      int nn = lapack_int(n), lda = nn, info = 0, lwork = -1, liwork = -1, iq = 0;
      double q = 0;
      const char* jobz = vecs ? "V" : "N";
      const char* ul = (uplo == "U" || uplo == "u") ? "U" : "L";
      dsyevd_(jobz, ul, &nn, cm.data(), &lda, ev.data(), &q, &lwork, &iq, &liwork, &info, 1, 1);
      lwork = std::max(1, int(q));
      liwork = std::max(1, iq);
      std::vector<double> work(static_cast<size_t>(lwork));
      std::vector<int> iwork(static_cast<size_t>(liwork));
      dsyevd_(jobz, ul, &nn, cm.data(), &lda, ev.data(), work.data(), &lwork, iwork.data(), &liwork,
              &info, 1, 1);
      if (info > 0)
        fail("linalg.eigh: " + batch_prefix(a, b) +
             "The algorithm failed to converge because "
             "the input matrix is ill-conditioned or has too many repeated eigenvalues (error "
             "code: " +
             std::to_string(info) + ").");
    }
    w.insert(w.end(), ev.begin(), ev.end());
    if (vecs) append_rm(cm.data(), n, n, std::max<int64_t>(n, 1), V);
  }
  DType dt = c.result_dtype(A.dtype());
  return {make(dt, shape_with(a.batch, {n}), w), vecs ? make(dt, A.sizes(), V) : make(dt, {0}, {})};
}

// _linalg_svd: gesdd ('A' full, 'S' reduced, 'N' values only); an empty matrix gives identity
// U / Vh when full matrices are asked for, as PyTorch does.
Tensors k_linalg_svd(const KernelCall& c) {
  const Tensor& A = c.tensor("A");
  const bool full = c.arg("full_matrices").b, uv = c.arg("compute_uv").b;
  if (!c.arg("driver").is_none())
    fail("torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with "
         "cuSOLVER backend");
  Mats a = mats_of(A, "linalg.svd", "A");
  const int64_t m = a.r, n = a.c, k = std::min(m, n);
  const int64_t uc = full ? m : k, vr = full ? n : k;
  std::vector<double> U, S, Vh;
  for (int64_t b = 0; b < a.count(); ++b) {
    std::vector<double> s(static_cast<size_t>(k)), u(size_t(std::max<int64_t>(m * uc, 1)), 0.0),
        vt(size_t(std::max<int64_t>(vr * n, 1)), 0.0);
    if (k == 0) {
      for (int64_t i = 0; i < std::min(m, uc); ++i) u[size_t(i + i * m)] = 1;
      for (int64_t i = 0; i < std::min(vr, n); ++i) vt[size_t(i + i * vr)] = 1;
    } else {
      std::vector<double> cm = to_cm(a.at(b), m, n, m);
      int mm = lapack_int(m), nn = lapack_int(n), lda = mm, ldu = mm,
          ldvt = std::max<int>(1, int(vr));
      int info = 0, lwork = -1;
      std::vector<int> iwork(static_cast<size_t>(8 * k));
      double q = 0;
      const char* jobz = !uv ? "N" : full ? "A" : "S";
      dgesdd_(jobz, &mm, &nn, cm.data(), &lda, s.data(), u.data(), &ldu, vt.data(), &ldvt, &q,
              &lwork, iwork.data(), &info, 1);
      lwork = std::max(1, int(q));
      std::vector<double> work(static_cast<size_t>(lwork));
      dgesdd_(jobz, &mm, &nn, cm.data(), &lda, s.data(), u.data(), &ldu, vt.data(), &ldvt,
              work.data(), &lwork, iwork.data(), &info, 1);
      if (info > 0)
        fail("linalg.svd: " + batch_prefix(a, b) +
             "The algorithm failed to converge because "
             "the input matrix is ill-conditioned or has too many repeated singular values "
             "(error code: " +
             std::to_string(info) + ").");
    }
    S.insert(S.end(), s.begin(), s.end());
    if (uv) {
      append_rm(u.data(), m, uc, std::max<int64_t>(m, 1), U);
      append_rm(vt.data(), vr, n, std::max<int64_t>(vr, 1), Vh);
    }
  }
  DType dt = c.result_dtype(A.dtype());
  if (!uv) return {make(dt, {0}, {}), make(dt, shape_with(a.batch, {k}), S), make(dt, {0}, {})};
  return {make(dt, shape_with(a.batch, {m, uc}), U), make(dt, shape_with(a.batch, {k}), S),
          make(dt, shape_with(a.batch, {vr, n}), Vh)};
}

// LDL^T (sytrf, lower) with LAPACK's pivots; the strict upper triangle is zeroed.
Tensors k_linalg_ldl_factor_ex(const KernelCall& c) {
  const Tensor& A = c.tensor("self");
  Mats a = mats_of(A, "torch.linalg.ldl_factor_ex", "A");
  check_square(a, "torch.linalg.ldl_factor_ex", "A");
  const int64_t n = a.r;
  std::vector<double> LD, piv, info;
  for (int64_t b = 0; b < a.count(); ++b) {
    std::vector<double> cm = to_cm(a.at(b), n, n, std::max<int64_t>(n, 1));
    std::vector<int> ip(static_cast<size_t>(n), 0);
    int inf = 0;
    if (n > 0) {
      int nn = lapack_int(n), lda = nn, lwork = -1;
      double q = 0;
      dsytrf_("L", &nn, cm.data(), &lda, ip.data(), &q, &lwork, &inf, 1);
      lwork = std::max(1, int(q));
      std::vector<double> work(static_cast<size_t>(lwork));
      dsytrf_("L", &nn, cm.data(), &lda, ip.data(), work.data(), &lwork, &inf, 1);
    }
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) LD.push_back(j <= i ? cm[size_t(i + j * n)] : 0);
    piv.insert(piv.end(), ip.begin(), ip.end());
    info.push_back(inf);
    if (inf > 0 && c.arg("check_errors").b)
      fail("torch.linalg.ldl_factor_ex: " + batch_prefix(a, b) +
           "The factorization could not "
           "be completed because the input is singular (D[" +
           std::to_string(inf) + ", " + std::to_string(inf) + "] is zero).");
  }
  return {make(c.result_dtype(A.dtype()), A.sizes(), LD),
          make(DType::I32, shape_with(a.batch, {n}), piv), make(DType::I32, a.batch, info)};
}

Tensors k_linalg_ldl_solve(const KernelCall& c) {
  const Tensor& LDt = c.tensor("LD");
  const Tensor& B = c.tensor("B");
  Mats ld = mats_of(LDt, "torch.linalg.ldl_solve", "LD");
  check_square(ld, "torch.linalg.ldl_solve", "LD");
  std::vector<int> piv = int_values(c.tensor("pivots"));
  const int64_t n = ld.r;
  if (int64_t(piv.size()) != ld.count() * n)
    fail("torch.linalg.ldl_solve: expected LD.shape[-1] pivots per matrix");
  if (B.dim() < 2 || B.size(B.dim() - 2) != n)
    fail("torch.linalg.ldl_solve: Incompatible shapes of LD and B: " + shape_str(LDt.sizes()) +
         " and " + shape_str(B.sizes()));
  Shape batch = broadcast(ld.batch, Shape(B.sizes().begin(), B.sizes().end() - 2));
  Mats bm = mats_expanded(B, batch);
  std::vector<int64_t> li = batch_index(ld.batch, batch);
  std::vector<double> out;
  for (int64_t b = 0; b < bm.count(); ++b) {
    int64_t src = li[size_t(b)];
    std::vector<double> a = to_cm(ld.at(src), n, n, std::max<int64_t>(n, 1));
    std::vector<double> x = to_cm(bm.at(b), n, bm.c, std::max<int64_t>(n, 1));
    if (n > 0 && bm.c > 0) {
      int nn = lapack_int(n), k = lapack_int(bm.c), info = 0;
      dsytrs_("L", &nn, &k, a.data(), &nn, piv.data() + src * n, x.data(), &nn, &info, 1);
      if (info < 0)
        fail("torch.linalg.ldl_solve: invalid pivots (LAPACK info " + std::to_string(info) + ")");
    }
    append_rm(x.data(), n, bm.c, std::max<int64_t>(n, 1), out);
  }
  return {make(c.result_dtype(B.dtype()), shape_with(batch, {n, bm.c}), out)};
}

// matrix_exp by scaling and squaring: exp(A) = exp(A / 2^s)^(2^s) with ||A / 2^s||_1 <= 1/2,
// the inner exponential a Taylor series summed until its terms vanish in double.
Tensors k_linalg_matrix_exp(const KernelCall& c) {
  const Tensor& A = c.tensor("self");
  Mats a = mats_of(A, "linalg.matrix_exp", "A");
  check_square(a, "linalg.matrix_exp", "A");
  const int64_t n = a.r;
  auto matmul = [n](const std::vector<double>& x, const std::vector<double>& y) {
    std::vector<double> r(static_cast<size_t>(n * n), 0.0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t p = 0; p < n; ++p)
        for (int64_t j = 0; j < n; ++j)
          r[size_t(i * n + j)] += x[size_t(i * n + p)] * y[size_t(p * n + j)];
    return r;
  };
  std::vector<double> out;
  for (int64_t b = 0; b < a.count(); ++b) {
    std::vector<double> x(a.at(b), a.at(b) + n * n);
    double norm = 0;
    for (int64_t j = 0; j < n; ++j) {
      double col = 0;
      for (int64_t i = 0; i < n; ++i) col += std::abs(x[size_t(i * n + j)]);
      norm = std::max(norm, col);
    }
    int s = 0;
    if (std::isfinite(norm) && norm > 0.5)
      s = std::min(1000, int(std::ceil(std::log2(norm / 0.5))));
    const double scale = std::ldexp(1.0, -s);
    for (double& v : x) v *= scale;
    std::vector<double> e(static_cast<size_t>(n * n), 0.0), term(size_t(n * n), 0.0);
    for (int64_t i = 0; i < n; ++i) e[size_t(i * n + i)] = term[size_t(i * n + i)] = 1;
    for (int k = 1; k <= 30; ++k) {
      term = matmul(term, x);
      double big = 0;
      for (double& v : term) v /= k, big = std::max(big, std::abs(v));
      for (size_t i = 0; i < e.size(); ++i) e[i] += term[i];
      if (big == 0 || !std::isfinite(big)) break;
    }
    for (int i = 0; i < s; ++i) e = matmul(e, e);
    out.insert(out.end(), e.begin(), e.end());
  }
  return {make(c.result_dtype(A.dtype()), A.sizes(), out)};
}

const OpTable<KernelFn>::Row kLinalgKernels[] = {
    {OpId::_linalg_det, k_linalg_det},
    {OpId::_linalg_eigh, k_linalg_eigh},
    {OpId::_linalg_slogdet, k_linalg_slogdet},
    {OpId::_linalg_solve_ex, k_linalg_solve_ex},
    {OpId::_linalg_svd, k_linalg_svd},
    {OpId::cholesky_inverse, k_cholesky_inverse},
    {OpId::cholesky_solve, k_cholesky_solve},
    {OpId::geqrf, k_geqrf},
    {OpId::linalg_cholesky_ex, k_linalg_cholesky_ex},
    {OpId::linalg_householder_product, k_householder_product},
    {OpId::linalg_inv_ex, k_linalg_inv_ex},
    {OpId::linalg_ldl_factor_ex, k_linalg_ldl_factor_ex},
    {OpId::linalg_ldl_solve, k_linalg_ldl_solve},
    {OpId::linalg_lu, k_linalg_lu},
    {OpId::linalg_lu_factor_ex, k_linalg_lu_factor_ex},
    {OpId::linalg_lu_solve, k_linalg_lu_solve},
    {OpId::linalg_matrix_exp, k_linalg_matrix_exp},
    {OpId::linalg_qr, k_linalg_qr},
    {OpId::linalg_solve_triangular, k_linalg_solve_triangular},
    {OpId::lu_unpack, k_lu_unpack},
    {OpId::ormqr, k_ormqr},
    {OpId::triangular_solve, k_triangular_solve},
    {OpId::_cdist_forward, k_cdist_forward},
    {OpId::_pdist_forward, k_pdist_forward},
    {OpId::col2im, k_col2im},
    {OpId::im2col, k_im2col},
    {OpId::addmm, k_addmm},
    {OpId::bmm, k_bmm},
    {OpId::conv1d, k_conv1d},
    {OpId::conv2d, k_conv2d},
    {OpId::conv3d, k_conv3d},
    {OpId::convolution, k_convolution},
    {OpId::linear, k_linear},
    {OpId::matmul, k_matmul},
    {OpId::mm, k_mm},
    {OpId::scaled_dot_product_attention, k_sdpa},
};

} // namespace

std::span<const OpTable<KernelFn>::Row> linalg_kernels() {
  return kLinalgKernels;
}

} // namespace fxc::kernel_detail
