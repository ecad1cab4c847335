// Meta functions of pooling: max_pool2d/3d (with and without indices), adaptive_avg_pool1d/2d/3d,
// with PyTorch's output-size rules (padding, dilation, ceil mode) and channels_last layouts;
// upsampling (nearest, linear 1-D/2-D/3-D, bicubic) and grid_sampler_2d.
#include "frontend/meta/meta_util.h"
#include "frontend/resample.h"

namespace fxc::meta_detail {
namespace {

struct PoolGeom {
  Sizes out;
  bool channels_last = false;
};

/// max_pool2d/3d: `sp` spatial dims after one or two leading dims.
PoolGeom max_pool_geom(const Ctx& c, size_t sp = 2) {
  const TensorMeta& x = c.tensor("self");
  const std::string name = "max_pool" + std::to_string(sp) + "d";
  const int64_t n = int64_t(sp);
  const Sizes& k0 = c.ints("kernel_size");
  if (k0.size() != 1 && k0.size() != sp)
    c.fail(name + ": kernel_size must either be a single int, or a tuple of " +
           (sp == 2 ? std::string("two") : std::to_string(sp)) + " ints");
  Sizes k = c.ints_n("kernel_size", sp);
  Sizes st = c.ints("stride").empty() ? k : c.ints_n("stride", sp);
  Sizes pad = c.ints_n("padding", sp), dil = c.ints_n("dilation", sp);
  bool ceil_mode = c.bool_("ceil_mode");
  if (x.dim() != n + 1 && x.dim() != n + 2)
    c.fail(name + " expects a " + std::to_string(sp + 1) + "D or " + std::to_string(sp + 2) +
           "D (batch mode) input, but " + c.desc("self"));
  for (int64_t d = x.dim() == n + 2 ? 1 : 0; d < x.dim(); ++d)
    if (x.sizes[size_t(d)] == 0) c.fail(name + " expects a non-empty input, but " + c.desc("self"));
  for (size_t i = 0; i < sp; ++i) {
    if (k[i] <= 0) c.fail("kernel size should be greater than zero, but got " + join(k));
    if (st[i] <= 0) c.fail("stride should be greater than zero, but got " + join(st));
    if (dil[i] <= 0) c.fail("dilation should be greater than zero, but got " + join(dil));
    if (pad[i] < 0 || pad[i] > k[i] / 2)
      c.fail("pad should be at most half of the kernel size, but got padding " + join(pad) +
             " and kernel_size " + join(k));
  }
  PoolGeom r;
  r.out.assign(x.sizes.begin(), x.sizes.end() - n);
  for (size_t i = 0; i < sp; ++i) {
    __int128 in = x.sizes[x.sizes.size() - sp + i];
    __int128 num =
        in + 2 * __int128(pad[i]) - __int128(dil[i]) * (k[i] - 1) - 1 + (ceil_mode ? st[i] - 1 : 0);
    __int128 o = (num >= 0 ? num / st[i] : -((-num + st[i] - 1) / st[i])) + 1; // div_rtn
    if (ceil_mode && (o - 1) * st[i] >= in + pad[i]) --o;
    if (o < 1 || o > INT64_MAX)
      c.fail("given input " + join(x.sizes) + ", the calculated output size is too small");
    r.out.push_back(int64_t(o));
  }
  r.channels_last = sp == 2 && x.dim() == 4 && suggests_channels_last(x);
  return r;
}

TensorMeta pool_out(DType dt, const PoolGeom& p, Device dev) {
  return p.channels_last ? make_strided(dt, p.out, channels_last_strides(p.out), dev)
                         : make(dt, p.out, dev);
}

Metas max_pool2d(const Graph& g, const Node& n) {
  Ctx c(g, n);
  PoolGeom p = max_pool_geom(c);
  const TensorMeta& x = c.tensor("self");
  return {pool_out(x.dtype, p, x.device)};
}

Metas max_pool2d_with_indices(const Graph& g, const Node& n) {
  Ctx c(g, n);
  PoolGeom p = max_pool_geom(c);
  const TensorMeta& x = c.tensor("self");
  return {pool_out(x.dtype, p, x.device), pool_out(DType::I64, p, x.device)};
}

Metas adaptive_avg_pool2d(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  Sizes os = c.ints_n("output_size", 2);
  if (os[0] < 0 || os[1] < 0)
    c.fail("adaptive_avg_pool2d: elements of output_size must be >= 0, got " + join(os));
  if (x.dim() != 3 && x.dim() != 4)
    c.fail("adaptive_avg_pool2d(): expected a 3D or 4D tensor, but " + c.desc("self"));
  for (int64_t d = 1; d < x.dim(); ++d)
    if (x.sizes[size_t(d)] == 0)
      c.fail("adaptive_avg_pool2d(): expected input to have non-zero size for non-batch "
             "dimensions, but " +
             c.desc("self"));
  PoolGeom p;
  p.out.assign(x.sizes.begin(), x.sizes.end() - 2);
  p.out.push_back(os[0]);
  p.out.push_back(os[1]);
  p.channels_last = x.dim() == 4 && suggests_channels_last(x);
  if (os[0] == 1 && os[1] == 1 && p.channels_last) // mean(-1, -2) restrided to {c, 1, c, c}
    return {make_strided(x.dtype, p.out, {x.sizes[1], 1, x.sizes[1], x.sizes[1]}, x.device)};
  return {pool_out(x.dtype, p, x.device)};
}

Metas max_pool3d(const Graph& g, const Node& n) {
  Ctx c(g, n);
  PoolGeom p = max_pool_geom(c, 3);
  const TensorMeta& x = c.tensor("self");
  return {pool_out(x.dtype, p, x.device)};
}

Metas max_pool3d_with_indices(const Graph& g, const Node& n) {
  Ctx c(g, n);
  PoolGeom p = max_pool_geom(c, 3);
  const TensorMeta& x = c.tensor("self");
  return {pool_out(x.dtype, p, x.device), pool_out(DType::I64, p, x.device)};
}

// adaptive_avg_pool1d/3d: `sp` spatial dims after one or two leading dims (PyTorch's checks).
Metas adaptive_avg_pool_nd(const Graph& g, const Node& n, size_t sp, bool max = false) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  const std::string name =
      std::string(max ? "adaptive_max_pool" : "adaptive_avg_pool") + std::to_string(sp) + "d";
  const Sizes& os0 = c.ints("output_size");
  if (os0.size() != sp)
    c.fail(name + ": output_size must be " + std::to_string(sp) + " ints, got " + join(os0));
  Sizes os = c.ints_n("output_size", sp);
  for (int64_t o : os)
    if (o < 0) c.fail(name + ": elements of output_size must be >= 0, got " + join(os));
  if (x.dim() != int64_t(sp) + 1 && x.dim() != int64_t(sp) + 2)
    c.fail(name + "(): expected a " + std::to_string(sp + 1) + "D or " + std::to_string(sp + 2) +
           "D tensor, but " + c.desc("self"));
  for (int64_t d = 1; d < x.dim(); ++d)
    if (x.sizes[size_t(d)] == 0)
      c.fail(name + "(): expected input to have non-zero size for non-batch dimensions, but " +
             c.desc("self"));
  Sizes out(x.sizes.begin(), x.sizes.end() - int64_t(sp));
  out.insert(out.end(), os.begin(), os.end());
  if (max) return {make(x.dtype, out, x.device), make(DType::I64, out, x.device)};
  return {make(x.dtype, out, x.device)};
}
// adaptive_max_pool1d/2d/3d: the values and their flat indices in the input's spatial dims.
Metas adaptive_max_pool1d(const Graph& g, const Node& n) {
  return adaptive_avg_pool_nd(g, n, 1, true);
}
Metas adaptive_max_pool2d(const Graph& g, const Node& n) {
  return adaptive_avg_pool_nd(g, n, 2, true);
}
Metas adaptive_max_pool3d(const Graph& g, const Node& n) {
  return adaptive_avg_pool_nd(g, n, 3, true);
}
Metas adaptive_avg_pool1d(const Graph& g, const Node& n) {
  return adaptive_avg_pool_nd(g, n, 1);
}
Metas adaptive_avg_pool3d(const Graph& g, const Node& n) {
  return adaptive_avg_pool_nd(g, n, 3);
}

// avg_pool1d/2d/3d: `sp` spatial dims after one or two leading dims.
Metas avg_pool(const Graph& g, const Node& n, size_t sp) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  const std::string name = "avg_pool" + std::to_string(sp) + "d";
  const Sizes& k0 = c.ints("kernel_size");
  if (k0.size() != 1 && k0.size() != sp)
    c.fail(name + ": kernel_size must either be a single int, or a tuple of " + std::to_string(sp) +
           " ints");
  Sizes k = resample::spatial_param(k0, sp);
  Sizes st = c.ints("stride").empty() ? k : resample::spatial_param(c.ints("stride"), sp);
  Sizes pad = resample::spatial_param(c.ints("padding"), sp);
  if (st.size() != sp || pad.size() != sp)
    c.fail(name + ": stride and padding must be a single int or a tuple of " + std::to_string(sp) +
           " ints");
  bool ceil_mode = c.bool_("ceil_mode");
  if (c.has_arg("divisor_override") && c.has("divisor_override") && c.int_("divisor_override") == 0)
    c.fail(name + ": divisor must be not zero");
  if (x.dim() != int64_t(sp) + 1 && x.dim() != int64_t(sp) + 2)
    c.fail(name + " expects a " + std::to_string(sp + 1) + "D or " + std::to_string(sp + 2) +
           "D (batch mode) input, but " + c.desc("self"));
  for (int64_t d = x.dim() == int64_t(sp) + 2 ? 1 : 0; d < x.dim(); ++d)
    if (x.sizes[size_t(d)] == 0) c.fail(name + " expects a non-empty input, but " + c.desc("self"));
  PoolGeom r;
  r.out.assign(x.sizes.begin(), x.sizes.end() - int64_t(sp));
  for (size_t i = 0; i < sp; ++i) {
    if (k[i] <= 0) c.fail("kernel size should be greater than zero, but got " + join(k));
    if (st[i] <= 0) c.fail("stride should be greater than zero, but got " + join(st));
    if (pad[i] < 0 || pad[i] > k[i] / 2)
      c.fail("pad should be at most half of the kernel size, but got padding " + join(pad) +
             " and kernel_size " + join(k));
    int64_t in = x.sizes[x.sizes.size() - sp + i];
    int64_t o = resample::pool_out_size(in, k[i], pad[i], st[i], 1, ceil_mode);
    if (o < 1) c.fail("given input " + join(x.sizes) + ", the calculated output size is too small");
    r.out.push_back(o);
  }
  r.channels_last = sp == 2 && x.dim() == 4 && suggests_channels_last(x);
  return {pool_out(x.dtype, r, x.device)};
}
Metas avg_pool1d(const Graph& g, const Node& n) {
  return avg_pool(g, n, 1);
}
Metas avg_pool2d(const Graph& g, const Node& n) {
  return avg_pool(g, n, 2);
}
Metas avg_pool3d(const Graph& g, const Node& n) {
  return avg_pool(g, n, 3);
}

// upsample_nearest2d / _upsample_nearest_exact2d / upsample_bilinear2d / upsample_bicubic2d
// (sp = 2), upsample_linear1d (sp = 1) and upsample_trilinear3d (sp = 3), both overloads.
Metas upsample_nd(const Graph& g, const Node& n, size_t sp) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor(c.has_arg("input") ? "input" : "self");
  if (x.dim() != int64_t(sp) + 2)
    c.fail("upsampling expects a " + std::to_string(sp + 2) + "D input (N, C, " +
           (sp == 1   ? std::string("W")
            : sp == 2 ? std::string("H, W")
                      : std::string("D, H, W")) +
           "), but the input is " + format_meta(x));
  if (n.target.find("nearest") == std::string::npos && !is_floating(x.dtype))
    c.fail("upsampling needs a floating-point input, but " + format_meta(x));
  resample::Upsample u;
  std::string err = resample::upsample_args(n, Sizes(x.sizes.begin() + 2, x.sizes.end()), u);
  if (!err.empty()) c.fail(err);
  Sizes out = {x.sizes[0], x.sizes[1]};
  out.insert(out.end(), u.out.begin(), u.out.end());
  c.check_sizes(out);
  if (sp == 2 && suggests_channels_last(x))
    return {make_strided(x.dtype, out, channels_last_strides(out), x.device)};
  return {make(x.dtype, out, x.device)};
}
Metas upsample1d(const Graph& g, const Node& n) {
  return upsample_nd(g, n, 1);
}
Metas upsample2d(const Graph& g, const Node& n) {
  return upsample_nd(g, n, 2);
}
Metas upsample3d(const Graph& g, const Node& n) {
  return upsample_nd(g, n, 3);
}

// grid_sampler_2d: input (N, C, H, W) sampled at grid (N, Ho, Wo, 2) -> (N, C, Ho, Wo), with
// PyTorch's checks (grid_sampler_checks in GridSampler.cpp).
Metas grid_sampler_2d(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("input");
  const TensorMeta& grid = c.tensor("grid");
  if (x.dtype != grid.dtype)
    c.fail("grid_sampler(): expected input and grid to have same dtype, but " + c.desc("input") +
           " and " + c.desc("grid"));
  if (!is_floating(x.dtype))
    c.fail("grid_sampler(): expected a floating-point input, but " + c.desc("input"));
  if (x.dim() != 4 || grid.dim() != 4)
    c.fail("grid_sampler(): expected 4D input and grid, but " + c.desc("input") + " and " +
           c.desc("grid"));
  if (x.sizes[0] != grid.sizes[0])
    c.fail("grid_sampler(): expected grid and input to have same batch size, but " +
           c.desc("input") + " and " + c.desc("grid"));
  if (grid.sizes[3] != 2)
    c.fail("grid_sampler(): expected grid to have size 2 in last dimension, but " + c.desc("grid"));
  if (x.sizes[2] == 0 || x.sizes[3] == 0)
    c.fail("grid_sampler(): expected input to have non-empty spatial dimensions, but " +
           c.desc("input"));
  if (x.device != grid.device)
    c.fail("grid_sampler(): expected input and grid on the same device, but " + c.desc("input") +
           " and " + c.desc("grid"));
  int64_t mode = c.int_("interpolation_mode"), pad = c.int_("padding_mode");
  if (mode < 0 || mode > 2)
    c.fail("grid_sampler(): interpolation_mode must be 0 (bilinear), 1 (nearest) or 2 (bicubic), "
           "got " +
           std::to_string(mode));
  if (pad < 0 || pad > 2)
    c.fail("grid_sampler(): padding_mode must be 0 (zeros), 1 (border) or 2 (reflection), got " +
           std::to_string(pad));
  Sizes out = {x.sizes[0], x.sizes[1], grid.sizes[1], grid.sizes[2]};
  c.check_sizes(out);
  return {make(x.dtype, out, x.device)};
}

const OpTable<MetaFn>::Row kPoolMeta[] = {
    {OpId::_adaptive_avg_pool2d, guarded<adaptive_avg_pool2d>},
    {OpId::_adaptive_avg_pool3d, guarded<adaptive_avg_pool3d>},
    {OpId::_upsample_nearest_exact2d, guarded<upsample2d>},
    {OpId::_upsample_nearest_exact2d_vec, guarded<upsample2d>},
    {OpId::adaptive_avg_pool1d, guarded<adaptive_avg_pool1d>},
    {OpId::adaptive_avg_pool2d, guarded<adaptive_avg_pool2d>},
    {OpId::adaptive_avg_pool3d, guarded<adaptive_avg_pool3d>},
    {OpId::adaptive_max_pool1d, guarded<adaptive_max_pool1d>},
    {OpId::adaptive_max_pool2d, guarded<adaptive_max_pool2d>},
    {OpId::adaptive_max_pool3d, guarded<adaptive_max_pool3d>},
    {OpId::avg_pool1d, guarded<avg_pool1d>},
    {OpId::avg_pool2d, guarded<avg_pool2d>},
    {OpId::avg_pool3d, guarded<avg_pool3d>},
    {OpId::max_pool2d, guarded<max_pool2d>},
    {OpId::max_pool2d_with_indices, guarded<max_pool2d_with_indices>},
    {OpId::max_pool3d, guarded<max_pool3d>},
    {OpId::max_pool3d_with_indices, guarded<max_pool3d_with_indices>},
    {OpId::grid_sampler_2d, guarded<grid_sampler_2d>},
    {OpId::upsample_bicubic2d, guarded<upsample2d>},
    {OpId::upsample_bicubic2d_vec, guarded<upsample2d>},
    {OpId::upsample_bilinear2d, guarded<upsample2d>},
    {OpId::upsample_bilinear2d_vec, guarded<upsample2d>},
    {OpId::upsample_nearest2d, guarded<upsample2d>},
    {OpId::upsample_linear1d, guarded<upsample1d>},
    {OpId::upsample_linear1d_vec, guarded<upsample1d>},
    {OpId::upsample_nearest2d_vec, guarded<upsample2d>},
    {OpId::upsample_trilinear3d, guarded<upsample3d>},
    {OpId::upsample_trilinear3d_vec, guarded<upsample3d>},
};

} // namespace

std::span<const OpTable<MetaFn>::Row> pool_meta() {
  return kPoolMeta;
}

} // namespace fxc::meta_detail
