#pragma once
#include <cutlass/gemm/device/gemm_universal.h>

// Hopper warp-specialised GEMM: 128x256x64 tiles, 2x1 cluster, 4 stages.
using ElementA = cutlass::bfloat16_t;
using ElementB = cutlass::bfloat16_t;
using ElementC = cutlass::bfloat16_t;
using TileShape = cute::Shape<cute::_128, cute::_256, cute::_64>;
using ClusterShape = cute::Shape<cute::_2, cute::_1, cute::_1>;
constexpr int kStages = 4;
constexpr int kAlignment = 128 / cutlass::sizeof_bits<ElementA>::value;
