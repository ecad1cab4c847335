// Kernel structures for bf16 norms (softmax(gelu(layer_norm(x, w, b)) + x) over 8192 x 4096), as
// standalone CUDA C: the experiments behind fxc's NVPTX choices for it (docs/perf.md, "How norms
// in bf16 went from 75% to 81%"). Each variant is checked against float64 on every 997th row
// (largest error in bf16 ulps) and timed like bench/ptx_bench.py (256 MiB memset before each of
// 60 runs, CUDA events, median) against a device-to-device copy of x.
//
// Build and run on the GPU machine (nvcc is there; nothing of fxc is needed):
//   nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/norms_structures bench/norms_structures.cu
//   /tmp/norms_structures
//
// Template parameters of the kernel: threads per row (NT), persistent blocks looping over rows
// (PERSIST), w and b unpacked once into shared memory (WB), the next row's loads issued early
// (PF), the thread's M2 as sum(v^2) - sum * mean (SUMSQ), __launch_bounds__' minimum blocks per
// multiprocessor (MINB, 0 for none), streaming loads and stores (HINT), GELU as
// y / (1 + 2^(y P(y^2))) instead of the clamped rational (SIG).
#include <cuda_bf16.h>
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <cmath>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1);} } while (0)

constexpr int COLS = 4096, ROWS = 8192;

__device__ __forceinline__ float lo(uint32_t u) { return __uint_as_float(u << 16); }
__device__ __forceinline__ float hi(uint32_t u) { return __uint_as_float(u & 0xffff0000u); }
__device__ __forceinline__ float rcpa(float x) { float r; asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x)); return r; }
__device__ __forceinline__ float ex2a(float x) { float r; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x)); return r; }
__device__ __forceinline__ float rsqa(float x) { float r; asm("rsqrt.approx.f32 %0, %1;" : "=f"(r) : "f"(x)); return r; }
__device__ __forceinline__ float fmaxnan(float a, float b) { float r; asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r; }
__device__ __forceinline__ uint32_t pack(float a, float b) { uint32_t r; asm("cvt.rn.bf16x2.f32 %0, %2, %1;" : "=r"(r) : "f"(a), "f"(b)); return r; }

__device__ __forceinline__ float gelu_sig(float y, float x) {
  float t = y * y;
  float P = fmaf(fmaf(fmaf(fmaf(t, -4.082529422147926e-06f, 0.00010541638506124971f), t, 0.00025551090095089416f), t, -0.10500869105545592f), t, -2.3021648378958903f);
  float e = ex2a(y * P);
  return fmaf(y, rcpa(e + 1.0f), x);
}
template <bool SIG = false> __device__ __forceinline__ float gelu_plus(float y, float x) {
  if (SIG) return gelu_sig(y, x);
  float s = fminf(fmaxf(y, -4.66731f), 4.66731f);
  float t = s * s;
  float q = fmaf(fmaf(fmaf(t, __uint_as_float(0x3A97A14Bu), __uint_as_float(0x3CC274E6u)), t, __uint_as_float(0x3E70E367u)), t, 1.0f);
  float r = rcpa(q);
  float p = fmaf(fmaf(fmaf(t, __uint_as_float(0x380A06E7u), __uint_as_float(0x3B79D13Bu)), t, __uint_as_float(0x3CE0182Du)), t, __uint_as_float(0x3ECC4212u));
  float phi = fmaf(s * p, r, 0.5f);
  return fmaf(y, phi, x);
}

template <int NT> struct Red {
  static constexpr int W = NT / 32;
  __device__ static float sum(float v, float* sh) {
    for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(~0u, v, o);
    if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
    __syncthreads();
    float r = 0;
#pragma unroll
    for (int i = 0; i < W; i++) r += sh[i];
    return r;
  }
  __device__ static float max(float v, float* sh) {
    for (int o = 16; o; o >>= 1) v = fmaxnan(v, __shfl_xor_sync(~0u, v, o));
    if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
    __syncthreads();
    float r = sh[0];
#pragma unroll
    for (int i = 1; i < W; i++) r = fmaxnan(r, sh[i]);
    return r;
  }
  // Chan merge of (sum, m2) with equal counts n per lane.
  __device__ static void meanvar(float s, float m2, float n, float* sh1, float* sh2, float& sum, float& M2) {
    for (int o = 16; o; o >>= 1) {
      float so = __shfl_xor_sync(~0u, s, o), mo = __shfl_xor_sync(~0u, m2, o);
      float d = so - s;
      m2 = fmaf(d * d, 0.5f / n, m2 + mo);  // delta of means^2 * n/2 = (ds/n)^2*n/2
      s += so; n *= 2;
    }
    if ((threadIdx.x & 31) == 0) { sh1[threadIdx.x >> 5] = s; sh2[threadIdx.x >> 5] = m2; }
    __syncthreads();
    float S = sh1[0], M = sh2[0], N = n;
#pragma unroll
    for (int i = 1; i < W; i++) {
      float mi = sh1[i] / N - S / (N * i);
      M += sh2[i] + mi * mi * N * i / (i + 1);
      S += sh1[i];
    }
    sum = S; M2 = M;
  }
};

// One row of 4096 bf16 per block iteration. EPT = elements per thread = COLS / NT.
// PERSIST: grid-stride over rows; WB: 0 = w/b from global (bf16, unpack), 1 = from shared f32.
// PF: prefetch the next row's packed x while computing this one.
template <int NT, bool PERSIST, int WB, bool PF, bool SUMSQ = false, int MINB = 0, bool HINT = false, bool SIG = false>
__global__ void __launch_bounds__(NT, MINB) norms(const uint4* __restrict__ x, const uint4* __restrict__ w,
                                            const uint4* __restrict__ b, uint4* __restrict__ out, int rows) {
  constexpr int EPT = COLS / NT, NV = EPT / 8;  // uint4 chunks per thread
  __shared__ float s1[NT / 32], s2[NT / 32], s3[NT / 32], s4[NT / 32];
  extern __shared__ float4 wb[];  // [COLS/4] w then [COLS/4] b
  const int tid = threadIdx.x;
  if (WB == 1) {
    for (int i = tid; i < COLS / 8; i += NT) {
      uint4 a = w[i], c = b[i];
      wb[2 * i] = make_float4(lo(a.x), hi(a.x), lo(a.y), hi(a.y));
      wb[2 * i + 1] = make_float4(lo(a.z), hi(a.z), lo(a.w), hi(a.w));
      wb[COLS / 4 + 2 * i] = make_float4(lo(c.x), hi(c.x), lo(c.y), hi(c.y));
      wb[COLS / 4 + 2 * i + 1] = make_float4(lo(c.z), hi(c.z), lo(c.w), hi(c.w));
    }
    __syncthreads();
  }
  int row = blockIdx.x;
  const int step = PERSIST ? gridDim.x : rows;
  uint4 nx[NV];
  if (PF && row < rows) {
#pragma unroll
    for (int c = 0; c < NV; c++) nx[c] = __ldg(&x[(size_t)row * (COLS / 8) + c * NT + tid]);
  }
  for (; row < rows; row += step) {
    uint4 px[NV];
#pragma unroll
    for (int c = 0; c < NV; c++) {
      if (PF) px[c] = nx[c];
      else if (HINT) {
        const uint4* p = &x[(size_t)row * (COLS / 8) + c * NT + tid];
        asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(px[c].x), "=r"(px[c].y), "=r"(px[c].z), "=r"(px[c].w) : "l"(p));
      } else px[c] = __ldg(&x[(size_t)row * (COLS / 8) + c * NT + tid]);
    }
    float v[EPT];
#pragma unroll
    for (int c = 0; c < NV; c++) {
      v[c * 8 + 0] = lo(px[c].x); v[c * 8 + 1] = hi(px[c].x);
      v[c * 8 + 2] = lo(px[c].y); v[c * 8 + 3] = hi(px[c].y);
      v[c * 8 + 4] = lo(px[c].z); v[c * 8 + 5] = hi(px[c].z);
      v[c * 8 + 6] = lo(px[c].w); v[c * 8 + 7] = hi(px[c].w);
    }
    if (PF && row + step < rows) {
#pragma unroll
      for (int c = 0; c < NV; c++) nx[c] = __ldg(&x[(size_t)(row + step) * (COLS / 8) + c * NT + tid]);
    }
    float s = 0;
#pragma unroll
    for (int i = 0; i < EPT; i++) s += v[i];
    float lm = s * (1.0f / EPT), m2 = 0;
    if (SUMSQ) {
#pragma unroll
      for (int i = 0; i < EPT; i++) m2 = fmaf(v[i], v[i], m2);
      m2 = fmaf(-s, lm, m2);
    } else {
#pragma unroll
      for (int i = 0; i < EPT; i++) { float d = v[i] - lm; m2 = fmaf(d, d, m2); }
    }
    float S, M2;
    Red<NT>::meanvar(s, m2, EPT, s1, s2, S, M2);
    float mean = S * (1.0f / COLS);
    float rstd = rsqa(fmaf(M2, 1.0f / COLS, 1e-5f));
    float c0 = -mean * rstd;
    float g[EPT];
    float mx = -INFINITY;
#pragma unroll
    for (int c = 0; c < NV; c++) {
      float wv[8], bv[8];
      if (WB == 1) {
        float4 a0 = wb[2 * (c * NT + tid)], a1 = wb[2 * (c * NT + tid) + 1];
        float4 b0 = wb[COLS / 4 + 2 * (c * NT + tid)], b1 = wb[COLS / 4 + 2 * (c * NT + tid) + 1];
        wv[0] = a0.x; wv[1] = a0.y; wv[2] = a0.z; wv[3] = a0.w; wv[4] = a1.x; wv[5] = a1.y; wv[6] = a1.z; wv[7] = a1.w;
        bv[0] = b0.x; bv[1] = b0.y; bv[2] = b0.z; bv[3] = b0.w; bv[4] = b1.x; bv[5] = b1.y; bv[6] = b1.z; bv[7] = b1.w;
      } else {
        uint4 a = __ldg(&w[c * NT + tid]), bb = __ldg(&b[c * NT + tid]);
        wv[0] = lo(a.x); wv[1] = hi(a.x); wv[2] = lo(a.y); wv[3] = hi(a.y);
        wv[4] = lo(a.z); wv[5] = hi(a.z); wv[6] = lo(a.w); wv[7] = hi(a.w);
        bv[0] = lo(bb.x); bv[1] = hi(bb.x); bv[2] = lo(bb.y); bv[3] = hi(bb.y);
        bv[4] = lo(bb.z); bv[5] = hi(bb.z); bv[6] = lo(bb.w); bv[7] = hi(bb.w);
      }
#pragma unroll
      for (int j = 0; j < 8; j++) {
        float xi = v[c * 8 + j];
        float y = fmaf(fmaf(xi, rstd, c0), wv[j], bv[j]);
        g[c * 8 + j] = gelu_plus<SIG>(y, xi);
        mx = fmaxnan(mx, g[c * 8 + j]);
      }
    }
    float M = Red<NT>::max(mx, s3);
    float nm = -M * 1.4426950408889634f, es = 0;
#pragma unroll
    for (int i = 0; i < EPT; i++) { g[i] = ex2a(fmaf(g[i], 1.4426950408889634f, nm)); es += g[i]; }
    float E = Red<NT>::sum(es, s4);
    float inv = 1.0f / E;
#pragma unroll
    for (int c = 0; c < NV; c++) {
      uint4 o;
      o.x = pack(g[c * 8 + 0] * inv, g[c * 8 + 1] * inv);
      o.y = pack(g[c * 8 + 2] * inv, g[c * 8 + 3] * inv);
      o.z = pack(g[c * 8 + 4] * inv, g[c * 8 + 5] * inv);
      o.w = pack(g[c * 8 + 6] * inv, g[c * 8 + 7] * inv);
      if (HINT) __stcs(&out[(size_t)row * (COLS / 8) + c * NT + tid], o);
      else out[(size_t)row * (COLS / 8) + c * NT + tid] = o;
    }
    if (PERSIST) __syncthreads();  // the next row reuses s1..s4
  }
}

struct Bench {
  void* flush;
  cudaEvent_t a, b;
  Bench() { CK(cudaMalloc(&flush, 256 << 20)); cudaEventCreate(&a); cudaEventCreate(&b); }
  template <class F> float ms(F f) {
    for (int i = 0; i < 5; i++) f();
    std::vector<float> t;
    for (int i = 0; i < 60; i++) {
      cudaMemsetAsync(flush, i, 256 << 20);
      cudaEventRecord(a); f(); cudaEventRecord(b); cudaEventSynchronize(b);
      float m; cudaEventElapsedTime(&m, a, b); t.push_back(m);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  }
};

static float bf(uint16_t h) { uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, 4); return f; }

int main() {
  size_t n = (size_t)ROWS * COLS;
  std::vector<uint16_t> hx(n), hw(COLS), hb(COLS);
  uint64_t st = 12345;
  auto rnd = [&]() { // approx N(0,1)
    float s = 0; for (int i = 0; i < 12; i++) { st = st * 6364136223846793005ull + 1442695040888963407ull; s += (st >> 40) / float(1 << 24); }
    return s - 6.0f; };
  auto tobf = [](float f) { uint32_t u; memcpy(&u, &f, 4); u += 0x7fff + ((u >> 16) & 1); return (uint16_t)(u >> 16); };
  for (auto& v : hx) v = tobf(rnd());
  for (auto& v : hw) v = tobf(rnd());
  for (auto& v : hb) v = tobf(rnd());
  void *dx, *dw, *db, *dout, *dref, *dcopy;
  CK(cudaMalloc(&dx, n * 2)); CK(cudaMalloc(&dout, n * 2)); CK(cudaMalloc(&dref, n * 2)); CK(cudaMalloc(&dcopy, n * 2));
  CK(cudaMalloc(&dw, COLS * 2)); CK(cudaMalloc(&db, COLS * 2));
  cudaMemcpy(dx, hx.data(), n * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(dw, hw.data(), COLS * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(db, hb.data(), COLS * 2, cudaMemcpyHostToDevice);
  Bench B;
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  float copy = B.ms([&] { cudaMemcpyAsync(dcopy, dx, n * 2, cudaMemcpyDeviceToDevice); });
  printf("copy %.4f ms (%.0f GB/s)\n", copy, 2.0 * n * 2 / copy / 1e6);
  // float64 reference on a few rows
  auto check = [&](const char* name) {
    std::vector<uint16_t> ho(n);
    cudaMemcpy(ho.data(), dout, n * 2, cudaMemcpyDeviceToHost);
    double worst = 0;
    for (int r = 0; r < ROWS; r += 997) {
      std::vector<double> v(COLS);
      double m = 0, var = 0;
      for (int c = 0; c < COLS; c++) m += bf(hx[(size_t)r * COLS + c]);
      m /= COLS;
      for (int c = 0; c < COLS; c++) { double d = bf(hx[(size_t)r * COLS + c]) - m; var += d * d; }
      var /= COLS;
      double mx = -1e300;
      for (int c = 0; c < COLS; c++) {
        double xx = bf(hx[(size_t)r * COLS + c]);
        double y = (xx - m) / sqrt(var + 1e-5) * bf(hw[c]) + bf(hb[c]);
        v[c] = 0.5 * y * (1 + erf(y / sqrt(2.0))) + xx; mx = std::max(mx, v[c]);
      }
      double s = 0;
      for (int c = 0; c < COLS; c++) { v[c] = exp(v[c] - mx); s += v[c]; }
      for (int c = 0; c < COLS; c++) {
        double ref = v[c] / s, got = bf(ho[(size_t)r * COLS + c]);
        double ulp = ldexp(1.0, (int)floor(log2(std::max(ref, 1e-38))) - 7);
        worst = std::max(worst, fabs(got - ref) / ulp);
      }
    }
    return worst;
  };
  auto run = [&](const char* name, auto kern, int nt, bool persist, int wbsmem) {
    int smem = wbsmem ? COLS * 2 * 4 : 0;
    if (smem) cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    int per = 0; cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, kern, nt, smem);
    cudaFuncAttributes fa; cudaFuncGetAttributes(&fa, kern);
    int grid = persist ? std::min(ROWS, per * sms) : ROWS;
    auto f = [&] { kern<<<grid, nt, smem>>>((const uint4*)dx, (const uint4*)dw, (const uint4*)db, (uint4*)dout, ROWS); };
    cudaMemset(dout, 0, n * 2);
    f(); CK(cudaDeviceSynchronize());
    double err = check(name);
    float t = B.ms(f);
    printf("%-34s regs %3d blocks/SM %2d grid %5d  %.4f ms  %5.1f%% of copy  ulp %.2f\n", name, fa.numRegs, per, grid, t, 100 * copy / t, err);
  };
  // The structures (old GELU), then the steps fxc took (the last ones with the new GELU).
  for (int rep = 0; rep < 2; rep++) {
    run("row per block, 128 threads", norms<128, false, 0, false>, 128, false, 0);
    run("row per block, 256 threads", norms<256, false, 0, false>, 256, false, 0);
    run("row per block, 64 threads", norms<64, false, 0, false>, 64, false, 0);
    run("persistent 128, w b global", norms<128, true, 0, false>, 128, true, 0);
    run("persistent 128, w b shared", norms<128, true, 1, false>, 128, true, 1);
    run("persistent 128, shared, prefetch", norms<128, true, 1, true>, 128, true, 1);
    run("persistent 256, shared", norms<256, true, 1, false>, 256, true, 1);
    run("persistent 512, shared", norms<512, true, 1, false>, 512, true, 1);
    run("128, min 9 blocks (spills)", norms<128, false, 0, false, false, 9>, 128, false, 0);
    run("128, new GELU", norms<128, false, 0, false, false, 0, false, true>, 128, false, 0);
    run("128, new GELU, min 8", norms<128, false, 0, false, false, 8, false, true>, 128, false, 0);
    run("128, new GELU, sum(v^2)", norms<128, false, 0, false, true, 0, false, true>, 128, false, 0);
    run("128, new GELU, sum(v^2), min 8", norms<128, false, 0, false, true, 8, false, true>, 128,
        false, 0);
    run("128, new GELU, sum(v^2), min 8, hints", norms<128, false, 0, false, true, 8, true, true>,
        128, false, 0);
  }
  return 0;
}
