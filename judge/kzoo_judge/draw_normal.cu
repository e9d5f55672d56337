// A floating input set drawn on the GPU in one pass over its bytes (draw_fused.py).
//
// Why: inputs.make_inputs draws a float32 normal with torch, scales each row in float32 and
// casts to the input's dtype: three kernels and ~10 bytes moved an element. On an H200 a 1 GiB
// bf16 set took 3.5 ms, and a 3-case grade makes ~370 of them (docs/PERF.md, "What an input set
// costs"); writing the set's 2 bytes an element once is ~0.25 ms.
//
// The law is inputs.py's: a float32 standard normal, times its row's factor (a float32 the judge
// draws with torch, as before), rounded once to the input's dtype. The normal comes from
// Philox4x32-10 (Salmon et al., SC 2011; the generator torch's CUDA randn uses too), keyed by
// the input's 64-bit seed, through Box-Muller:
//   u1 = r0 * 2^-32 + 2^-33 in (0, 1], t = r1 * 2^-32 in [0, 1]
//   z0 = sqrt(-2 ln u1) cos(2 pi t), z1 = sqrt(-2 ln u1) sin(2 pi t)
// and the same from (r2, r3) for the next two elements: the group g of elements 4g .. 4g+3 is
// Philox's block at counter (g, 0) -- so any element's value follows from the seed and its
// index alone, whatever the grid.
//
// ln, sin and cos are written here with float32 additions, multiplications, one division and a
// square root, all correctly rounded on either side: no fused multiply-add (the build line below),
// no libdevice. So the same source built for the host (KZOO_HOST, tests/test_draw_fused.py)
// computes every bit the device does; the tests hold it to Random123's known answers, to the
// normal law, and to torch's roundings to bf16 and f16, and draw_fused.py checks the device
// against the host's digest (draw_ptx.DIGEST) before it trusts it.
//
// Built into draw_ptx.py by scripts/gen_draw_ptx.sh (clang's NVPTX back end, sm_70,
// -ffp-contract=off). One kernel a format (kzoo_draw_normal_f32, _bf16, _f16).

#ifdef KZOO_HOST
#define KZOO_DEVICE_FN static inline
#else
#define KZOO_DEVICE_FN static __attribute__((device)) inline
#endif

typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long i64;

// The formats draw_fused.FORMATS names.
#define KZOO_F32 0
#define KZOO_BF16 1
#define KZOO_F16 2

KZOO_DEVICE_FN float kzoo_f(u32 b) { return __builtin_bit_cast(float, b); }
KZOO_DEVICE_FN u32 kzoo_u(float x) { return __builtin_bit_cast(u32, x); }

// Philox4x32-10: ten rounds of two 32x32->64 multiplications, the key bumped by the Weyl constants.
KZOO_DEVICE_FN void kzoo_philox(u32 c[4], u32 k0, u32 k1) {
  for (int r = 0; r < 10; ++r) {
    u64 p0 = (u64)0xD2511F53u * c[0], p1 = (u64)0xCD9E8D57u * c[2];
    u32 n0 = (u32)(p1 >> 32) ^ c[1] ^ k0, n1 = (u32)p1, n2 = (u32)(p0 >> 32) ^ c[3] ^ k1, n3 = (u32)p0;
    c[0] = n0, c[1] = n1, c[2] = n2, c[3] = n3;
    k0 += 0x9E3779B9u, k1 += 0xBB67AE85u;
  }
}

// ln u for u in (0, 1]: u = m 2^e with m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh(s) with
// s = (m - 1) / (m + 1), |s| <= 0.1716, its series to s^11 (the next term is below 2e-10).
KZOO_DEVICE_FN float kzoo_ln(float u) {
  u32 b = kzoo_u(u);
  int e = (int)(b >> 23) - 127;
  float m = kzoo_f((b & 0x7fffffu) | 0x3f800000u);
  int big = m > 1.41421356f;
  m = big ? m * 0.5f : m;
  e += big;
  float s = (m - 1.0f) / (m + 1.0f);
  float s2 = s * s;
  float p = 0.0909090909f;
  p = p * s2 + 0.111111111f;
  p = p * s2 + 0.142857143f;
  p = p * s2 + 0.2f;
  p = p * s2 + 0.333333333f;
  float t = s * s2;
  float lm = s * 2.0f + t * p * 2.0f;
  float fe = (float)e;
  return fe * 0.693145752f + (fe * 1.42860682e-06f + lm);  // ln 2, split: its high part exact in e
}

// sin and cos of 2 pi t for t in [0, 1]: the nearest quarter turn q, the rest a in [-pi/4, pi/4]
// through Taylor series to a^11 and a^12 (the next terms are below 2e-9).
KZOO_DEVICE_FN void kzoo_sincos_turn(float t, float* s, float* c) {
  float t4 = t * 4.0f;
  int q = (int)(t4 + 0.5f);
  float a = (t4 - (float)q) * 1.57079633f;
  float a2 = a * a;
  float ps = -2.50521084e-08f;
  ps = ps * a2 + 2.75573192e-06f;
  ps = ps * a2 - 1.98412698e-04f;
  ps = ps * a2 + 8.33333333e-03f;
  ps = ps * a2 - 1.66666667e-01f;
  float sa = a + a * a2 * ps;
  float pc = 2.08767570e-09f;
  pc = pc * a2 - 2.75573192e-07f;
  pc = pc * a2 + 2.48015873e-05f;
  pc = pc * a2 - 1.38888889e-03f;
  pc = pc * a2 + 4.16666667e-02f;
  pc = pc * a2 - 0.5f;
  float ca = 1.0f + a2 * pc;
  int k = q & 3;
  float sv = k == 0 ? sa : k == 1 ? ca : k == 2 ? -sa : -ca;
  float cv = k == 0 ? ca : k == 1 ? -sa : k == 2 ? -ca : sa;
  *s = sv;
  *c = cv;
}

#if defined(KZOO_DRAW_APPROX) && !defined(KZOO_HOST)
// A probe's variant, never the judge's (scripts/gpu/draw_probe.py; gen_ptx.sh's EXTRA): the GPU's
// approximate lg2, sqrt, sin and cos, one instruction each. Not reproducible on the host, so a
// judge using it would have to hold it to the exact kernel on the device first.
#define KZOO_APPROX(OP, X) ({ float r_; asm(OP " %0, %1;" : "=f"(r_) : "f"(X)); r_; })
KZOO_DEVICE_FN void kzoo_box_muller(u32 ra, u32 rb, float* z0, float* z1) {
  float u1 = (float)ra * 2.3283064365386963e-10f + 1.1641532182693481e-10f;
  float t = (float)rb * 2.3283064365386963e-10f;
  float rad = KZOO_APPROX("sqrt.approx.f32", KZOO_APPROX("lg2.approx.f32", u1) * -1.3862943611198906f);
  float a = (t - (float)(int)(t + 0.5f)) * 6.2831853071795865f;  // 2 pi t, reduced to [-pi, pi]
  *z0 = rad * KZOO_APPROX("cos.approx.f32", a);
  *z1 = rad * KZOO_APPROX("sin.approx.f32", a);
}
#else
KZOO_DEVICE_FN void kzoo_box_muller(u32 ra, u32 rb, float* z0, float* z1) {
  float u1 = (float)ra * 2.3283064365386963e-10f + 1.1641532182693481e-10f;
  float t = (float)rb * 2.3283064365386963e-10f;
  float rad = __builtin_sqrtf(kzoo_ln(u1) * -2.0f);
  float s, c;
  kzoo_sincos_turn(t, &s, &c);
  *z0 = rad * c;
  *z1 = rad * s;
}
#endif

// Rounded to nearest, ties to even, as torch's casts do; for the finite values drawn here.
KZOO_DEVICE_FN u16 kzoo_to_bf16(float x) {
  u32 b = kzoo_u(x);
  return (u16)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}

KZOO_DEVICE_FN u16 kzoo_to_f16(float x) {
  u32 b = kzoo_u(x);
  u32 sign = (b >> 16) & 0x8000u, ax = b & 0x7fffffffu;
  // normal in f16 (>= 2^-14): rebias the exponent, round the 13 bits dropped; beyond 65504
  // the rounding carries into the Inf pattern, which is clamped there
  u32 r = ax - 0x38000000u;
  r = (r + 0xfffu + ((r >> 13) & 1u)) >> 13;
  r = r > 0x7c00u ? 0x7c00u : r;
  // below 2^-14: a multiple of 2^-24, the implicit bit shifted in and rounded
  u32 e = ax >> 23;
  u32 sh = 126u - e;  // e <= 112 here, so sh >= 14
  u32 m = (ax & 0x7fffffu) | 0x800000u;
  u32 shc = sh > 31u ? 31u : sh;
  u32 h = m >> shc, rem = m & ((1u << shc) - 1u), half = 1u << (shc - 1u);
  h += (u32)(rem > half) | ((u32)(rem == half) & (h & 1u));
  h = sh > 25u ? 0u : h;  // below 2^-25: rounds to zero
  return (u16)(sign | (ax >= 0x38800000u ? r : h));
}

template <int FMT>
KZOO_DEVICE_FN u16 kzoo_narrow(float v) {
  return FMT == KZOO_BF16 ? kzoo_to_bf16(v) : kzoo_to_f16(v);
}

template <int FMT>
KZOO_DEVICE_FN void kzoo_store(void* out, i64 i, float v) {
  if (FMT == KZOO_F32) ((float*)out)[i] = v;
  else ((u16*)out)[i] = kzoo_narrow<FMT>(v);
}

typedef float kzoo_f4 __attribute__((vector_size(16)));

// A whole group in one store: 16 bytes (float32) or 8 (16-bit), aligned since the group starts at
// element 4g of a tensor aligned to 16 bytes (draw_fused.py checks), so a warp writes 512 or 256
// contiguous bytes an instruction.
template <int FMT>
KZOO_DEVICE_FN void kzoo_store4(void* out, i64 g, const float v[4]) {
  if (FMT == KZOO_F32) {
    kzoo_f4 w = {v[0], v[1], v[2], v[3]};
    ((kzoo_f4*)out)[g] = w;
  } else {
    u64 w = (u64)kzoo_narrow<FMT>(v[0]) | ((u64)kzoo_narrow<FMT>(v[1]) << 16) | ((u64)kzoo_narrow<FMT>(v[2]) << 32) |
            ((u64)kzoo_narrow<FMT>(v[3]) << 48);
    ((u64*)out)[g] = w;
  }
}

// One thread's groups: g = tid, tid + nthreads, ... Each group's row and column are carried from
// the last by the stride's quotient and remainder (one 64-bit division a thread, not a group).
// scale: one float32 a row of `cols` elements, or null (no rows: a factor of 1).
template <int FMT>
KZOO_DEVICE_FN void kzoo_draw_thread(i64 tid, i64 nthreads, void* out, i64 n, i64 cols, const float* scale, u32 k0, u32 k1) {
  i64 stride = nthreads * 4;
  i64 qs = stride / cols, rs = stride - qs * cols;
  i64 first = tid * 4;
  i64 row = first / cols, col = first - row * cols;
  for (i64 g = tid; g * 4 < n; g += nthreads) {
    u32 c[4] = {(u32)g, (u32)((u64)g >> 32), 0u, 0u};
    kzoo_philox(c, k0, k1);
    float z[4];
    kzoo_box_muller(c[0], c[1], &z[0], &z[1]);
    kzoo_box_muller(c[2], c[3], &z[2], &z[3]);
    i64 r = row, k = col;
    float v[4];
    if (scale && k + 4 <= cols && g * 4 + 3 < n) {
      // the group within one row (all but one group in ~cols / 4): one factor, one load
      float f = scale[r];
      v[0] = z[0] * f, v[1] = z[1] * f, v[2] = z[2] * f, v[3] = z[3] * f;
    } else {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        v[j] = scale && g * 4 + j < n ? z[j] * scale[r] : z[j];  // no row past the tensor's last
        k += 1;
        int wrap = k == cols;
        r += wrap;
        k = wrap ? 0 : k;
      }
    }
    if (g * 4 + 3 < n) {
      kzoo_store4<FMT>(out, g, v);
    } else {
#pragma unroll
      for (int j = 0; j < 3; ++j)  // the tensor's last, partial group: constant indices, v in registers
        if (g * 4 + j < n) kzoo_store<FMT>(out, g * 4 + j, v[j]);
    }
    row += qs;
    col += rs;
    int carry = col >= cols;
    row += carry;
    col = carry ? col - cols : col;
  }
}

#ifdef KZOO_HOST
// Random123's block function alone, for the known-answer tests.
extern "C" void kzoo_philox_host(u32* c, u32 k0, u32 k1) { kzoo_philox(c, k0, k1); }

extern "C" void kzoo_ln_host(const float* in, float* out, i64 n) {
  for (i64 i = 0; i < n; ++i) out[i] = kzoo_ln(in[i]);
}

extern "C" void kzoo_sincos_host(const float* in, float* s, float* c, i64 n) {
  for (i64 i = 0; i < n; ++i) kzoo_sincos_turn(in[i], &s[i], &c[i]);
}

extern "C" void kzoo_narrow_host(const float* in, u16* out, i64 n, int fmt) {
  for (i64 i = 0; i < n; ++i) out[i] = fmt == KZOO_BF16 ? kzoo_to_bf16(in[i]) : kzoo_to_f16(in[i]);
}

// Every thread of a launch of `nthreads`, one after another.
extern "C" void kzoo_draw_normal_host(i64 nthreads, void* out, i64 n, i64 cols, const float* scale, u32 k0, u32 k1, int fmt) {
  for (i64 t = 0; t < nthreads; ++t) {
    if (fmt == KZOO_F32) kzoo_draw_thread<KZOO_F32>(t, nthreads, out, n, cols, scale, k0, k1);
    if (fmt == KZOO_BF16) kzoo_draw_thread<KZOO_BF16>(t, nthreads, out, n, cols, scale, k0, k1);
    if (fmt == KZOO_F16) kzoo_draw_thread<KZOO_F16>(t, nthreads, out, n, cols, scale, k0, k1);
  }
}
#else
#define KZOO_DRAW_KERNEL(NAME, FMT)                                                                                \
  extern "C" __attribute__((global)) void NAME(void* out, i64 n, i64 cols, const float* scale, u32 k0, u32 k1) {   \
    i64 tid = (i64)__nvvm_read_ptx_sreg_ctaid_x() * __nvvm_read_ptx_sreg_ntid_x() + __nvvm_read_ptx_sreg_tid_x(); \
    i64 nthreads = (i64)__nvvm_read_ptx_sreg_nctaid_x() * __nvvm_read_ptx_sreg_ntid_x();                          \
    kzoo_draw_thread<FMT>(tid, nthreads, out, n, cols, scale, k0, k1);                                            \
  }
KZOO_DRAW_KERNEL(kzoo_draw_normal_f32, KZOO_F32)
KZOO_DRAW_KERNEL(kzoo_draw_normal_bf16, KZOO_BF16)
KZOO_DRAW_KERNEL(kzoo_draw_normal_f16, KZOO_F16)
#endif
