92s#mbarrier_init(&empty\[stage\], 32 \* kConsumerWarps \* multicast);#mbarrier_init(\&empty[stage], kConsumerWarps * multicast);#
179s#mbarrier_arrive(empty_address + 8 \* stage);#__syncwarp(); if (lane == 0) mbarrier_arrive(empty_address + 8 * stage);#
307s#config.attrs = attributes;#config.attrs = splits * multicast == 1 ? attributes + 1 : attributes;#
308s#config.numAttrs = 2;#config.numAttrs = splits * multicast == 1 ? 1 : 2;#
