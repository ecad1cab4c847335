/* embed: loads an .fxo artifact with the fxc runtime C API, runs it, and prints its outputs. */
/*
 * usage: embed model.fxo [inputs.bin]
 *
 * Inputs are read from inputs.bin (every input's contiguous bytes, one after another, in
 * order), or filled with a fixed pattern when it is not given. Each output is printed as
 * "output_0 f32[8, 10]" followed by one value per line (%.9g), so that a test can compare them.
 * Exit status: 0 on success, 1 when a call fails (the message is printed to stderr).
 */
#include <fxc/runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char* what, fxc_status s) {
  fprintf(stderr, "embed: %s: %s\n%s\n", what, fxc_status_name(s), fxc_last_error());
  return 1;
}

static double element(const void* buf, int32_t dtype, size_t i) {
  switch (dtype) {
  case FXC_DTYPE_F32:
    return ((const float*)buf)[i];
  case FXC_DTYPE_F64:
    return ((const double*)buf)[i];
  case FXC_DTYPE_I64:
    return (double)((const int64_t*)buf)[i];
  case FXC_DTYPE_I32:
    return ((const int32_t*)buf)[i];
  case FXC_DTYPE_BOOL:
  case FXC_DTYPE_U8:
    return ((const uint8_t*)buf)[i];
  default:
    return 0;
  }
}

static size_t element_size(int32_t dtype) {
  switch (dtype) {
  case FXC_DTYPE_F64:
  case FXC_DTYPE_I64:
    return 8;
  case FXC_DTYPE_F32:
  case FXC_DTYPE_I32:
    return 4;
  case FXC_DTYPE_F16:
  case FXC_DTYPE_BF16:
  case FXC_DTYPE_I16:
    return 2;
  default:
    return 1;
  }
}

static void print_info(const fxc_tensor_info* t) {
  printf("%s %s[", t->name, fxc_dtype_name(t->dtype));
  for (int32_t d = 0; d < t->rank; ++d) printf(d ? ", %lld" : "%lld", (long long)t->sizes[d]);
  printf("]\n");
}

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: embed model.fxo [inputs.bin]\n");
    return 2;
  }
  fxc_model* model = NULL;
  fxc_status s = fxc_model_load_file(argv[1], &model);
  if (s != FXC_OK) return fail("load", s);

  size_t n_in = fxc_model_num_inputs(model), n_out = fxc_model_num_outputs(model);
  void** inputs = calloc(n_in ? n_in : 1, sizeof(void*));
  void** outputs = calloc(n_out ? n_out : 1, sizeof(void*));
  FILE* f = argc == 3 ? fopen(argv[2], "rb") : NULL;
  if (argc == 3 && !f) {
    fprintf(stderr, "embed: cannot open %s\n", argv[2]);
    return 1;
  }
  int status = 0;
  for (size_t i = 0; i < n_in && status == 0; ++i) {
    fxc_tensor_info t;
    if ((s = fxc_model_input_info(model, i, &t)) != FXC_OK) {
      status = fail("input_info", s);
      break;
    }
    inputs[i] = malloc(t.nbytes ? t.nbytes : 1);
    if (f) {
      if (fread(inputs[i], 1, t.nbytes, f) != t.nbytes) {
        fprintf(stderr, "embed: %s is too short for input %s\n", argv[2], t.name);
        status = 1;
      }
    } else {
      for (size_t k = 0; k < t.nbytes / element_size(t.dtype); ++k) {
        if (t.dtype == FXC_DTYPE_F32)
          ((float*)inputs[i])[k] = (float)((k % 7) * 0.25 - 0.75);
        else
          memset((char*)inputs[i] + k * element_size(t.dtype), 0, element_size(t.dtype));
      }
    }
  }
  if (f) fclose(f);
  for (size_t i = 0; i < n_out && status == 0; ++i) {
    fxc_tensor_info t;
    if ((s = fxc_model_output_info(model, i, &t)) != FXC_OK)
      status = fail("output_info", s);
    else
      outputs[i] = malloc(t.nbytes ? t.nbytes : 1);
  }
  if (status == 0 && (s = fxc_model_run(model, (const void* const*)inputs, outputs)) != FXC_OK)
    status = fail("run", s);
  for (size_t i = 0; i < n_out && status == 0; ++i) {
    fxc_tensor_info t;
    fxc_model_output_info(model, i, &t);
    print_info(&t);
    for (size_t k = 0; k < t.nbytes / element_size(t.dtype); ++k)
      printf("%.9g\n", element(outputs[i], t.dtype, k));
  }
  for (size_t i = 0; i < n_in; ++i) free(inputs[i]);
  for (size_t i = 0; i < n_out; ++i) free(outputs[i]);
  free(inputs);
  free(outputs);
  fxc_model_free(model);
  return status;
}
