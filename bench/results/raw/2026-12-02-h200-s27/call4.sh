#!/usr/bin/env bash
# Session 27, call 4: hmma_decode_rate (built here: nvcc -O3 -arch=sm_90a -std=c++17
# --expt-relaxed-constexpr -Isrc -Iinclude hmma_decode_rate.cu), T = 3 and two weight tiles per warp.
./out-carry/hmma_decode_rate | tee $OUT/call4-hmma_decode_rate.txt
