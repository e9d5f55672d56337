// The comparison of two 16-bit float outputs in one pass over their bytes (compare_fused.py).
//
// Why: compare.py's float32 path for 16-bit outputs (_narrow_chunk) runs about twelve torch
// kernels a chunk and moves ~76 bytes an element; on an H200 a 0.5 G-element bf16 output took
// 26.7 ms to compare, where reading its two tensors once is 2 GB (docs/PERF.md, session 27).
// This kernel reads each element of both tensors once and leaves per-thread partial figures,
// which compare_fused.py reduces with a few torch calls on a few MB.
//
// Each thread walks the elements tid, tid + nthreads, ... and keeps, for what it saw:
//   absmax  the largest |out - exp| (float32, as _narrow_chunk's aminmax of d)
//   rmax    the largest |out - exp| / (atol + rtol |exp|) (float32, the same operations in the
//           same order as _narrow_chunk: no fused multiply-add, see the build line below), or
//           |out - exp| without a bound; ridx its first index (the thread's walk is ascending)
//   sd, se  the sums of (out - exp)^2 and exp^2 in float64 (vector_norm(..., dtype=float64))
//   bad     1 where a difference or a ratio was not finite (a NaN or Inf in either tensor, or
//           a difference beyond float32's range): compare.py then takes the float64 path.
// No thread reads another's figures, so the same function run thread by thread on the host
// (KZOO_HOST, tests/test_compare_fused.py) computes exactly what the device does.
//
// Built into compare_ptx.py by scripts/gen_compare_ptx.sh (clang's NVPTX back end, sm_70,
// -ffp-contract=off); tests/test_compare_fused.py checks that compare_ptx.py is this file's. One
// kernel a format (kzoo_compare_narrow_bf16, _f16), so that the widening is fixed in each.

#ifdef KZOO_HOST
#define KZOO_DEVICE_FN static inline
#else
#define KZOO_DEVICE_FN static __attribute__((device)) inline
#endif

typedef unsigned short u16;
typedef unsigned int u32;
typedef long long i64;

// The formats compare_fused.FORMATS names.
#define KZOO_BF16 0
#define KZOO_F16 1

KZOO_DEVICE_FN float kzoo_bits_float(u32 b) { return __builtin_bit_cast(float, b); }

// Exact widenings, in integer arithmetic and selects only: no conversion instruction the host
// lacks, and no branch between a trip's loads and their use (bytes in flight, below).
template <int FMT>
KZOO_DEVICE_FN float kzoo_widen(u16 h) {
  if (FMT == KZOO_BF16) return kzoo_bits_float((u32)h << 16);
  u32 sign = (u32)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  u32 normal = sign | ((exp + 112u) << 23) | (man << 13);
  u32 special = sign | 0x7f800000u | (man << 13);  // Inf, NaN
  float sub = (float)man * 5.9604644775390625e-8f;  // man * 2^-24: exact (man < 2^10)
  sub = sign ? -sub : sub;
  float wide = kzoo_bits_float(exp == 0x1fu ? special : normal);
  return exp == 0 ? sub : wide;
}

KZOO_DEVICE_FN float kzoo_abs(float x) { return kzoo_bits_float(__builtin_bit_cast(u32, x) & 0x7fffffffu); }

// Finite: not NaN (x == x fails), not +-Inf.
KZOO_DEVICE_FN int kzoo_finite(float x) { return (int)(x == x) & (int)(kzoo_abs(x) <= 3.4028234663852886e38f); }

struct KzooAcc {
  float amax, best;
  i64 at;
  double dd, ee;
  u32 nonfinite;
};

// Branch-free, so that nothing stands between a trip's loads and their use: the ratio is taken
// either way and selected, the maxima and the flag are selects and ors.
template <int FMT>
KZOO_DEVICE_FN void kzoo_step(KzooAcc& acc, u16 ob, u16 eb, i64 i, int bounded, float atol, float rtol) {
  float o = kzoo_widen<FMT>(ob), e = kzoo_widen<FMT>(eb);
  float d = o - e;
  float a = kzoo_abs(d);
  float den = kzoo_abs(e) * rtol;
  den = den + atol;
  float q = a / den;
  float r = bounded ? q : a;
  acc.nonfinite |= (u32)(kzoo_finite(d) == 0) | (u32)(kzoo_finite(r) == 0);
  acc.amax = a > acc.amax ? a : acc.amax;
  int better = r > acc.best;
  acc.best = better ? r : acc.best;
  acc.at = better ? i : acc.at;
  acc.dd += (double)d * (double)d;
  acc.ee += (double)e * (double)e;
}

// Four elements a trip, their eight loads issued before any is used (bytes in flight: one load
// at a time a thread reads HBM at a fraction of its bandwidth), taken in ascending order as the
// one-at-a-time walk would take them: the figures, the first index of the worst among them, are
// the same.
template <int FMT>
KZOO_DEVICE_FN void kzoo_narrow_thread(i64 tid, i64 nthreads, const u16* out, const u16* exp, i64 n, int bounded, float atol, float rtol, float* absmax, float* rmax, i64* ridx,
                                       double* sd, double* se, u32* bad) {
  KzooAcc acc = {0.0f, -1.0f, -1, 0.0, 0.0, 0};
  i64 i = tid;
  for (; i + 3 * nthreads < n; i += 4 * nthreads) {
    u16 o0 = out[i], o1 = out[i + nthreads], o2 = out[i + 2 * nthreads], o3 = out[i + 3 * nthreads];
    u16 e0 = exp[i], e1 = exp[i + nthreads], e2 = exp[i + 2 * nthreads], e3 = exp[i + 3 * nthreads];
    kzoo_step<FMT>(acc, o0, e0, i, bounded, atol, rtol);
    kzoo_step<FMT>(acc, o1, e1, i + nthreads, bounded, atol, rtol);
    kzoo_step<FMT>(acc, o2, e2, i + 2 * nthreads, bounded, atol, rtol);
    kzoo_step<FMT>(acc, o3, e3, i + 3 * nthreads, bounded, atol, rtol);
  }
  for (; i < n; i += nthreads) kzoo_step<FMT>(acc, out[i], exp[i], i, bounded, atol, rtol);
  absmax[tid] = acc.amax;
  rmax[tid] = acc.best;
  ridx[tid] = acc.at;
  sd[tid] = acc.dd;
  se[tid] = acc.ee;
  bad[tid] = acc.nonfinite;
}

#ifdef KZOO_HOST
// The widening alone, for the tests' every-bit-pattern check.
extern "C" void kzoo_widen_host(const u16* in, float* out, i64 n, int fmt) {
  for (i64 i = 0; i < n; ++i) out[i] = fmt == KZOO_BF16 ? kzoo_widen<KZOO_BF16>(in[i]) : kzoo_widen<KZOO_F16>(in[i]);
}

// Every thread of a launch of `nthreads`, one after another.
extern "C" void kzoo_compare_narrow_host(i64 nthreads, const u16* out, const u16* exp, i64 n, int fmt, int bounded,
                                         float atol, float rtol, float* absmax, float* rmax, i64* ridx, double* sd,
                                         double* se, u32* bad) {
  for (i64 t = 0; t < nthreads; ++t) {
    if (fmt == KZOO_BF16)
      kzoo_narrow_thread<KZOO_BF16>(t, nthreads, out, exp, n, bounded, atol, rtol, absmax, rmax, ridx, sd, se, bad);
    else
      kzoo_narrow_thread<KZOO_F16>(t, nthreads, out, exp, n, bounded, atol, rtol, absmax, rmax, ridx, sd, se, bad);
  }
}
#else
// One kernel a format (compare_fused.KERNELS), the widening fixed in each.
#define KZOO_NARROW_KERNEL(NAME, FMT)                                                                              \
  extern "C" __attribute__((global)) void NAME(const u16* out, const u16* exp, i64 n, int bounded, float atol,     \
                                               float rtol, float* absmax, float* rmax, i64* ridx, double* sd,     \
                                               double* se, u32* bad) {                                            \
    i64 tid = (i64)__nvvm_read_ptx_sreg_ctaid_x() * __nvvm_read_ptx_sreg_ntid_x() + __nvvm_read_ptx_sreg_tid_x(); \
    i64 nthreads = (i64)__nvvm_read_ptx_sreg_nctaid_x() * __nvvm_read_ptx_sreg_ntid_x();                          \
    kzoo_narrow_thread<FMT>(tid, nthreads, out, exp, n, bounded, atol, rtol, absmax, rmax, ridx, sd, se, bad);    \
  }
KZOO_NARROW_KERNEL(kzoo_compare_narrow_bf16, KZOO_BF16)
KZOO_NARROW_KERNEL(kzoo_compare_narrow_f16, KZOO_F16)
#endif
