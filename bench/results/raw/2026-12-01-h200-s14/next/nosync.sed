s#^  cluster.sync();  // every CTA's partial tile is complete (and every copy into this CTA has landed)#  if (splits > 1) cluster.sync(); else __syncthreads();#
s#^  cluster.sync();  // keeps this CTA's shared memory alive until the cluster has read it#  if (splits > 1) cluster.sync();#
