// misbehave is the runtime tests' C contract: one function per way a
// contract can behave or break.
#include "strand.h"

__attribute__((import_module("wasi_snapshot_preview1"), import_name("sock_shutdown"))) int32_t sock_shutdown(int32_t fd, int32_t how);

static int counter; // a call must never see another call's write

static void ok(const char *s) { strand_result((const uint8_t *)s, (int32_t)strlen(s)); }

static volatile int depth; // volatile: the recursion cannot be folded away

__attribute__((noinline)) static int recurse(int n) {
	depth = n;
	if (depth < 0) return 0; // never: depth only grows from 0
	return recurse(n + 1) + depth;
}

STRAND_CONTRACT(run)
static void run(const strand_call *c) {
	if (strand_is(c->fn, "echo")) { // the arguments, joined by '|'
		size_t n = 0;
		for (uint32_t i = 0; i < c->nargs; i++) n += c->args[i].n + 1;
		uint8_t *out = malloc(n + 1), *p = out;
		for (uint32_t i = 0; i < c->nargs; i++) {
			if (i) *p++ = '|';
			memcpy(p, c->args[i].p, c->args[i].n);
			p += c->args[i].n;
		}
		strand_result(out, (int32_t)(p - out));
	} else if (strand_is(c->fn, "counter")) { // 1 on every call
		char s[16];
		counter++;
		s[0] = '0' + (char)(counter % 10);
		s[1] = 0;
		ok(s);
	} else if (strand_is(c->fn, "trap")) {
		__builtin_trap();
	} else if (strand_is(c->fn, "loop")) {
		for (volatile int i = 0;; i++) {
		}
	} else if (strand_is(c->fn, "recurse")) { // until the fuel or the stack runs out
		recurse(0);
		ok("unreachable");
	} else if (strand_is(c->fn, "grow")) { // until the cap refuses
		while (__builtin_wasm_memory_grow(0, 1) != (size_t)-1) {
		}
		__builtin_trap();
	} else if (strand_is(c->fn, "refused")) {
		sock_shutdown(3, 0);
		ok("unreachable");
	} else if (strand_is(c->fn, "badptr")) {
		strand_put("k", 1, (const uint8_t *)0x7ffffff0, 64);
		ok("unreachable");
	} else if (strand_is(c->fn, "badkey")) { // the host's refusal, as the result
		int32_t rc = strand_put("", 0, (const uint8_t *)"v", 1);
		if (rc != STRAND_REFUSED) {
			strand_fail_str(500, "empty key accepted");
			return;
		}
		strand_bytes m = strand_refusal();
		strand_result(m.p, m.n);
	} else if (strand_is(c->fn, "fail")) {
		strand_fail_str(404, "no such thing");
	} else if (strand_is(c->fn, "big")) { // a value larger than any first buffer
		strand_bytes v;
		if (strand_get_value("big", &v) == 1) strand_result(v.p, v.n);
	} else {
		strand_fail_str(400, "unknown function");
	}
}
