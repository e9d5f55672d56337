#pragma once
// {M, N} -> {BLOCK_M, BLOCK_N, BLOCK_K, STAGES}, from the sweep
static const int kTiles[][6] = {
    {{4096, 4096}, {128, 256, 64, 3}},
    {{8192, 8192}, {128, 256, 64, 4}},
    {{16, 8192}, {16, 64, 256, 5}},
    {{64, 8192}, {64, 64, 128, 4}},
};
