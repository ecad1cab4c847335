/* fxc runtime: the C API to load a compiled .fxo artifact and run it from any program. */
/*
 * Link with libfxcrt.so (built next to fxc; it has no LLVM in it). An artifact made by
 * `fxc model.pt2 -o model.fxo` holds the compiled plan, its kernels and its weights:
 *
 *     fxc_model* m = NULL;
 *     if (fxc_model_load_file("model.fxo", &m) != FXC_OK) {
 *       fprintf(stderr, "%s\n", fxc_last_error());
 *       return 1;
 *     }
 *     fxc_tensor_info in;
 *     fxc_model_input_info(m, 0, &in);          // name, dtype, rank, sizes, bytes
 *     ...                                       // one buffer per input and output
 *     if (fxc_model_run(m, inputs, outputs) != FXC_OK) fprintf(stderr, "%s\n", fxc_last_error());
 *     fxc_model_free(m);
 *
 * Buffers are host memory, contiguous (row-major), of the dtype and sizes the info calls
 * report; a CUDA artifact copies them to the device and back. Every run first checks the
 * artifact's guards (input count, dtype, shape, strides, device); a mismatch returns
 * FXC_ERROR_GUARD with a message naming the input and the guard:
 *     model.fxo: error: input_0 'x': shape guard failed: expected f32[64, 256], got f32[32, 256]
 * fxc_model_run_checked() passes the caller's sizes so that this check covers them.
 *
 * Every call that can fail returns an fxc_status; fxc_last_error() is the calling thread's
 * message for its last failed call. A model may be run from many threads at once, each run with
 * its own activations (CPU runs proceed in parallel; CUDA runs are serialized). Train-mode
 * artifacts return the forward's outputs and then the gradients.
 *
 * fxc_model_load_file maps the file: CPU weights are used where they lie, CUDA weights are
 * uploaded from the mapping. Weights can be swapped without recompiling (from a .safetensors
 * file or the caller's buffers); runs in flight finish on the old weights.
 * include/fxc/runtime.hpp wraps this API in C++ classes that free what they hold.
 */
#ifndef FXC_RUNTIME_H
#define FXC_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "fxc/plugin.h" /* fxc_dtype */

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fxc_status {
  FXC_OK = 0,
  FXC_ERROR_INVALID_ARGUMENT = 1, /* a null pointer, an index out of range */
  FXC_ERROR_IO = 2,               /* the file cannot be read */
  FXC_ERROR_BAD_ARTIFACT = 3,     /* not an .fxo, another format version, corrupt, truncated */
  FXC_ERROR_LOAD = 4,             /* kernels cannot be loaded: no CUDA device, missing symbol,
                                     unregistered custom op */
  FXC_ERROR_GUARD = 5,            /* the inputs are not what the artifact was compiled for */
  FXC_ERROR_RUN = 6,              /* the run failed */
  FXC_ERROR_WEIGHTS = 7           /* weights for a swap: unknown name, wrong dtype or shape */
} fxc_status;

/* An opaque loaded artifact. */
typedef struct fxc_model fxc_model;

/* One input or output. Pointers stay valid until fxc_model_free. */
typedef struct fxc_tensor_info {
  const char* name; /* the graph's input name ("x"), or "output_0", "grad.fc1.weight" */
  int32_t dtype;    /* an fxc_dtype */
  int32_t rank;
  const int64_t* sizes; /* rank entries */
  size_t nbytes;        /* the contiguous buffer's size */
} fxc_tensor_info;

/* The calling thread's message for its last failed call ("" when none). */
const char* fxc_last_error(void);
/* "FXC_OK", "FXC_ERROR_GUARD", ... */
const char* fxc_status_name(fxc_status status);
/* "f32", "i64", ...; "?" for an unknown code. */
const char* fxc_dtype_name(int32_t dtype);

/* Loads an artifact from a file (mapped; its weights are used in place), or from `size` bytes
 * at `data` (copied: the caller may free them; `name` is used in messages and may be NULL). On
 * success *out is the model. */
fxc_status fxc_model_load_file(const char* path, fxc_model** out);
fxc_status fxc_model_load_memory(const void* data, size_t size, const char* name, fxc_model** out);
/* An artifact may hold several models (`fxc --link -o both.fxo encoder.fxo decoder.fxo`), each
 * with its own inputs, outputs and weights (weights with equal bytes stored once). The calls
 * above load its first model; these load the one named `model_name` (NULL or "": the first).
 * A name the artifact does not hold: FXC_ERROR_INVALID_ARGUMENT, the message listing those it
 * does. Load each model you need; the loads of one file share its pages. */
fxc_status fxc_model_load_file_named(const char* path, const char* model_name, fxc_model** out);
fxc_status fxc_model_load_memory_named(const void* data, size_t size, const char* name,
                                       const char* model_name, fxc_model** out);
/* How to load: fxc_load_options_default() gives the defaults, then set what you need:
 *     fxc_load_options o = fxc_load_options_default();
 *     o.cuda_device = 1;
 *     fxc_model_load_file_ex("model.fxo", &o, &m); */
typedef struct fxc_load_options {
  const char* model_name; /* the model of a linked artifact (NULL or "": the first) */
  int32_t cuda_device;    /* CUDA artifacts: the device ordinal their kernels, weights and runs
                             go to; -1 (the default): FXC_CUDA_DEVICE, else 0. No such device:
                             FXC_ERROR_LOAD naming it. CPU artifacts ignore it. */
  int32_t num_threads;    /* CPU artifacts: worker threads; 0 (the default): every hardware
                             thread */
} fxc_load_options;
fxc_load_options fxc_load_options_default(void);
/* fxc_model_load_file / _memory with options (NULL: the defaults). */
fxc_status fxc_model_load_file_ex(const char* path, const fxc_load_options* options,
                                  fxc_model** out);
fxc_status fxc_model_load_memory_ex(const void* data, size_t size, const char* name,
                                    const fxc_load_options* options, fxc_model** out);
/* The CUDA device ordinal a CUDA artifact runs on; -1 for a CPU artifact or NULL. */
int32_t fxc_model_cuda_device(const fxc_model* model);
/* The model's name (the stem of the graph it was compiled from: "encoder"); NULL for NULL. */
const char* fxc_model_name(const fxc_model* model);
/* The models of the artifact `model` was loaded from, in order, by name (index out of range or
 * a NULL model: 0 and NULL). */
size_t fxc_artifact_num_models(const fxc_model* model);
const char* fxc_artifact_model_name(const fxc_model* model, size_t index);
/* Frees a model (NULL is ignored). */
void fxc_model_free(fxc_model* model);

size_t fxc_model_num_inputs(const fxc_model* model);
size_t fxc_model_num_outputs(const fxc_model* model);
fxc_status fxc_model_input_info(const fxc_model* model, size_t index, fxc_tensor_info* info);
fxc_status fxc_model_output_info(const fxc_model* model, size_t index, fxc_tensor_info* info);

/* Runs the model: inputs[i] holds input i (as fxc_model_input_info describes it), and the
 * results are written to outputs[i] (as fxc_model_output_info describes them). */
fxc_status fxc_model_run(fxc_model* model, const void* const* inputs, void* const* outputs);

/* fxc_model_run() with the caller's view of each input: dtypes[i], ranks[i] and sizes[i]
 * (ranks[i] entries) are checked against the guards before anything runs. */
fxc_status fxc_model_run_checked(fxc_model* model, const void* const* inputs, const int32_t* dtypes,
                                 const int32_t* ranks, const int64_t* const* sizes,
                                 void* const* outputs);

/* Runs a CUDA inference artifact on device memory, ordered on the caller's stream, as
 * AOTInductor's runtime does: inputs[i] and outputs[i] are device addresses (CUdeviceptr, or
 * what cudaMalloc gives, cast to void*) on fxc_model_cuda_device(), contiguous, of the sizes the
 * info calls report; `stream` is a CUstream / cudaStream_t of that device (NULL: the legacy
 * default stream). The run starts after the work queued on `stream` before the call, and work
 * queued on `stream` after the call starts after the run (no host synchronization: the call
 * returns once the work is queued; the inputs must stay valid until then and the outputs are
 * ready when the stream gets there). Runs of one model from any streams and threads are ordered
 * one after the other. FXC_ERROR_INVALID_ARGUMENT for a CPU or train-mode artifact. */
fxc_status fxc_model_run_cuda(fxc_model* model, const void* const* inputs, void* const* outputs,
                              void* stream);

/* Dynamic artifacts (compiled from a graph exported with dynamic shapes) run at any size in
 * their symbols' ranges; the info calls report the sizes they were compiled at. */
/* The range of input `index`'s dim `dim`: [*min, *max] (INT64_MAX: unbounded); a static dim's
 * range is its one size. */
fxc_status fxc_model_dim_range(const fxc_model* model, size_t index, int32_t dim, int64_t* min,
                               int64_t* max);
/* The sizes of output `index` for inputs of these ranks and sizes (as fxc_model_run_checked
 * takes them), before running: *rank, and the sizes in out_sizes (room for `capacity`).
 * Returns FXC_ERROR_GUARD, naming the dim and range, for sizes outside the artifact's. */
fxc_status fxc_model_output_shape(const fxc_model* model, const int32_t* ranks,
                                  const int64_t* const* sizes, size_t index, int32_t* rank,
                                  int64_t* out_sizes, int32_t capacity);

/* Weight swaps: the weights that can be replaced are the graph's parameters and buffers that
 * the compiled plan uses as they are (sorted by name; a weight folded at compile time is not
 * one of them). Their info: name ("fc1.weight"), dtype, sizes, bytes. */
size_t fxc_model_num_weights(const fxc_model* model);
fxc_status fxc_model_weight_info(const fxc_model* model, size_t index, fxc_tensor_info* info);

/* One weight from the caller: contiguous host memory of `dtype` and `sizes`. */
typedef struct fxc_weight {
  const char* name;
  int32_t dtype; /* an fxc_dtype */
  int32_t rank;
  const int64_t* sizes;
  const void* data; /* copied by fxc_model_swap_weights */
} fxc_weight;

/* Replaces `count` weights by name. Every one must be a swappable weight of the same dtype and
 * sizes, else FXC_ERROR_WEIGHTS naming it, and nothing changes. Weights not given are kept.
 * Safe while other threads run the model: runs already started finish on the old weights,
 * runs started after this returns use the new ones. */
fxc_status fxc_model_swap_weights(fxc_model* model, const fxc_weight* weights, size_t count);
/* The same with every tensor of a .safetensors file (each must be a swappable weight). */
fxc_status fxc_model_swap_weights_file(fxc_model* model, const char* safetensors_path);

#ifdef __cplusplus
}
#endif

#endif /* FXC_RUNTIME_H */
