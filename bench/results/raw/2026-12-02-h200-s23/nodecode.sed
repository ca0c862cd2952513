s/for (int tile = 0; tile < Layout::kCtaTiles; ++tile) {/for (int tile = 0; tile < 0; ++tile) {/
