// Standalone CUDA C++ checks (no torch) used to compare the clang route
// (wheelcuda --toolkit clang) against NVIDIA nvcc on the same GPU.
//
// Every test prints one line:
//   <name> checksum=<64-bit FNV-1a of the exact output bits> max_err_vs_cpu=<e> OK|FAIL
// for results that must be bit-identical between compilers (exact math,
// correctly rounded ops, sums whose partial sums are all exactly representable),
// or
//   <name> max_err_vs_cpu<=<tol> OK|FAIL
// for results where compilers may legitimately differ in the last bits
// (transcendentals, float reductions in a CUB-version-dependent order).
// Lines starting with "detail:" carry exact values that may differ between
// builds; run.sh leaves them out of the diff.
// Exit status is non-zero if any test FAILs or a CUDA call fails.

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cub/cub.cuh>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <mma.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <vector>

namespace cg = cooperative_groups;

#define CK(x)                                                                   \
    do {                                                                        \
        cudaError_t e_ = (x);                                                   \
        if (e_ != cudaSuccess) {                                                \
            printf("CUDA error %s at %s:%d: %s\n", cudaGetErrorName(e_),        \
                   __FILE__, __LINE__, cudaGetErrorString(e_));                 \
            exit(3);                                                            \
        }                                                                       \
    } while (0)

static int g_fail = 0;

// ---------------------------------------------------------------- helpers
struct Lcg {
    uint64_t s;
    explicit Lcg(uint64_t seed) : s(seed) {}
    uint32_t next() {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        return (uint32_t)(s >> 33);
    }
    // uniform in [lo, hi)
    float uni(float lo, float hi) { return lo + (hi - lo) * (next() / 2147483648.0f); }
};

static uint64_t fnv(const void *p, size_t n, uint64_t h = 1469598103934665603ULL) {
    const unsigned char *c = (const unsigned char *)p;
    for (size_t i = 0; i < n; ++i) { h ^= c[i]; h *= 1099511628211ULL; }
    return h;
}

static void report_exact(const char *name, uint64_t hash, double err, double tol) {
    bool ok = err <= tol;
    if (!ok) g_fail = 1;
    printf("%s checksum=%016llx max_err_vs_cpu=%.3g %s\n", name, (unsigned long long)hash, err,
           ok ? "OK" : "FAIL");
}

static void report_tol(const char *name, double err, double tol) {
    bool ok = err <= tol;
    if (!ok) g_fail = 1;
    printf("%s max_err_vs_cpu<=%g %s\n", name, tol, ok ? "OK" : "FAIL");
    printf("detail: %s max_err_vs_cpu=%.9g\n", name, err);
}

// host-side exact conversions (round to nearest even), independent of CUDA headers
static float bf16_bits_to_float(uint16_t b) { uint32_t u = (uint32_t)b << 16; float f; memcpy(&f, &u, 4); return f; }
static uint16_t float_to_bf16_bits(float f) {
    uint32_t u; memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
static float round_bf16(float f) { return bf16_bits_to_float(float_to_bf16_bits(f)); }

// ------------------------------------------------- (a) fp16 / bf16 arithmetic
// All ops here are correctly rounded in hardware -> bit-identical across compilers.
__global__ void half_bf16_arith(const float *a, const float *b, const float *c, int n,
                                __half *h_out, __nv_bfloat16 *bf_out, __half2 *h2_out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    __half ha = __float2half_rn(a[i]), hb = __float2half_rn(b[i]), hc = __float2half_rn(c[i]);
    h_out[3 * i + 0] = __hadd(ha, hb);
    h_out[3 * i + 1] = __hmul(ha, hb);
    h_out[3 * i + 2] = __hfma(ha, hb, hc);
    __nv_bfloat16 ba = __float2bfloat16_rn(a[i]), bb = __float2bfloat16_rn(b[i]),
                  bc = __float2bfloat16_rn(c[i]);
    bf_out[3 * i + 0] = __hadd(ba, bb);
    bf_out[3 * i + 1] = __hmul(ba, bb);
    bf_out[3 * i + 2] = __hfma(ba, bb, bc);
    __half2 x2 = __floats2half2_rn(a[i], b[i]);
    __half2 y2 = __floats2half2_rn(c[i], a[i]);
    h2_out[2 * i + 0] = __hadd2(x2, y2);
    h2_out[2 * i + 1] = __hfma2(x2, y2, __hmul2(x2, x2));
}

// bf16 exp / sqrt / rsqrt via float: may differ in last bits of the float
// result, hence only the CPU error is compared.
__global__ void bf16_transcendental(const float *a, int n, __nv_bfloat16 *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    __nv_bfloat16 x = __float2bfloat16_rn(a[i]);
    float xf = __bfloat162float(x);
    out[3 * i + 0] = __float2bfloat16_rn(expf(xf));
    out[3 * i + 1] = __float2bfloat16_rn(sqrtf(fabsf(xf)));
    out[3 * i + 2] = hexp(x);  // bf16 intrinsic (approximate)
}

static void test_half_bf16() {
    const int n = 1 << 16;
    Lcg r(1234);
    std::vector<float> a(n), b(n), c(n);
    for (int i = 0; i < n; ++i) { a[i] = r.uni(-4.f, 4.f); b[i] = r.uni(-4.f, 4.f); c[i] = r.uni(-8.f, 8.f); }
    float *da, *db, *dc; __half *dh; __nv_bfloat16 *dbf; __half2 *dh2;
    CK(cudaMalloc(&da, n * 4)); CK(cudaMalloc(&db, n * 4)); CK(cudaMalloc(&dc, n * 4));
    CK(cudaMalloc(&dh, 3 * n * 2)); CK(cudaMalloc(&dbf, 3 * n * 2)); CK(cudaMalloc(&dh2, 2 * n * 4));
    CK(cudaMemcpy(da, a.data(), n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, b.data(), n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dc, c.data(), n * 4, cudaMemcpyHostToDevice));
    half_bf16_arith<<<(n + 255) / 256, 256>>>(da, db, dc, n, dh, dbf, dh2);
    CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
    std::vector<__half> h(3 * n); std::vector<__nv_bfloat16> bf(3 * n); std::vector<__half2> h2(2 * n);
    CK(cudaMemcpy(h.data(), dh, 3 * n * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(bf.data(), dbf, 3 * n * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(h2.data(), dh2, 2 * n * 4, cudaMemcpyDeviceToHost));
    // CPU reference in double from the rounded inputs; error relative to
    // max(|ref|, 1), tolerance = one ulp of the format (fp16 2^-10, bf16 2^-7).
    double eh = 0, eb = 0;
    for (int i = 0; i < n; ++i) {
        double ha = __half2float(__float2half_rn(a[i])), hb = __half2float(__float2half_rn(b[i])),
               hc = __half2float(__float2half_rn(c[i]));
        double refh[3] = {ha + hb, ha * hb, ha * hb + hc};
        for (int k = 0; k < 3; ++k)
            eh = fmax(eh, fabs(__half2float(h[3 * i + k]) - refh[k]) / fmax(fabs(refh[k]), 1.0));
        double x0 = ha, x1 = hb, y0 = hc, y1 = ha;
        // __hmul2(x2, x2) is rounded to half before the fma
        double xx0 = __half2float(__float2half_rn((float)(x0 * x0)));
        double xx1 = __half2float(__float2half_rn((float)(x1 * x1)));
        double ref2[4] = {x0 + y0, x1 + y1, x0 * y0 + xx0, x1 * y1 + xx1};
        float got2[4] = {__low2float(h2[2 * i]), __high2float(h2[2 * i]),
                         __low2float(h2[2 * i + 1]), __high2float(h2[2 * i + 1])};
        for (int k = 0; k < 4; ++k) eh = fmax(eh, fabs(got2[k] - ref2[k]) / fmax(fabs(ref2[k]), 1.0));
        double ba = round_bf16(a[i]), bb = round_bf16(b[i]), bc = round_bf16(c[i]);
        double refb[3] = {ba + bb, ba * bb, ba * bb + bc};
        for (int k = 0; k < 3; ++k) {
            uint16_t bits; memcpy(&bits, &bf[3 * i + k], 2);
            eb = fmax(eb, fabs(bf16_bits_to_float(bits) - refb[k]) / fmax(fabs(refb[k]), 1.0));
        }
    }
    uint64_t hs = fnv(h.data(), 3 * n * 2);
    hs = fnv(h2.data(), 2 * n * 4, hs);
    report_exact("fp16_hadd_hmul_hfma_half2", hs, eh, 1.0 / 1024);
    report_exact("bf16_hadd_hmul_hfma", fnv(bf.data(), 3 * n * 2), eb, 1.0 / 128);

    // transcendental part
    __nv_bfloat16 *dt; CK(cudaMalloc(&dt, 3 * n * 2));
    bf16_transcendental<<<(n + 255) / 256, 256>>>(da, n, dt);
    CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
    std::vector<__nv_bfloat16> t(3 * n);
    CK(cudaMemcpy(t.data(), dt, 3 * n * 2, cudaMemcpyDeviceToHost));
    double et = 0;
    for (int i = 0; i < n; ++i) {
        double x = round_bf16(a[i]);
        double ref[3] = {exp(x), sqrt(fabs(x)), exp(x)};
        for (int k = 0; k < 3; ++k) {
            uint16_t bits; memcpy(&bits, &t[3 * i + k], 2);
            et = fmax(et, fabs(bf16_bits_to_float(bits) - ref[k]) / fmax(fabs(ref[k]), 1e-3));
        }
    }
    report_tol("bf16_exp_sqrt_via_float", et, 1.0 / 128);
    cudaFree(da); cudaFree(db); cudaFree(dc); cudaFree(dh); cudaFree(dbf); cudaFree(dh2); cudaFree(dt);
}

// ----------------------------------------------------------------- (b) CUB
template <typename T, int BLOCK, int ITEMS>
__global__ void block_reduce_kernel(const T *in, T *out) {
    using BR = cub::BlockReduce<T, BLOCK>;
    __shared__ typename BR::TempStorage tmp;
    T v[ITEMS];
    const T *base = in + (size_t)blockIdx.x * BLOCK * ITEMS;
    for (int k = 0; k < ITEMS; ++k) v[k] = base[k * BLOCK + threadIdx.x];
    T s = BR(tmp).Sum(v);
    if (threadIdx.x == 0) out[blockIdx.x] = s;
}

template <typename T>
static T *to_dev(const std::vector<T> &v) {
    T *d; CK(cudaMalloc(&d, v.size() * sizeof(T)));
    CK(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}

template <typename T>
static T device_sum(const T *din, int n) {
    T *dout; CK(cudaMalloc(&dout, sizeof(T)));
    size_t bytes = 0;
    CK(cub::DeviceReduce::Sum(nullptr, bytes, din, dout, n));
    void *tmp; CK(cudaMalloc(&tmp, bytes));
    CK(cub::DeviceReduce::Sum(tmp, bytes, din, dout, n));
    CK(cudaDeviceSynchronize());
    T r; CK(cudaMemcpy(&r, dout, sizeof(T), cudaMemcpyDeviceToHost));
    cudaFree(tmp); cudaFree(dout);
    return r;
}

static void test_cub() {
    constexpr int BLOCK = 256, ITEMS = 4, NB = 256;
    const int n = BLOCK * ITEMS * NB;  // 262144
    Lcg r(42);
    std::vector<int> vi(n);
    std::vector<float> vf_exact(n), vf(n);
    // vf_exact: multiples of 1/16 in [-8, 8): every partial sum of <= 2^16
    // elements is exactly representable in float, so any summation order gives
    // the same bits.  vf: generic floats (order-dependent rounding).
    for (int i = 0; i < n; ++i) {
        vi[i] = (int)(r.next() % 2001) - 1000;
        vf_exact[i] = ((int)(r.next() % 256) - 128) / 16.0f;
        vf[i] = r.uni(-1.f, 1.f);
    }
    int *di = to_dev(vi); float *dfe = to_dev(vf_exact); float *df = to_dev(vf);
    int *dbi; float *dbfe, *dbf;
    CK(cudaMalloc(&dbi, NB * 4)); CK(cudaMalloc(&dbfe, NB * 4)); CK(cudaMalloc(&dbf, NB * 4));
    block_reduce_kernel<int, BLOCK, ITEMS><<<NB, BLOCK>>>(di, dbi);
    block_reduce_kernel<float, BLOCK, ITEMS><<<NB, BLOCK>>>(dfe, dbfe);
    block_reduce_kernel<float, BLOCK, ITEMS><<<NB, BLOCK>>>(df, dbf);
    CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
    std::vector<int> bi(NB); std::vector<float> bfe(NB), bf(NB);
    CK(cudaMemcpy(bi.data(), dbi, NB * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(bfe.data(), dbfe, NB * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(bf.data(), dbf, NB * 4, cudaMemcpyDeviceToHost));
    double ei = 0, efe = 0, ef = 0;
    for (int b = 0; b < NB; ++b) {
        long long si = 0; double sfe = 0, sf = 0;
        for (int k = 0; k < BLOCK * ITEMS; ++k) {
            size_t j = (size_t)b * BLOCK * ITEMS + k;
            si += vi[j]; sfe += vf_exact[j]; sf += vf[j];
        }
        ei = fmax(ei, fabs((double)bi[b] - (double)si));
        efe = fmax(efe, fabs((double)bfe[b] - sfe));
        ef = fmax(ef, fabs((double)bf[b] - sf));
    }
    report_exact("cub_block_reduce_int", fnv(bi.data(), NB * 4), ei, 0);
    report_exact("cub_block_reduce_float_exact", fnv(bfe.data(), NB * 4), efe, 0);
    report_tol("cub_block_reduce_float", ef, 1e-4);

    long long si = 0; double sfe = 0, sf = 0;
    for (int i = 0; i < n; ++i) { si += vi[i]; sfe += vf_exact[i]; sf += vf[i]; }
    // int sum over 2^18 values in [-1000,1000] fits in int32.
    int gi = device_sum(di, n);
    report_exact("cub_device_reduce_sum_int", fnv(&gi, 4), fabs((double)gi - (double)si), 0);
    // exact floats: 2^18 elements of resolution 1/16, |sum| < 2^21 -> exact needs
    // 25 bits; use the first 2^16 elements so it stays exact (<=2^19 -> 23 bits).
    float gfe = device_sum(dfe, 1 << 16);
    double sfe16 = 0; for (int i = 0; i < (1 << 16); ++i) sfe16 += vf_exact[i];
    report_exact("cub_device_reduce_sum_float_exact", fnv(&gfe, 4), fabs(gfe - sfe16), 0);
    float gf = device_sum(df, n);
    report_tol("cub_device_reduce_sum_float", fabs(gf - sf), 1e-2);
    (void)sfe;
    cudaFree(di); cudaFree(dfe); cudaFree(df); cudaFree(dbi); cudaFree(dbfe); cudaFree(dbf);
}

// ------------------------------------------------ (c) cooperative groups
__global__ void tile_reduce_kernel(const int *in, const float *fin, int *out_shfl, int *out_cg,
                                   float *out_f, int *out_scan) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
    int gid = blockIdx.x * blockDim.x + threadIdx.x;
    int v = in[gid];
    // manual shuffle-down tree
    int s = v;
    for (int off = 16; off > 0; off >>= 1) s += tile.shfl_down(s, off);
    // cg::reduce
    int s2 = cg::reduce(tile, v, cg::plus<int>());
    float f = cg::reduce(tile, fin[gid], cg::plus<float>());  // exact-representable inputs
    // xor butterfly max + inclusive scan via shfl_up
    int m = v;
    for (int off = 16; off > 0; off >>= 1) m = max(m, tile.shfl_xor(m, off));
    int sc = v;
    for (int off = 1; off < 32; off <<= 1) {
        int t = tile.shfl_up(sc, off);
        if (tile.thread_rank() >= (unsigned)off) sc += t;
    }
    int warp = gid / 32;
    if (tile.thread_rank() == 0) { out_shfl[2 * warp] = s; out_shfl[2 * warp + 1] = m; out_cg[warp] = s2; out_f[warp] = f; }
    out_scan[gid] = sc;
}

// Grid-wide sync: phase 1 each block writes a partial sum, grid.sync(),
// phase 2 every block reads all partials; block b writes total + b.
__global__ void grid_sync_kernel(const int *in, int n, int *partials, int *out) {
    cg::grid_group grid = cg::this_grid();
    cg::thread_block block = cg::this_thread_block();
    __shared__ int sh[32];
    int s = 0;
    for (int i = grid.thread_rank(); i < n; i += grid.size()) s += in[i];
    cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
    s = cg::reduce(tile, s, cg::plus<int>());
    if (tile.thread_rank() == 0) sh[tile.meta_group_rank()] = s;
    block.sync();
    if (threadIdx.x == 0) {
        int t = 0;
        for (unsigned w = 0; w < tile.meta_group_size(); ++w) t += sh[w];
        partials[blockIdx.x] = t;
    }
    grid.sync();
    if (threadIdx.x == 0) {
        int t = 0;
        for (unsigned b = 0; b < gridDim.x; ++b) t += partials[b];
        out[blockIdx.x] = t + (int)blockIdx.x;
    }
}

static void test_cg() {
    const int nb = 64, bs = 256, n = nb * bs, nw = n / 32;
    Lcg r(7);
    std::vector<int> v(n); std::vector<float> fv(n);
    for (int i = 0; i < n; ++i) { v[i] = (int)(r.next() % 20001) - 10000; fv[i] = ((int)(r.next() % 64) - 32) / 8.0f; }
    int *dv = to_dev(v); float *dfv = to_dev(fv);
    int *ds, *dc, *dsc; float *df;
    CK(cudaMalloc(&ds, 2 * nw * 4)); CK(cudaMalloc(&dc, nw * 4)); CK(cudaMalloc(&df, nw * 4)); CK(cudaMalloc(&dsc, n * 4));
    tile_reduce_kernel<<<nb, bs>>>(dv, dfv, ds, dc, df, dsc);
    CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
    std::vector<int> s(2 * nw), c(nw), sc(n); std::vector<float> f(nw);
    CK(cudaMemcpy(s.data(), ds, 2 * nw * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(c.data(), dc, nw * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(f.data(), df, nw * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(sc.data(), dsc, n * 4, cudaMemcpyDeviceToHost));
    double err = 0;
    for (int w = 0; w < nw; ++w) {
        long long rs = 0; int rm = INT32_MIN; double rf = 0;
        for (int l = 0; l < 32; ++l) {
            rs += v[w * 32 + l]; rm = std::max(rm, v[w * 32 + l]); rf += fv[w * 32 + l];
            err = fmax(err, fabs((double)sc[w * 32 + l] - (double)rs));
        }
        err = fmax(err, fabs((double)s[2 * w] - rs));
        err = fmax(err, fabs((double)s[2 * w + 1] - rm));
        err = fmax(err, fabs((double)c[w] - rs));
        err = fmax(err, fabs((double)f[w] - rf));
    }
    uint64_t h = fnv(s.data(), 2 * nw * 4);
    h = fnv(c.data(), nw * 4, h); h = fnv(f.data(), nw * 4, h); h = fnv(sc.data(), n * 4, h);
    report_exact("cg_tile32_shfl_reduce_scan", h, err, 0);

    // grid sync via cooperative launch
    int dev = 0, coop = 0, sms = 0, occ = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    if (!coop) { printf("cg_grid_sync cooperative launch unsupported FAIL\n"); g_fail = 1; return; }
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, grid_sync_kernel, bs, 0));
    int gb = std::min(sms * occ, 128);  // result is independent of gb
    const int gn = 1 << 20;
    std::vector<int> gv(gn); long long gref = 0;
    for (int i = 0; i < gn; ++i) { gv[i] = (int)(r.next() % 201) - 100; gref += gv[i]; }
    int *dgv = to_dev(gv); int *dpart, *dout;
    CK(cudaMalloc(&dpart, gb * 4)); CK(cudaMalloc(&dout, gb * 4));
    int gn_arg = gn;
    void *args[] = {&dgv, &gn_arg, &dpart, &dout};
    CK(cudaLaunchCooperativeKernel((void *)grid_sync_kernel, dim3(gb), dim3(bs), args, 0, 0));
    CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
    std::vector<int> go(gb);
    CK(cudaMemcpy(go.data(), dout, gb * 4, cudaMemcpyDeviceToHost));
    double gerr = 0;
    for (int b = 0; b < gb; ++b) gerr = fmax(gerr, fabs((double)go[b] - (double)(gref + b)));
    int total = go[0];
    report_exact("cg_grid_sync_cooperative_launch", fnv(&total, 4), gerr, 0);
    printf("detail: cg_grid_sync blocks=%d (sms=%d occ=%d)\n", gb, sms, occ);
    cudaFree(dv); cudaFree(dfv); cudaFree(ds); cudaFree(dc); cudaFree(df); cudaFree(dsc);
    cudaFree(dgv); cudaFree(dpart); cudaFree(dout);
}

// --------------------------------------------------------------- (d) wmma
// C[M,N] = A[M,K] (row-major half) * B[K,N] (col-major half), float accum.
// Inputs are multiples of 1/8 in [-1,1]: products are exact and partial sums
// stay exactly representable, so the result is bit-exact regardless of the
// order the tensor cores accumulate in.
__global__ void wmma_gemm(const __half *A, const __half *B, float *C, int M, int N, int K) {
    using namespace nvcuda;
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int tiles_n = N / 16;
    int tm = warp / tiles_n, tn = warp % tiles_n;
    if (tm * 16 >= M) return;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(fa, A + (size_t)tm * 16 * K + k, K);
        wmma::load_matrix_sync(fb, B + (size_t)tn * 16 * K + k, K);
        wmma::mma_sync(fc, fa, fb, fc);
    }
    wmma::store_matrix_sync(C + (size_t)tm * 16 * N + tn * 16, fc, N, wmma::mem_row_major);
}

static void test_wmma() {
    const int M = 128, N = 128, K = 256;
    Lcg r(99);
    std::vector<float> a(M * K), b(K * N);  // b stored col-major: b[n*K + k]
    std::vector<__half> ha(M * K), hb(K * N);
    for (int i = 0; i < M * K; ++i) { a[i] = ((int)(r.next() % 17) - 8) / 8.0f; ha[i] = __float2half_rn(a[i]); }
    for (int i = 0; i < K * N; ++i) { b[i] = ((int)(r.next() % 17) - 8) / 8.0f; hb[i] = __float2half_rn(b[i]); }
    __half *dA = to_dev(ha), *dB = to_dev(hb); float *dC;
    CK(cudaMalloc(&dC, M * N * 4));
    int warps = (M / 16) * (N / 16);
    wmma_gemm<<<(warps * 32 + 127) / 128, 128>>>(dA, dB, dC, M, N, K);
    CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
    std::vector<float> c(M * N);
    CK(cudaMemcpy(c.data(), dC, M * N * 4, cudaMemcpyDeviceToHost));
    double err = 0;
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            double s = 0;
            for (int k = 0; k < K; ++k) s += (double)a[i * K + k] * b[j * K + k];
            err = fmax(err, fabs(c[i * N + j] - s));
        }
    report_exact("wmma_16x16x16_f16_f32", fnv(c.data(), M * N * 4), err, 0);
    cudaFree(dA); cudaFree(dB); cudaFree(dC);
}

// ------------------------------------------------ (e) float transcendentals
__global__ void float_math(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    y[4 * i + 0] = expf(v);
    y[4 * i + 1] = logf(fabsf(v) + 1.0f);
    y[4 * i + 2] = sinf(3.0f * v);
    y[4 * i + 3] = rsqrtf(v * v + 0.5f);
}

static void test_float_math() {
    const int n = 1 << 18;
    Lcg r(2024);
    std::vector<float> x(n);
    for (int i = 0; i < n; ++i) x[i] = r.uni(-10.f, 10.f);
    float *dx = to_dev(x), *dy;
    CK(cudaMalloc(&dy, 4 * n * 4));
    float_math<<<(n + 255) / 256, 256>>>(dx, dy, n);
    CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
    std::vector<float> y(4 * n);
    CK(cudaMemcpy(y.data(), dy, 4 * n * 4, cudaMemcpyDeviceToHost));
    double err = 0;  // relative error vs double (absolute for |ref| < 1)
    for (int i = 0; i < n; ++i) {
        double v = x[i];
        float v2 = x[i] * x[i] + 0.5f;  // same float rounding as the kernel
        float v3 = 3.0f * x[i];
        double ref[4] = {exp(v), log(fabs(v) + 1.0), sin((double)v3), 1.0 / sqrt((double)v2)};
        for (int k = 0; k < 4; ++k) err = fmax(err, fabs(y[4 * i + k] - ref[k]) / fmax(fabs(ref[k]), 1.0));
    }
    report_tol("float_expf_logf_sinf_rsqrtf", err, 2e-6);
    cudaFree(dx); cudaFree(dy);
}

int main() {
    int rt = 0, drv = 0;
    CK(cudaRuntimeGetVersion(&rt));
    CK(cudaDriverGetVersion(&drv));
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    printf("device: %s sm_%d%d\n", p.name, p.major, p.minor);
    printf("detail: cuda runtime %d driver %d\n", rt, drv);
    test_half_bf16();
    test_cub();
    test_cg();
    test_wmma();
    test_float_math();
    printf("RESULT %s\n", g_fail ? "FAIL" : "OK");
    return g_fail ? 1 : 0;
}
