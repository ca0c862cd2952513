s/^      wgmma_m64n128k16<kDescriptorHigh<kCoreMatrixNStep>>(/      if (false) wgmma_m64n128k16<kDescriptorHigh<kCoreMatrixNStep>>(/
