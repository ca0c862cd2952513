/^cudaError_t launch(const DecodeGemmArgs& args, ProgrammaticLaunch policy, int multiprocessors, cudaStream_t stream) {$/a\
  static const cudaError_t carveout = cudaFuncSetAttribute(decode_gemm_kernel<kMTiles, kWarpsN, kWarpsK, kTilesPerWarp>, cudaFuncAttributePreferredSharedMemoryCarveout, int(cudaSharedmemCarveoutMaxL1));\
  (void)carveout;
