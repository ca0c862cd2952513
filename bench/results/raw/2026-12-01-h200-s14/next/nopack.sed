/cuda::check_cuda(cuda_decode::launch_pack_activations(activations, activation_stride/,/"cuda_decode: packing the activations");/d
