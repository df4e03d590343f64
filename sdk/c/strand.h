/*
 * strand.h: the C SDK for strand WebAssembly contracts, host ABI v1
 * (docs/contracts.md). Header only. Build a contract with Debian's clang,
 * lld and wasi-libc:
 *
 *   clang --target=wasm32-wasi -O2 -mexec-model=reactor -Isdk/c -o kv.wasm kv.c
 *
 * A contract defines
 *
 *   STRAND_CONTRACT(my_invoke)
 *   static void my_invoke(const strand_call *call) { ... }
 *
 * which exports strand_abi_v1 and strand_invoke. Every call starts from the
 * memory initialisation left: globals written during a call are gone at the
 * next one.
 */
#ifndef STRAND_H
#define STRAND_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define STRAND_IMPORT(name) __attribute__((import_module("strand"), import_name(name)))

/* Host functions. One answering with bytes writes them to (dst, cap) when
 * they fit and returns their length either way (-1: absent key, -2: the
 * host refused; strand_take then gives its message). */
STRAND_IMPORT("input") int32_t strand_input(uint8_t *dst, int32_t cap);
STRAND_IMPORT("tx_id") int32_t strand_tx_id(uint8_t *dst, int32_t cap);
STRAND_IMPORT("channel") int32_t strand_channel(uint8_t *dst, int32_t cap);
STRAND_IMPORT("creator") int32_t strand_creator(uint8_t *dst, int32_t cap);
STRAND_IMPORT("timestamp") int64_t strand_timestamp(void);
STRAND_IMPORT("get") int32_t strand_get(const char *key, int32_t key_len, uint8_t *dst, int32_t cap);
STRAND_IMPORT("get_multi") int32_t strand_get_multi(const uint8_t *keys, int32_t keys_len, uint8_t *dst, int32_t cap);
STRAND_IMPORT("put") int32_t strand_put(const char *key, int32_t key_len, const uint8_t *val, int32_t val_len);
STRAND_IMPORT("del") int32_t strand_del(const char *key, int32_t key_len);
STRAND_IMPORT("range") int32_t strand_range(const char *start, int32_t start_len, const char *end, int32_t end_len,
                                            const char *bookmark, int32_t bookmark_len, int32_t page_size,
                                            uint8_t *dst, int32_t cap);
STRAND_IMPORT("set_event") int32_t strand_set_event(const char *name, int32_t name_len, const uint8_t *payload, int32_t payload_len);
STRAND_IMPORT("take") int32_t strand_take(uint8_t *dst, int32_t cap);
STRAND_IMPORT("result") void strand_result(const uint8_t *p, int32_t n);
STRAND_IMPORT("fail") void strand_fail(int32_t status, const char *msg, int32_t msg_len);

#define STRAND_ABSENT (-1)
#define STRAND_REFUSED (-2)

/* strand_bytes is a byte string; malloc'd when returned by the helpers. */
typedef struct {
	uint8_t *p;
	int32_t n;
} strand_bytes;

/* strand_call is the call's function name and arguments. */
typedef struct {
	strand_bytes fn;
	uint32_t nargs;
	strand_bytes *args;
} strand_call;

/* strand_taken fetches an answer of n bytes (n >= 0) that did not fit. */
static inline strand_bytes strand_taken(int32_t n) {
	strand_bytes b = {malloc(n + 1), n};
	strand_take(b.p, n);
	b.p[n] = 0; /* NUL-terminated for convenience */
	return b;
}

/* strand_list_item finds item i of an encoded list; 0 if there is none. */
static inline int strand_list_item(const uint8_t *list, int32_t len, uint32_t i, strand_bytes *out) {
	uint32_t count, at = 4;
	if (len < 4) return 0;
	memcpy(&count, list, 4);
	for (uint32_t k = 0; k < count; k++) {
		uint32_t n;
		if (at + 4 > (uint32_t)len) return 0;
		memcpy(&n, list + at, 4);
		at += 4;
		if (n == 0xFFFFFFFFu) n = 0;
		if (at + n > (uint32_t)len) return 0;
		if (k == i) {
			out->p = (uint8_t *)list + at;
			out->n = (int32_t)n;
			return 1;
		}
		at += n;
	}
	return 0;
}

/* strand_fail_str fails the call with a status (4xx: the caller's fault)
 * and a message. */
static inline void strand_fail_str(int32_t status, const char *msg) { strand_fail(status, msg, (int32_t)strlen(msg)); }

/* strand_refusal returns the host's message for STRAND_REFUSED. */
static inline strand_bytes strand_refusal(void) { return strand_taken(strand_take(0, 0)); }

/* strand_get_value reads key: 1 and the value (malloc'd) if it exists,
 * 0 if not, -1 if the host refused (the call has been failed). */
static inline int strand_get_value(const char *key, strand_bytes *out) {
	uint8_t buf[256];
	int32_t n = strand_get(key, (int32_t)strlen(key), buf, sizeof buf);
	if (n == STRAND_ABSENT) return 0;
	if (n == STRAND_REFUSED) {
		strand_bytes m = strand_refusal();
		strand_fail(500, (const char *)m.p, m.n);
		free(m.p);
		return -1;
	}
	if (n > (int32_t)sizeof buf) {
		*out = strand_taken(n);
	} else {
		out->p = malloc(n + 1);
		memcpy(out->p, buf, n);
		out->p[n] = 0;
		out->n = n;
	}
	return 1;
}

/* STRAND_CONTRACT(handler) exports the ABI: handler runs every call with the decoded
 * input, and must end it with strand_result or strand_fail (neither: an
 * empty result). */
#define STRAND_CONTRACT(handler)                                                          \
	static void handler(const strand_call *);                                     \
	__attribute__((export_name("strand_abi_v1"))) void strand_abi_v1(void) {}      \
	__attribute__((export_name("strand_invoke"))) int32_t strand_invoke(void) {    \
		int32_t n = strand_input(0, 0);                                        \
		strand_bytes in = strand_taken(n);                                     \
		strand_call call = {{0, 0}, 0, 0};                                     \
		uint32_t count = 0;                                                    \
		memcpy(&count, in.p, 4);                                               \
		strand_list_item(in.p, in.n, 0, &call.fn);                             \
		call.nargs = count ? count - 1 : 0;                                    \
		call.args = calloc(call.nargs + 1, sizeof(strand_bytes));              \
		for (uint32_t i = 0; i < call.nargs; i++)                              \
			strand_list_item(in.p, in.n, i + 1, &call.args[i]);            \
		handler(&call);                                                         \
		return 0;                                                              \
	}

/* strand_is reports whether b equals the string s. */
static inline int strand_is(strand_bytes b, const char *s) {
	size_t n = strlen(s);
	return (size_t)b.n == n && memcmp(b.p, s, n) == 0;
}

#endif
