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
// -ffp-contract=off); tests/test_compare_fused.py checks that compare_ptx.py is this file's.

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

// Exact widenings, in integer arithmetic only (no conversion instruction the host lacks).
KZOO_DEVICE_FN float kzoo_widen(u16 h, int fmt) {
  if (fmt == KZOO_BF16) return kzoo_bits_float((u32)h << 16);
  u32 sign = (u32)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (exp == 0x1fu) return kzoo_bits_float(sign | 0x7f800000u | (man << 13));  // Inf, NaN
  if (exp != 0) return kzoo_bits_float(sign | ((exp + 112u) << 23) | (man << 13));
  float sub = (float)man * 5.9604644775390625e-8f;  // man * 2^-24: exact (man < 2^10)
  return sign ? -sub : sub;
}

KZOO_DEVICE_FN float kzoo_abs(float x) { return kzoo_bits_float(__builtin_bit_cast(u32, x) & 0x7fffffffu); }

// Finite: not NaN (x == x fails), not +-Inf.
KZOO_DEVICE_FN int kzoo_finite(float x) { return x == x && kzoo_abs(x) <= 3.4028234663852886e38f; }

KZOO_DEVICE_FN void kzoo_narrow_thread(i64 tid, i64 nthreads, const u16* out, const u16* exp, i64 n, int fmt,
                                       int bounded, float atol, float rtol, float* absmax, float* rmax, i64* ridx,
                                       double* sd, double* se, u32* bad) {
  float amax = 0.0f, best = -1.0f;
  i64 at = -1;
  double dd = 0.0, ee = 0.0;
  u32 nonfinite = 0;
  for (i64 i = tid; i < n; i += nthreads) {
    float o = kzoo_widen(out[i], fmt), e = kzoo_widen(exp[i], fmt);
    float d = o - e;
    float a = kzoo_abs(d);
    float r = a;
    if (bounded) {
      float den = kzoo_abs(e) * rtol;
      den = den + atol;
      r = a / den;
    }
    if (!kzoo_finite(d) || !kzoo_finite(r)) nonfinite = 1;
    if (a > amax) amax = a;
    if (r > best) {
      best = r;
      at = i;
    }
    dd += (double)d * (double)d;
    ee += (double)e * (double)e;
  }
  absmax[tid] = amax;
  rmax[tid] = best;
  ridx[tid] = at;
  sd[tid] = dd;
  se[tid] = ee;
  bad[tid] = nonfinite;
}

#ifdef KZOO_HOST
// The widening alone, for the tests' every-bit-pattern check.
extern "C" void kzoo_widen_host(const u16* in, float* out, i64 n, int fmt) {
  for (i64 i = 0; i < n; ++i) out[i] = kzoo_widen(in[i], fmt);
}

// Every thread of a launch of `nthreads`, one after another.
extern "C" void kzoo_compare_narrow_host(i64 nthreads, const u16* out, const u16* exp, i64 n, int fmt, int bounded,
                                         float atol, float rtol, float* absmax, float* rmax, i64* ridx, double* sd,
                                         double* se, u32* bad) {
  for (i64 t = 0; t < nthreads; ++t)
    kzoo_narrow_thread(t, nthreads, out, exp, n, fmt, bounded, atol, rtol, absmax, rmax, ridx, sd, se, bad);
}
#else
extern "C" __attribute__((global)) void kzoo_compare_narrow(const u16* out, const u16* exp, i64 n, int fmt, int bounded,
                                                            float atol, float rtol, float* absmax, float* rmax,
                                                            i64* ridx, double* sd, double* se, u32* bad) {
  i64 tid = (i64)__nvvm_read_ptx_sreg_ctaid_x() * __nvvm_read_ptx_sreg_ntid_x() + __nvvm_read_ptx_sreg_tid_x();
  i64 nthreads = (i64)__nvvm_read_ptx_sreg_nctaid_x() * __nvvm_read_ptx_sreg_ntid_x();
  kzoo_narrow_thread(tid, nthreads, out, exp, n, fmt, bounded, atol, rtol, absmax, rmax, ridx, sd, se, bad);
}
#endif
