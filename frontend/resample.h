// Index arithmetic of pooling, upsampling and padding that the meta functions, the reference
// kernels and the lowerings share, so the three agree: PyTorch's pooling_output_shape
// (ATen/native/Pool.h), upsample_compute_output_size, compute_scales_value,
// area_pixel_compute_scale/source_index and nearest(_exact)_idx (ATen/native/UpSample.h).
#pragma once

#include "frontend/graph.h"
#include "frontend/schema.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fxc::resample {

/// pooling_output_shape: the number of windows along one dim (dilation 1 for avg pooling).
/// In ceil mode the last window must start inside the input or its left padding.
inline int64_t pool_out_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil,
                             bool ceil) {
  int64_t num = in + 2 * pad - dil * (k - 1) - 1 + (ceil ? stride - 1 : 0);
  int64_t out = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1;
  if (ceil && (out - 1) * stride >= in + pad) --out;
  return out;
}

/// A pooling parameter of `n` spatial dims: one value for all, or one per dim.
inline std::vector<int64_t> spatial_param(const std::vector<int64_t>& v, size_t n) {
  if (v.size() == 1) return std::vector<int64_t>(n, v[0]);
  return v;
}

/// The avg pooling divisor of the window starting at `start` (before clipping), PyTorch's
/// AvgPoolKernel: the window clipped to in+pad for count_include_pad, else to the input.
inline int64_t avg_window(int64_t start, int64_t k, int64_t in, int64_t pad, bool include_pad) {
  int64_t end = std::min(start + k, in + pad);
  int64_t full = end - start;
  int64_t s = std::max<int64_t>(start, 0), e = std::min(end, in);
  return include_pad ? full : e - s;
}

/// The resolved arguments of an upsample node over `spatial` dims.
struct Upsample {
  std::vector<int64_t> out;                 ///< output spatial sizes
  std::vector<std::optional<double>> scale; ///< the user's scale factor per dim, if any
  bool align_corners = false;
};

/// Reads output_size/scale_factors (.vec) or output_size/scales_* (default overload) of an
/// upsample node whose input has spatial sizes `in`. Returns an error message, or "" on success.
inline std::string upsample_args(const Node& n, const std::vector<int64_t>& in, Upsample& u) {
  const OpSchema& s = *n.schema;
  size_t sp = in.size();
  u.out.clear();
  u.scale.assign(sp, std::nullopt);
  int ac = s.index_of("align_corners");
  u.align_corners = ac >= 0 && n.args[size_t(ac)].b;
  int sf = s.index_of("scale_factors");
  const Arg& os = n.args[size_t(s.index_of(sf >= 0 ? "input" : "self") + 1)];
  if (sf >= 0) {
    const Arg& f = n.args[size_t(sf)];
    bool has_os = !os.is_none(), has_f = !f.is_none();
    if (has_os == has_f) return "must specify exactly one of output_size and scale_factors";
    if (has_os) {
      if (os.ints.size() != sp)
        return "output_size must have " + std::to_string(sp) + " elements, got " +
               std::to_string(os.ints.size());
      u.out = os.ints;
    } else {
      if (f.floats.size() != sp)
        return "scale_factors must have " + std::to_string(sp) + " elements, got " +
               std::to_string(f.floats.size());
      for (size_t i = 0; i < sp; ++i) {
        u.out.push_back(int64_t(double(in[i]) * f.floats[i]));
        u.scale[i] = f.floats[i];
      }
    }
  } else {
    if (os.ints.size() != sp)
      return "output_size must have " + std::to_string(sp) + " elements, got " +
             std::to_string(os.ints.size());
    u.out = os.ints;
    const char* names[] = {"scales_d", "scales_h", "scales_w"};
    for (size_t i = 0; i < sp; ++i) {
      int k = s.index_of(sp == 1 ? "scales" : names[3 - sp + i]);
      if (k >= 0 && !n.args[size_t(k)].is_none()) u.scale[i] = n.args[size_t(k)].f;
    }
  }
  for (size_t i = 0; i < sp; ++i) {
    if (u.out[i] <= 0)
      return "input and output sizes should be greater than 0, but got output size " +
             std::to_string(u.out[i]);
    if (in[i] <= 0)
      return "input and output sizes should be greater than 0, but got input size " +
             std::to_string(in[i]);
  }
  return "";
}

/// compute_scales_value: 1/scale when the user gave one, else in/out (in T, float for f32).
template <class T> T scales_value(std::optional<double> s, int64_t in, int64_t out) {
  return s && *s > 0 ? T(1.0 / *s) : T(in) / T(out);
}

/// area_pixel_compute_scale.
template <class T> T linear_scale(int64_t in, int64_t out, bool align, std::optional<double> s) {
  if (align) return out > 1 ? T(in - 1) / T(out - 1) : T(0);
  return scales_value<T>(s, in, out);
}

/// area_pixel_compute_source_index (not cubic): clamped at 0 without align_corners.
template <class T> T linear_source(T scale, int64_t dst, bool align) {
  if (align) return scale * T(dst);
  T src = scale * (T(dst) + T(0.5)) - T(0.5);
  return src < T(0) ? T(0) : src;
}

/// area_pixel_compute_source_index for cubic interpolation: not clamped.
template <class T> T cubic_source(T scale, int64_t dst, bool align) {
  return align ? scale * T(dst) : scale * (T(dst) + T(0.5)) - T(0.5);
}

/// get_cubic_upsample_coefficients (A = -0.75): the weights of the taps at floor(x) - 1 .. + 2
/// for the fraction t = x - floor(x) (upsample_bicubic2d and grid_sampler_2d's bicubic mode).
template <class T> void cubic_coefficients(T t, T w[4]) {
  const T A = T(-0.75);
  auto c1 = [&](T x) { return ((A + T(2)) * x - (A + T(3))) * x * x + T(1); };
  auto c2 = [&](T x) { return ((A * x - T(5) * A) * x + T(8) * A) * x - T(4) * A; };
  w[0] = c2(t + T(1));
  w[1] = c1(t);
  w[2] = c1(T(1) - t);
  w[3] = c2(T(1) - t + T(1));
}

/// grid_sampler_unnormalize: a grid coordinate in [-1, 1] to a pixel position of a dim of `size`.
template <class T> T grid_unnormalize(T coord, int64_t size, bool align) {
  return align ? (coord + T(1)) / T(2) * T(size - 1) : ((coord + T(1)) * T(size) - T(1)) / T(2);
}

/// reflect_coordinates: `in` reflected into [twice_low / 2, twice_high / 2].
template <class T> T grid_reflect(T in, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return T(0);
  T lo = T(twice_low) / T(2), span = T(twice_high - twice_low) / T(2);
  in = std::fabs(in - lo);
  T extra = std::fmod(in, span);
  int64_t flips = int64_t(std::floor(in / span));
  return flips % 2 == 0 ? extra + lo : span - extra + lo;
}

/// grid_sampler_compute_source_index after unnormalizing: padding 1 (border) clips into the dim,
/// 2 (reflection) reflects then clips; 0 (zeros) leaves the position as is.
template <class T> T grid_pad(T coord, int64_t size, int64_t padding, bool align) {
  auto clip = [&](T v) { return std::min(T(size - 1), std::max(v, T(0))); };
  if (padding == 1) return clip(coord);
  if (padding == 2) {
    coord = align ? grid_reflect(coord, 0, 2 * (size - 1)) : grid_reflect(coord, -1, 2 * size - 1);
    return clip(coord);
  }
  return coord;
}

/// nearest_idx (exact = false) and nearest_exact_idx (exact = true).
inline int64_t nearest_source(int64_t dst, int64_t in, int64_t out, std::optional<double> s,
                              bool exact) {
  float scale = scales_value<float>(s, in, out);
  if (exact) return std::min(int64_t(std::floor(float((double(dst) + 0.5) * scale))), in - 1);
  if (out == in) return dst;
  if (out == 2 * in) return dst >> 1;
  return std::min(int64_t(std::floor(float(dst) * scale)), in - 1);
}

/// The source position of output position `o` of a dim of size `in` padded by `lo` in `mode`
/// ("reflect", "replicate" or "circular"); -1 is never returned for valid padding.
inline int64_t pad_source(int64_t o, int64_t in, int64_t lo, const std::string& mode) {
  int64_t j = o - lo;
  if (mode == "replicate") return std::clamp<int64_t>(j, 0, in - 1);
  if (mode == "circular") return ((j % in) + in) % in;
  if (j < 0) j = -j;
  return (in - 1) - std::abs((in - 1) - j);
}

} // namespace fxc::resample
