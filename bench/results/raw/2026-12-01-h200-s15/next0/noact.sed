/mbarrier_arrive_expect_bytes(barrier, Layout::kActivationBytes);/{
s//mbarrier_arrive(barrier);/
n
s/if (multicast == 1) {/if (true) { if (false)/
}
