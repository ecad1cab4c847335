/* fxc custom-op plugins: the C interface a shared library implements to add ops to fxc. */
/*
 * A plugin is a shared library (loaded with `fxc --plugin=libmyops.so`) that exports
 *
 *     int fxc_plugin_init(fxc_plugin_registry* registry);
 *
 * fxc calls it once after loading the library. It registers each op with
 * registry->register_op(registry, &desc) and returns 0 (nonzero: the plugin failed; fxc reports
 * registry->error if the plugin wrote one there). Every fxc_op_desc starts with
 * api_version = FXC_PLUGIN_API_VERSION; fxc refuses descriptors of another version.
 *
 * An op is described by
 *   - name:   its qualified name, "mylib::scaled_softplus". Graphs call it with the target
 *             "mylib.scaled_softplus.default" (.fxg) or "torch.ops.mylib.scaled_softplus.default"
 *             (torch.export); the namespace must not be "aten".
 *   - schema: its signature in native_functions.yaml syntax, without the namespace:
 *             "scaled_softplus(Tensor x, float beta=1) -> Tensor". Arguments may be Tensor, int,
 *             SymInt, float, bool or Scalar (defaults allowed; no lists, no optionals); returns
 *             are one or more Tensor.
 *   - shape:  the shape function: output dtypes and sizes from the input dtypes/sizes and the
 *             scalar arguments. Outputs are contiguous and on the device of the first input.
 *   - cpu:    the CPU kernel, on contiguous host buffers.
 *   - cuda:   optionally, the CUDA kernel, on contiguous device buffers, queued on `stream` (a
 *             CUstream) in fxc's current context. Without it (or when it returns
 *             FXC_PLUGIN_USE_CPU), CUDA plans copy the operands to the host and run `cpu`.
 * Every function returns 0 on success; on failure it returns nonzero and writes a message
 * (NUL-terminated, at most FXC_PLUGIN_ERROR_SIZE bytes with the NUL) into `error`.
 *
 * The structs are plain data with fixed-size arrays and explicit counts; fxc fills every
 * field it passes. Functions may be called from several threads at once, never concurrently
 * on the same output buffers.
 */
#ifndef FXC_PLUGIN_H
#define FXC_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FXC_PLUGIN_API_VERSION 1
#define FXC_PLUGIN_MAX_DIMS 8     /* tensors of rank at most 8 */
#define FXC_PLUGIN_MAX_TENSORS 8  /* tensor arguments, and outputs, per op */
#define FXC_PLUGIN_MAX_SCALARS 16 /* non-tensor arguments per op */
#define FXC_PLUGIN_ERROR_SIZE 512 /* capacity of every error buffer */
/* A CUDA kernel's answer for operands it does not handle (a dtype, say): fxc then copies them to
 * the host and runs the CPU kernel instead. */
#define FXC_PLUGIN_USE_CPU (-2)

/* Element types. */
typedef enum fxc_dtype {
  FXC_DTYPE_BOOL = 0,
  FXC_DTYPE_U8 = 1,
  FXC_DTYPE_I8 = 2,
  FXC_DTYPE_I16 = 3,
  FXC_DTYPE_I32 = 4,
  FXC_DTYPE_I64 = 5,
  FXC_DTYPE_F16 = 6,
  FXC_DTYPE_BF16 = 7,
  FXC_DTYPE_F32 = 8,
  FXC_DTYPE_F64 = 9
} fxc_dtype;

/* A tensor's element type and sizes (rank `ndim`, sizes[0..ndim)); contiguous row-major. */
typedef struct fxc_tensor_desc {
  int32_t dtype; /* fxc_dtype */
  int32_t ndim;
  int64_t sizes[FXC_PLUGIN_MAX_DIMS];
} fxc_tensor_desc;

typedef enum fxc_scalar_kind {
  FXC_SCALAR_INT = 0,   /* int, SymInt; Scalar given as an integer */
  FXC_SCALAR_FLOAT = 1, /* float; Scalar given as a float */
  FXC_SCALAR_BOOL = 2
} fxc_scalar_kind;

typedef struct fxc_scalar {
  int32_t kind; /* fxc_scalar_kind */
  int64_t i;    /* FXC_SCALAR_INT, FXC_SCALAR_BOOL (0 or 1) */
  double f;     /* FXC_SCALAR_FLOAT; also set (converted) for ints and bools */
} fxc_scalar;

/* One call's operands: the tensor arguments in schema order, then the other arguments in
 * schema order (defaults filled in). */
typedef struct fxc_op_args {
  int32_t num_inputs;
  fxc_tensor_desc inputs[FXC_PLUGIN_MAX_TENSORS];
  int32_t num_scalars;
  fxc_scalar scalars[FXC_PLUGIN_MAX_SCALARS];
} fxc_op_args;

/* Writes outputs[0..num_outputs) (num_outputs = the schema's return count). */
typedef int (*fxc_shape_fn)(const fxc_op_args* args, int32_t num_outputs, fxc_tensor_desc* outputs,
                            char* error);
/* inputs[k] points at tensor argument k, outputs[k] at output k (sized by the shape function). */
typedef int (*fxc_cpu_kernel_fn)(const fxc_op_args* args, const void* const* inputs,
                                 void* const* outputs, char* error);
/* As fxc_cpu_kernel_fn, with device pointers, queued on `stream` (a CUstream). */
typedef int (*fxc_cuda_kernel_fn)(const fxc_op_args* args, const void* const* inputs,
                                  void* const* outputs, void* stream, char* error);

typedef struct fxc_op_desc {
  int32_t api_version; /* FXC_PLUGIN_API_VERSION; keep first */
  const char* name;    /* "mylib::scaled_softplus" */
  const char* schema;  /* "scaled_softplus(Tensor x, float beta=1) -> Tensor" */
  fxc_shape_fn shape;
  fxc_cpu_kernel_fn cpu;
  fxc_cuda_kernel_fn cuda; /* may be NULL */
} fxc_op_desc;

typedef struct fxc_plugin_registry fxc_plugin_registry;
struct fxc_plugin_registry {
  int32_t api_version; /* the version fxc implements */
  /* Registers one op; fxc copies what it needs. Returns 0, or nonzero with `error` set (bad
   * version, bad name or schema, an op registered twice). */
  int (*register_op)(fxc_plugin_registry* registry, const fxc_op_desc* desc);
  char error[FXC_PLUGIN_ERROR_SIZE]; /* the last failure's message */
  void* impl;                        /* fxc's; do not touch */
};

/* The entry point every plugin exports. */
typedef int (*fxc_plugin_init_fn)(fxc_plugin_registry* registry);
#define FXC_PLUGIN_INIT_SYMBOL "fxc_plugin_init"

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FXC_PLUGIN_H */
