// Tested on: NVIDIA H100 80GB HBM3, driver 550.54.15, nvcc V12.4.131, Ubuntu 22.04.4 LTS.
#include <cuda_runtime.h>

__global__ void scale(float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
