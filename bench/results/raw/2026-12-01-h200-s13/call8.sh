#!/usr/bin/env bash
# Session 13, call 8 (the build of calls 6-7, the one kept): the whole GPU suite.
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
timeout 120 ./b/fp4gemm_gpu_tests --gtest_brief=1 > $OUT/gpu-tests.txt 2>&1; echo rc=$?; tail -4 $OUT/gpu-tests.txt
