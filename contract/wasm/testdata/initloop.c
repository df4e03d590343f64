// initloop never finishes initialising: a constructor, run by
// _initialize, loops forever.
#include "strand.h"

__attribute__((constructor)) static void spin(void) {
	for (volatile int i = 0;; i++) {
	}
}

STRAND_CONTRACT(run)
static void run(const strand_call *c) { strand_result(c->fn.p, (int32_t)c->fn.n); }
