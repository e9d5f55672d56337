// Tiled transpose through shared memory; the +1 column removes bank conflicts.
#include <cuda_runtime.h>

template <typename T, int kTile = 32, int kRows = 8>
__global__ void transpose(const T* __restrict__ in, T* __restrict__ out, int rows, int cols) {
  __shared__ T tile[kTile][kTile + 1];
  int x = blockIdx.x * kTile + threadIdx.x;
  int y = blockIdx.y * kTile + threadIdx.y;
  for (int j = 0; j < kTile; j += kRows)
    if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
  __syncthreads();
  x = blockIdx.y * kTile + threadIdx.x;
  y = blockIdx.x * kTile + threadIdx.y;
  for (int j = 0; j < kTile; j += kRows)
    if (x < rows && y + j < cols) out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}

template <typename T>
void launch_transpose(const T* in, T* out, int rows, int cols, cudaStream_t s) {
  dim3 block(32, 8);
  dim3 grid((cols + 31) / 32, (rows + 31) / 32);
  transpose<T><<<grid, block, 0, s>>>(in, out, rows, cols);
}

template void launch_transpose<float>(const float*, float*, int, int, cudaStream_t);
