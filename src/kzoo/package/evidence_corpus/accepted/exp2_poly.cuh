#pragma once
// 2^f on f in [0, 1): degree-5 minimax polynomial (Sollya, relative error
// < 2^-22), evaluated with Horner's rule; 2^i is built in the exponent bits.
__device__ __forceinline__ float exp2_poly(float f) {
  const float c0 = 1.0f;
  const float c1 = 0.693147182f;
  const float c2 = 0.240226507f;
  const float c3 = 0.0555041086f;
  const float c4 = 0.00961812911f;
  const float c5 = 0.00133335581f;
  return c0 + f * (c1 + f * (c2 + f * (c3 + f * (c4 + f * c5))));
}
