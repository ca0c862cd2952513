s|  constexpr int kDepth = weight_chunks_in_flight(kMTiles) / kTilesPerWarp;|  constexpr int kDepth = (kMTiles == 3 \|\| kMTiles == 4 ? 4 : weight_chunks_in_flight(kMTiles)) / kTilesPerWarp;|
