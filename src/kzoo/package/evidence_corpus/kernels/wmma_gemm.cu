// Minimal tensor-core GEMM with WMMA: each warp computes a 16x16 tile of C.
#include <cuda_fp16.h>
#include <mma.h>

using namespace nvcuda;

constexpr int WM = 16, WN = 16, WK = 16;

__global__ void wmma_gemm(const half* __restrict__ a, const half* __restrict__ b, float* __restrict__ c, int M,
                          int N, int K) {
  const int warp_m = (blockIdx.x * blockDim.x + threadIdx.x) / warpSize;
  const int warp_n = blockIdx.y * blockDim.y + threadIdx.y;
  if (warp_m * WM >= M || warp_n * WN >= N) return;
  wmma::fragment<wmma::matrix_a, WM, WN, WK, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, WM, WN, WK, half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, WM, WN, WK, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int k = 0; k < K; k += WK) {
    wmma::load_matrix_sync(fa, a + warp_m * WM * K + k, K);
    wmma::load_matrix_sync(fb, b + warp_n * WN * K + k, K);
    wmma::mma_sync(acc, fa, fb, acc);
  }
  wmma::store_matrix_sync(c + warp_m * WM * N + warp_n * WN, acc, N, wmma::mem_row_major);
}
