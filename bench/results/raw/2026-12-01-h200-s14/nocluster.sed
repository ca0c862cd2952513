307s#config.attrs = attributes;#config.attrs = splits * multicast == 1 ? attributes + 1 : attributes;#
308s#config.numAttrs = 2;#config.numAttrs = splits * multicast == 1 ? 1 : 2;#
