// Persistent grid: 132 SMs x 2 CTAs = 264 CTAs stay resident and pull tile
// indices from a global counter, so a 8192x8192 GEMM with 128x256 tiles
// (2048 tiles) gives each CTA about 8 tiles and no tail wave.
#include <cuda_runtime.h>

__device__ unsigned int g_next_tile;

__device__ __forceinline__ unsigned int next_tile() { return atomicAdd(&g_next_tile, 1u); }
