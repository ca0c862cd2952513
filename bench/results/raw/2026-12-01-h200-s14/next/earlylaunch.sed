s#^  cluster.sync();  // every barrier of the cluster is initialised before any CTA copies or arrives#  cluster.sync();\n  allow_dependent_launch();#
s#^    allow_dependent_launch();$#    // (moved to the start)#
