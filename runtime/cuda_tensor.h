// Host tensors to and from device memory: the copies behind --inputs and --outputs on CUDA.
//
// Device buffers hold tensors contiguously (row-major, no offset); strided host views are made
// contiguous before they are copied.
#pragma once

#include "runtime/cuda_driver.h"
#include "runtime/tensor.h"

#include <vector>

namespace fxc::cuda {

/// Bytes a contiguous copy of `t` takes on the device.
size_t device_bytes(const Tensor& t);
/// Copies `t`'s elements in row-major order to `dst`, which holds device_bytes(t) bytes; waits
/// until the copy is done.
void upload(Context& ctx, const Tensor& t, DevicePtr dst);
/// A new contiguous host tensor of `dtype` and `sizes` read from the contiguous device buffer
/// at `src`. Throws TensorError for a negative or overflowing size.
Tensor download(Context& ctx, DevicePtr src, DType dtype, const std::vector<int64_t>& sizes);

} // namespace fxc::cuda
