s|    decode_fragment(words\[block\], scales, fragment);|    fragment[0] = words[block]; fragment[1] = words[block] ^ scales.g; fragment[2] = words[block]; fragment[3] = words[block] ^ scales.g8;|
