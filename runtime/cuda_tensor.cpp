// Host tensor <-> device buffer copies through the context's stream.
#include "runtime/cuda_tensor.h"

namespace fxc::cuda {

size_t device_bytes(const Tensor& t) {
  return size_t(t.numel()) * dtype_size(t.dtype());
}

void upload(Context& ctx, const Tensor& t, DevicePtr dst) {
  Tensor c = t.contiguous();
  ctx.copy_to_device(dst, c.raw_data(), device_bytes(c));
}

Tensor download(Context& ctx, DevicePtr src, DType dtype, const std::vector<int64_t>& sizes) {
  Tensor t = Tensor::empty(dtype, sizes);
  ctx.copy_to_host(t.raw_data(), src, device_bytes(t));
  return t;
}

} // namespace fxc::cuda
