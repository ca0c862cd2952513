1r /tmp/var/three.cu
d
