// Reference kernels of linear algebra, convolution and attention: mm, bmm, addmm, matmul and
// linear over one double GEMM, 1-D to 3-D convolution as im2col and GEMM, and
// scaled_dot_product_attention (with grouped-query heads), _cdist_forward, _pdist_forward, im2col
// and col2im.
#include "runtime/kernels/kernel_util.h"

#include "frontend/resample.h"

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
  std::vector<double> av(size_t(n * k)), bv(size_t(k * m)), out(boff_a.size() * size_t(n * m), 0.0);
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
  std::vector<double> out(size_t(N * O * npix), 0.0), col(size_t(patch * npix));
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
  std::vector<double> out(size_t(N * O * npix), 0.0), col(size_t(patch * npix));
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
  std::vector<double> out(size_t(N * Co * out_px), 0.0);
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
  std::vector<double> r(size_t(B * P * R));
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

const OpTable<KernelFn>::Row kLinalgKernels[] = {
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
