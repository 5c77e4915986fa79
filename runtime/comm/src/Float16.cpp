//===- Float16.cpp - fp16 array conversions, F16C where present -----------===//

#include "cleave/runtime/comm/Float16.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CLEAVE_F16C 1
#endif

namespace cleave::comm {

namespace {

#ifdef CLEAVE_F16C
bool hasF16c() {
  static const bool has = __builtin_cpu_supports("f16c") &&
                          __builtin_cpu_supports("avx");
  return has;
}

// VCVTPS2PH with round-to-nearest-even is IEEE's conversion, as the
// scalar one; VCVTPH2PS is exact. Tails go through the scalar path.
__attribute__((target("f16c,avx"))) void narrowF16c(const float *in,
                                                     uint16_t *out,
                                                     int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(in + i);
    __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i *>(out + i), h);
  }
  for (; i < n; ++i)
    out[i] = floatToF16(in[i]);
}

__attribute__((target("f16c,avx"))) void widenF16c(const uint16_t *in,
                                                    float *out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i *>(in + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i)
    out[i] = f16ToFloat(in[i]);
}
#endif

} // namespace

void floatsToF16(const float *in, uint16_t *out, int64_t n) {
#ifdef CLEAVE_F16C
  if (hasF16c())
    return narrowF16c(in, out, n);
#endif
  for (int64_t i = 0; i < n; ++i)
    out[i] = floatToF16(in[i]);
}

void f16ToFloats(const uint16_t *in, float *out, int64_t n) {
#ifdef CLEAVE_F16C
  if (hasF16c())
    return widenF16c(in, out, n);
#endif
  for (int64_t i = 0; i < n; ++i)
    out[i] = f16ToFloat(in[i]);
}

} // namespace cleave::comm
