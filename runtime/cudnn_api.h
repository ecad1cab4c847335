// The cuDNN entry points fxc resolves with dlopen (runtime/cudnn.cpp loads them): the legacy
// convolution API and the backend graph API (fused attention, runtime/cudnn_attention.cpp).
// Internal to the runtime: include only from cuDNN's implementation files.
#pragma once

#include "runtime/cudnn.h"

#if defined(FXC_HAVE_CUDA_HEADERS) && __has_include(<cudnn.h>)
#define FXC_HAVE_CUDNN_HEADERS 1
#include <cudnn.h>
#endif

#if defined(FXC_HAVE_CUDNN_HEADERS)

namespace fxc::cuda {

#define FXC_DNN_FUNCTIONS(X)                                                                       \
  X(cudnnGetVersion)                                                                               \
  X(cudnnGetErrorString)                                                                           \
  X(cudnnCreate)                                                                                   \
  X(cudnnDestroy)                                                                                  \
  X(cudnnSetStream)                                                                                \
  X(cudnnCreateTensorDescriptor)                                                                   \
  X(cudnnSetTensor4dDescriptor)                                                                    \
  X(cudnnDestroyTensorDescriptor)                                                                  \
  X(cudnnCreateFilterDescriptor)                                                                   \
  X(cudnnSetFilter4dDescriptor)                                                                    \
  X(cudnnDestroyFilterDescriptor)                                                                  \
  X(cudnnCreateConvolutionDescriptor)                                                              \
  X(cudnnSetConvolution2dDescriptor)                                                               \
  X(cudnnSetConvolutionGroupCount)                                                                 \
  X(cudnnSetConvolutionMathType)                                                                   \
  X(cudnnDestroyConvolutionDescriptor)                                                             \
  X(cudnnGetConvolution2dForwardOutputDim)                                                         \
  X(cudnnGetConvolutionForwardAlgorithm_v7)                                                        \
  X(cudnnGetConvolutionForwardWorkspaceSize)                                                       \
  X(cudnnConvolutionForward)                                                                       \
  X(cudnnGetConvolutionBackwardDataAlgorithm_v7)                                                   \
  X(cudnnGetConvolutionBackwardDataWorkspaceSize)                                                  \
  X(cudnnConvolutionBackwardData)                                                                  \
  X(cudnnGetConvolutionBackwardFilterAlgorithm_v7)                                                 \
  X(cudnnGetConvolutionBackwardFilterWorkspaceSize)                                                \
  X(cudnnConvolutionBackwardFilter)                                                                \
  X(cudnnAddTensor)                                                                                \
  X(cudnnBackendCreateDescriptor)                                                                  \
  X(cudnnBackendDestroyDescriptor)                                                                 \
  X(cudnnBackendSetAttribute)                                                                      \
  X(cudnnBackendGetAttribute)                                                                      \
  X(cudnnBackendFinalize)                                                                          \
  X(cudnnBackendExecute)                                                                           \
  X(cudnnGetLastErrorString)

struct Cudnn::Api {
  void* lib = nullptr;
#define FXC_DNN_MEMBER(fn) decltype(&::fn) fn = nullptr;
  FXC_DNN_FUNCTIONS(FXC_DNN_MEMBER)
#undef FXC_DNN_MEMBER
};

} // namespace fxc::cuda

#endif
