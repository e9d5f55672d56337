#pragma once
// Reference numbers for the regression check.
struct GemmResult {
  int m, n, k;
  float ms;
};

static const GemmResult kResults[] = {
    {4096, 4096, 4096, 0.4127f},
    {8192, 8192, 8192, 3.1854f},
    {16384, 4096, 4096, 1.6032f},
};
