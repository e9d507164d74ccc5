// Harness for causal-conv1d 1.7.0's CUDA kernels (csrc/causal_conv1d_fwd.cu,
// csrc/causal_conv1d_bwd.cu) without torch: fills ConvParamsBase /
// ConvParamsBwd the way csrc/causal_conv1d.cpp does (contiguous
// (batch, dim, seqlen) tensors, not channel-last, bias, silu, the
// non-deterministic backward with fp32 dweight/dbias accumulated by atomicAdd,
// as causal_conv1d/cpp_functions.py allocates them), checks against a CPU
// double-precision reference and times the kernels with cudaEvents.
//
// It writes nothing to disk: everything goes to stdout.  Exit status is
// non-zero if a check fails or a CUDA call fails.
//
// The kernels' .cu files use C10_CUDA_CHECK / C10_CUDA_KERNEL_LAUNCH_CHECK,
// which call c10::cuda::c10_cuda_check_implementation; a stub is defined below
// so that libc10 / libtorch are not needed.  c10::BFloat16 is only needed as a
// template argument (for the mangled names), so a forward declaration is enough.

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "causal_conv1d.h"

namespace c10 {
struct BFloat16;
namespace cuda {
// Stub for the symbol behind C10_CUDA_CHECK (c10/cuda/CUDAException.h).
void c10_cuda_check_implementation(const int32_t err, const char *filename,
                                   const char *function_name, const int line_number,
                                   const bool /*include_device_assertions*/) {
    if (err != 0) {
        fprintf(stderr, "CUDA error %d (%s) at %s:%d in %s\n", err,
                cudaGetErrorString((cudaError_t)err), filename, line_number, function_name);
        exit(3);
    }
}
}  // namespace cuda
}  // namespace c10

template <typename input_t, typename weight_t>
void causal_conv1d_fwd_cuda(ConvParamsBase &params, cudaStream_t stream);
template <typename input_t, typename weight_t>
void causal_conv1d_bwd_cuda(ConvParamsBwd &params, cudaStream_t stream);

#define CK(x)                                                                       \
    do {                                                                            \
        cudaError_t e_ = (x);                                                       \
        if (e_ != cudaSuccess) {                                                    \
            fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(e_),   \
                    __FILE__, __LINE__, cudaGetErrorString(e_));                    \
            exit(3);                                                                \
        }                                                                           \
    } while (0)

static const int B = 4, D = 2048, L = 4096, W = 4;
static const int WARM = 20, ITERS = 100;

struct Lcg {
    uint64_t s;
    explicit Lcg(uint64_t seed) : s(seed) {}
    uint32_t next() {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        return (uint32_t)(s >> 33);
    }
    float uni(float lo, float hi) { return lo + (hi - lo) * (next() / 2147483648.0f); }
};

static uint16_t f2bf(float f) {  // round to nearest even, as c10::BFloat16
    uint32_t u; memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
static float bf2f(uint16_t b) { uint32_t u = (uint32_t)b << 16; float f; memcpy(&f, &u, 4); return f; }

static uint64_t fnv(const void *p, size_t n) {
    const unsigned char *c = (const unsigned char *)p;
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; ++i) { h ^= c[i]; h *= 1099511628211ULL; }
    return h;
}

template <typename F>
static void parallel_for(int n, F f) {
    int nt = std::max(1u, std::min(32u, std::thread::hardware_concurrency()));
    std::vector<std::thread> th;
    for (int t = 0; t < nt; ++t)
        th.emplace_back([=] { for (int i = t; i < n; i += nt) f(i); });
    for (auto &x : th) x.join();
}

// CPU reference in double.  x,w,bias,dout are the (already rounded) inputs.
struct Ref {
    std::vector<double> out, dx, dw, db;
};
static Ref cpu_reference(const std::vector<float> &x, const std::vector<float> &w,
                         const std::vector<float> &bias, const std::vector<float> &dout) {
    Ref r;
    size_t n = (size_t)B * D * L;
    r.out.resize(n); r.dx.resize(n); r.dw.assign((size_t)D * W, 0.0); r.db.assign(D, 0.0);
    parallel_for(D, [&](int c) {
        std::vector<double> g(L);
        for (int b = 0; b < B; ++b) {
            const float *xr = &x[((size_t)b * D + c) * L];
            const float *dr = &dout[((size_t)b * D + c) * L];
            for (int t = 0; t < L; ++t) {
                double z = bias[c];
                for (int k = 0; k < W; ++k) {
                    int ti = t - (W - 1) + k;
                    if (ti >= 0) z += (double)w[c * W + k] * xr[ti];
                }
                double s = 1.0 / (1.0 + std::exp(-z));
                r.out[((size_t)b * D + c) * L + t] = z * s;
                g[t] = dr[t] * s * (1.0 + z * (1.0 - s));
                r.db[c] += g[t];
                for (int k = 0; k < W; ++k) {
                    int ti = t - (W - 1) + k;
                    if (ti >= 0) r.dw[c * W + k] += g[t] * xr[ti];
                }
            }
            for (int t = 0; t < L; ++t) {
                double s = 0;
                for (int k = 0; k < W; ++k) {
                    int to = t + (W - 1) - k;
                    if (to < L) s += g[to] * w[c * W + k];
                }
                r.dx[((size_t)b * D + c) * L + t] = s;
            }
        }
    });
    return r;
}

// allclose-style check: worst |a-r| - (atol + rtol*|r|) > 0 fails.
struct Cmp { double max_abs = 0, max_rel = 0; bool ok = true; };
static void cmp_one(Cmp &c, double got, double ref, double rtol, double atol) {
    double e = std::fabs(got - ref);
    c.max_abs = std::max(c.max_abs, e);
    c.max_rel = std::max(c.max_rel, e / std::max(std::fabs(ref), 1e-6));
    if (!(e <= atol + rtol * std::fabs(ref))) c.ok = false;
}

static int g_fail = 0;

template <typename Elem>  // Elem: float or uint16_t (bf16 bits)
static void run_case(const char *tag, bool is_bf16, double rtol, double atol) {
    const size_t n = (size_t)B * D * L;
    Lcg rng(is_bf16 ? 777 : 555);
    std::vector<float> xf(n), wf((size_t)D * W), bf(D), gf(n);
    for (auto &v : xf) v = rng.uni(-1.f, 1.f);
    for (auto &v : wf) v = rng.uni(-0.5f, 0.5f);
    for (auto &v : bf) v = rng.uni(-0.5f, 0.5f);
    for (auto &v : gf) v = rng.uni(-1.f, 1.f);
    std::vector<Elem> xe(n), we(wf.size()), be(D), ge(n);
    auto conv = [&](std::vector<float> &src, std::vector<Elem> &dst) {
        for (size_t i = 0; i < src.size(); ++i) {
            if constexpr (sizeof(Elem) == 2) { dst[i] = f2bf(src[i]); src[i] = bf2f(dst[i]); }
            else dst[i] = src[i];
        }
    };
    conv(xf, xe); conv(wf, we); conv(bf, be); conv(gf, ge);

    Elem *dx_in, *dw_in, *db_in, *dout_d, *out_d, *dx_d;
    float *dweight_d, *dbias_d;
    CK(cudaMalloc(&dx_in, n * sizeof(Elem)));
    CK(cudaMalloc(&dw_in, we.size() * sizeof(Elem)));
    CK(cudaMalloc(&db_in, D * sizeof(Elem)));
    CK(cudaMalloc(&dout_d, n * sizeof(Elem)));
    CK(cudaMalloc(&out_d, n * sizeof(Elem)));
    CK(cudaMalloc(&dx_d, n * sizeof(Elem)));
    CK(cudaMalloc(&dweight_d, (size_t)D * W * 4));
    CK(cudaMalloc(&dbias_d, D * 4));
    CK(cudaMemcpy(dx_in, xe.data(), n * sizeof(Elem), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dw_in, we.data(), we.size() * sizeof(Elem), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db_in, be.data(), D * sizeof(Elem), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dout_d, ge.data(), n * sizeof(Elem), cudaMemcpyHostToDevice));

    // --- params, as set_conv_params_fwd / set_conv_params_bwd (contiguous tensors)
    ConvParamsBase p;
    memset(&p, 0, sizeof(p));
    p.batch = B; p.dim = D; p.seqlen = L; p.width = W; p.silu_activation = true;
    p.x_ptr = dx_in; p.weight_ptr = dw_in; p.bias_ptr = db_in; p.out_ptr = out_d;
    p.x_batch_stride = D * L; p.x_c_stride = L; p.x_l_stride = 1;
    p.weight_c_stride = W; p.weight_width_stride = 1;
    p.out_batch_stride = D * L; p.out_c_stride = L; p.out_l_stride = 1;
    p.seq_idx_ptr = nullptr; p.initial_states_ptr = nullptr; p.final_states_ptr = nullptr;

    ConvParamsBwd q;
    memset(&q, 0, sizeof(q));
    static_cast<ConvParamsBase &>(q) = p;
    q.out_ptr = dout_d;  // set_conv_params_bwd passes dout as "out"
    q.dout_ptr = dout_d; q.dx_ptr = dx_d; q.dweight_ptr = dweight_d; q.dbias_ptr = dbias_d;
    q.dout_batch_stride = D * L; q.dout_c_stride = L; q.dout_l_stride = 1;
    q.dweight_c_stride = W; q.dweight_width_stride = 1;
    q.dx_batch_stride = D * L; q.dx_c_stride = L; q.dx_l_stride = 1;
    q.dinitial_states_ptr = nullptr; q.dfinal_states_ptr = nullptr;
    q.deterministic = false;
    q.dweight_workspace_ptr = nullptr; q.dbias_workspace_ptr = nullptr;

    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    auto fwd = [&] {
        if (is_bf16) causal_conv1d_fwd_cuda<c10::BFloat16, c10::BFloat16>(p, st);
        else causal_conv1d_fwd_cuda<float, float>(p, st);
    };
    auto bwd = [&] {
        if (is_bf16) causal_conv1d_bwd_cuda<c10::BFloat16, c10::BFloat16>(q, st);
        else causal_conv1d_bwd_cuda<float, float>(q, st);
    };

    // --- correctness run
    fwd();
    CK(cudaMemsetAsync(dweight_d, 0, (size_t)D * W * 4, st));
    CK(cudaMemsetAsync(dbias_d, 0, D * 4, st));
    bwd();
    CK(cudaStreamSynchronize(st));
    CK(cudaGetLastError());
    std::vector<Elem> out_h(n), dx_h(n);
    std::vector<float> dw_h((size_t)D * W), db_h(D);
    CK(cudaMemcpy(out_h.data(), out_d, n * sizeof(Elem), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(dx_h.data(), dx_d, n * sizeof(Elem), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(dw_h.data(), dweight_d, dw_h.size() * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(db_h.data(), dbias_d, D * 4, cudaMemcpyDeviceToHost));

    Ref ref = cpu_reference(xf, wf, bf, gf);
    auto val = [&](const Elem &e) -> double {
        if constexpr (sizeof(Elem) == 2) return bf2f(e); else return e;
    };
    Cmp co, cdx, cdw, cdb;
    for (size_t i = 0; i < n; ++i) {
        cmp_one(co, val(out_h[i]), ref.out[i], rtol, atol);
        cmp_one(cdx, val(dx_h[i]), ref.dx[i], rtol, atol);
    }
    for (size_t i = 0; i < dw_h.size(); ++i) cmp_one(cdw, dw_h[i], ref.dw[i], rtol, atol);
    for (int i = 0; i < D; ++i) cmp_one(cdb, db_h[i], ref.db[i], rtol, atol);
    auto pr = [&](const char *what, const Cmp &c) {
        if (!c.ok) g_fail = 1;
        printf("%s_%s max_abs_err=%.3e max_rel_err=%.3e (rtol=%g atol=%g) %s\n", what, tag,
               c.max_abs, c.max_rel, rtol, atol, c.ok ? "OK" : "FAIL");
    };
    pr("fwd_out", co); pr("bwd_dx", cdx); pr("bwd_dweight", cdw); pr("bwd_dbias", cdb);
    // Bit hashes: informational (fast-math / different compilers may differ).
    printf("hash_%s out=%016llx dx=%016llx\n", tag,
           (unsigned long long)fnv(out_h.data(), n * sizeof(Elem)),
           (unsigned long long)fnv(dx_h.data(), n * sizeof(Elem)));

    // --- timing (dweight/dbias keep accumulating during timing; not checked)
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    float ms = 0;
    for (int i = 0; i < WARM; ++i) fwd();
    CK(cudaEventRecord(e0, st));
    for (int i = 0; i < ITERS; ++i) fwd();
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    CK(cudaEventElapsedTime(&ms, e0, e1));
    printf("fwd_%s_ms=%.4f\n", tag, ms / ITERS);
    for (int i = 0; i < WARM; ++i) bwd();
    CK(cudaEventRecord(e0, st));
    for (int i = 0; i < ITERS; ++i) bwd();
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    CK(cudaEventElapsedTime(&ms, e0, e1));
    printf("bwd_%s_ms=%.4f\n", tag, ms / ITERS);
    CK(cudaGetLastError());

    cudaEventDestroy(e0); cudaEventDestroy(e1); cudaStreamDestroy(st);
    cudaFree(dx_in); cudaFree(dw_in); cudaFree(db_in); cudaFree(dout_d); cudaFree(out_d);
    cudaFree(dx_d); cudaFree(dweight_d); cudaFree(dbias_d);
}

int main() {
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    int rt = 0;
    CK(cudaRuntimeGetVersion(&rt));
    printf("device: %s sm_%d%d cudart=%d batch=%d dim=%d seqlen=%d width=%d silu=1 channel_last=0\n",
           prop.name, prop.major, prop.minor, rt, B, D, L, W);
    run_case<float>("fp32", false, 3e-4, 1e-3);
    run_case<uint16_t>("bf16", true, 3e-2, 5e-2);
    printf("RESULT %s\n", g_fail ? "FAIL" : "OK");
    return g_fail ? 1 : 0;
}
