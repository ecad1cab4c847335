/* An fxc plugin: mylib::scaled_softplus(x, beta) = log(1 + exp(beta * x)) / beta (x where
 * beta * x > 20, like torch.nn.functional.softplus), with a CPU kernel (f32, f64) and a CUDA
 * kernel (f32; hand-written PTX, loaded through the CUDA driver API opened with dlopen, so the
 * plugin builds without the CUDA toolkit).
 *
 * Build and run (see README.md next to this file):
 *   cc -shared -fPIC -O2 -I include examples/custom_op/scaled_softplus.c -o libscaled_softplus.so \
 *      -ldl -lm -lpthread
 *   fxc --plugin=./libscaled_softplus.so --run examples/custom_op/softplus.fxg
 */
#include "fxc/plugin.h"

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>

static void set_error(char* error, const char* msg) {
  snprintf(error, FXC_PLUGIN_ERROR_SIZE, "%s", msg);
}

static int64_t numel(const fxc_tensor_desc* t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t->ndim; ++d) n *= t->sizes[d];
  return n;
}

/* Same dtype and sizes as x; float tensors only; beta must not be 0. */
static int shape(const fxc_op_args* args, int32_t num_outputs, fxc_tensor_desc* outputs,
                 char* error) {
  const fxc_tensor_desc* x = &args->inputs[0];
  if (x->dtype != FXC_DTYPE_F32 && x->dtype != FXC_DTYPE_F64) {
    set_error(error, "x must be float32 or float64");
    return 1;
  }
  if (args->scalars[0].f == 0.0) {
    set_error(error, "beta must not be 0");
    return 1;
  }
  outputs[0] = *x;
  return 0;
}

static int cpu(const fxc_op_args* args, const void* const* inputs, void* const* outputs,
               char* error) {
  const double beta = args->scalars[0].f;
  const int64_t n = numel(&args->inputs[0]);
  if (args->inputs[0].dtype == FXC_DTYPE_F64) {
    const double* x = (const double*)inputs[0];
    double* y = (double*)outputs[0];
    for (int64_t i = 0; i < n; ++i)
      y[i] = beta * x[i] > 20.0 ? x[i] : log1p(exp(beta * x[i])) / beta;
  } else {
    const float* x = (const float*)inputs[0];
    float* y = (float*)outputs[0];
    for (int64_t i = 0; i < n; ++i) {
      double t = beta * (double)x[i];
      y[i] = t > 20.0 ? x[i] : (float)(log1p(exp(t)) / beta);
    }
  }
  return 0;
}

/* ---- CUDA: one thread per element, f32 ---- */

static const char kPtx[] =
    ".version 7.0\n"
    ".target sm_52\n"
    ".address_size 64\n"
    ".visible .entry scaled_softplus_f32(.param .u64 p_in, .param .u64 p_out, .param .u64 p_n,\n"
    "                                    .param .f32 p_beta)\n"
    "{\n"
    "  .reg .pred %p<3>;\n"
    "  .reg .b32 %r<4>;\n"
    "  .reg .b64 %rd<8>;\n"
    "  .reg .f32 %f<10>;\n"
    "  ld.param.u64 %rd1, [p_in];\n"
    "  ld.param.u64 %rd2, [p_out];\n"
    "  ld.param.u64 %rd3, [p_n];\n"
    "  ld.param.f32 %f1, [p_beta];\n"
    "  mov.u32 %r1, %ctaid.x;\n"
    "  mov.u32 %r2, %ntid.x;\n"
    "  mov.u32 %r3, %tid.x;\n"
    "  mul.wide.u32 %rd4, %r1, %r2;\n"
    "  cvt.u64.u32 %rd5, %r3;\n"
    "  add.u64 %rd4, %rd4, %rd5;\n"
    "  setp.ge.u64 %p1, %rd4, %rd3;\n"
    "  @%p1 bra DONE;\n"
    "  cvta.to.global.u64 %rd1, %rd1;\n"
    "  cvta.to.global.u64 %rd2, %rd2;\n"
    "  shl.b64 %rd6, %rd4, 2;\n"
    "  add.u64 %rd7, %rd1, %rd6;\n"
    "  ld.global.f32 %f2, [%rd7];\n"
    "  mul.f32 %f3, %f2, %f1;\n"            /* t = beta * x */
    "  setp.gt.f32 %p2, %f3, 0f41A00000;\n" /* t > 20 */
    "  mul.f32 %f4, %f3, 0f3FB8AA3B;\n"     /* t * log2(e) */
    "  ex2.approx.f32 %f5, %f4;\n"          /* exp(t) */
    "  add.f32 %f6, %f5, 0f3F800000;\n"     /* 1 + exp(t) */
    "  lg2.approx.f32 %f7, %f6;\n"
    "  mul.f32 %f8, %f7, 0f3F317218;\n" /* log(1 + exp(t)) */
    "  div.rn.f32 %f9, %f8, %f1;\n"
    "  selp.f32 %f9, %f2, %f9, %p2;\n"
    "  add.u64 %rd7, %rd2, %rd6;\n"
    "  st.global.f32 [%rd7], %f9;\n"
    "DONE:\n"
    "  ret;\n"
    "}\n";

typedef int (*ModuleLoadData)(void** module, const void* image);
typedef int (*ModuleGetFunction)(void** function, void* module, const char* name);
typedef int (*LaunchKernel)(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                            unsigned by, unsigned bz, unsigned shared, void* stream, void** params,
                            void** extra);

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static void* g_function;
static LaunchKernel g_launch;

/* Loads the PTX into fxc's current context once. */
static int load_kernel(char* error) {
  pthread_mutex_lock(&g_mu);
  int rc = 0;
  if (!g_function) {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    ModuleLoadData load = lib ? (ModuleLoadData)dlsym(lib, "cuModuleLoadData") : NULL;
    ModuleGetFunction get = lib ? (ModuleGetFunction)dlsym(lib, "cuModuleGetFunction") : NULL;
    g_launch = lib ? (LaunchKernel)dlsym(lib, "cuLaunchKernel") : NULL;
    void* module = NULL;
    int e = 0;
    if (!load || !get || !g_launch) {
      set_error(error, "cannot open libcuda.so.1");
      rc = 1;
    } else if ((e = load(&module, kPtx)) != 0 ||
               (e = get(&g_function, module, "scaled_softplus_f32")) != 0) {
      snprintf(error, FXC_PLUGIN_ERROR_SIZE, "loading the PTX failed (CUresult %d)", e);
      g_function = NULL;
      rc = 1;
    }
  }
  pthread_mutex_unlock(&g_mu);
  return rc;
}

static int cuda(const fxc_op_args* args, const void* const* inputs, void* const* outputs,
                void* stream, char* error) {
  if (args->inputs[0].dtype != FXC_DTYPE_F32) return FXC_PLUGIN_USE_CPU;
  if (load_kernel(error) != 0) return 1;
  unsigned long long in = (unsigned long long)(uintptr_t)inputs[0];
  unsigned long long out = (unsigned long long)(uintptr_t)outputs[0];
  unsigned long long n = (unsigned long long)numel(&args->inputs[0]);
  float beta = (float)args->scalars[0].f;
  if (n == 0) return 0;
  void* params[] = {&in, &out, &n, &beta};
  unsigned blocks = (unsigned)((n + 255) / 256);
  int e = g_launch(g_function, blocks, 1, 1, 256, 1, 1, 0, stream, params, NULL);
  if (e != 0) {
    snprintf(error, FXC_PLUGIN_ERROR_SIZE, "cuLaunchKernel failed (CUresult %d)", e);
    return 1;
  }
  return 0;
}

int fxc_plugin_init(fxc_plugin_registry* registry) {
  fxc_op_desc desc = {FXC_PLUGIN_API_VERSION,
                      "mylib::scaled_softplus",
                      "scaled_softplus(Tensor x, float beta=1) -> Tensor",
                      shape,
                      cpu,
                      cuda};
  return registry->register_op(registry, &desc);
}
