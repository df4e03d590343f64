/*
 * kv is a key-value contract in C against sdk/c/strand.h (host ABI v1).
 * Build it with Debian's clang, lld and wasi-libc:
 *
 *   clang --target=wasm32-wasi -O2 -mexec-model=reactor -Isdk/c -o kv.wasm examples/kv-c/kv.c
 *
 * Functions:
 *   put(key, value)      writes key and sets event "put" with the key
 *   get(key)             the value; 404 if absent
 *   del(key)             deletes an existing key; 404 if absent
 *   list(start, end, n)  up to n "key=value\n" lines of [start, end), in
 *                        key order, fetched a page of 2 at a time with
 *                        bookmarks
 *   who()                the creator's org and name, and the tx id:
 *                        "org/name@txid"
 */
#include "strand.h"

static void refused(void) {
	strand_bytes m = strand_refusal();
	strand_fail(500, (const char *)m.p, m.n);
}

static char *cstr(strand_bytes b) {
	char *s = malloc(b.n + 1);
	memcpy(s, b.p, b.n);
	s[b.n] = 0;
	return s;
}

static int want_args(const strand_call *c, uint32_t n, const char *usage) {
	if (c->nargs == n) return 1;
	strand_fail_str(400, usage);
	return 0;
}

static void put(const strand_call *c) {
	if (!want_args(c, 2, "put takes 2 arguments: key, value")) return;
	if (strand_put((const char *)c->args[0].p, c->args[0].n, c->args[1].p, c->args[1].n) == STRAND_REFUSED) {
		refused();
		return;
	}
	if (strand_set_event("put", 3, c->args[0].p, c->args[0].n) == STRAND_REFUSED) refused();
}

static void get(const strand_call *c) {
	if (!want_args(c, 1, "get takes 1 argument: key")) return;
	strand_bytes v;
	switch (strand_get_value(cstr(c->args[0]), &v)) {
	case 1:
		strand_result(v.p, v.n);
		break;
	case 0:
		strand_fail_str(404, "key does not exist");
		break;
	}
}

static void del(const strand_call *c) {
	if (!want_args(c, 1, "del takes 1 argument: key")) return;
	strand_bytes v;
	int found = strand_get_value(cstr(c->args[0]), &v);
	if (found == 0) strand_fail_str(404, "key does not exist");
	if (found != 1) return;
	if (strand_del((const char *)c->args[0].p, c->args[0].n) == STRAND_REFUSED) refused();
}

static void list(const strand_call *c) {
	if (!want_args(c, 3, "list takes 3 arguments: start, end, count")) return;
	long want = strtol(cstr(c->args[2]), 0, 10);
	size_t cap = 64, n = 0;
	char *out = malloc(cap);
	strand_bytes bookmark = {0, 0};
	for (long got = 0; got < want;) {
		uint8_t buf[512];
		int32_t len = strand_range((const char *)c->args[0].p, c->args[0].n, (const char *)c->args[1].p, c->args[1].n,
		                           (const char *)bookmark.p, bookmark.n, 2, buf, sizeof buf);
		if (len == STRAND_REFUSED) {
			refused();
			return;
		}
		strand_bytes page = len > (int32_t)sizeof buf ? strand_taken(len) : (strand_bytes){buf, len};
		strand_bytes item;
		for (uint32_t i = 1; got < want && strand_list_item(page.p, page.n, i, &item); i++) {
			if (n + item.n + 2 > cap) {
				cap = 2 * (n + item.n + 2);
				out = realloc(out, cap);
			}
			memcpy(out + n, item.p, item.n);
			n += item.n;
			out[n++] = i % 2 ? '=' : '\n';
			if (i % 2 == 0) got++;
		}
		strand_list_item(page.p, page.n, 0, &bookmark);
		if (bookmark.n == 0) break;
		bookmark.p = (uint8_t *)cstr(bookmark); /* the page's buffer is reused */
	}
	strand_result((const uint8_t *)out, (int32_t)n);
}

static void who(const strand_call *c) {
	uint8_t id[128], cr[1024];
	int32_t idn = strand_tx_id(id, sizeof id), crn = strand_creator(cr, sizeof cr);
	strand_bytes org, name;
	if (idn > (int32_t)sizeof id || crn > (int32_t)sizeof cr || !strand_list_item(cr, crn, 0, &org) || !strand_list_item(cr, crn, 2, &name)) {
		strand_fail_str(500, "tx id or creator too large");
		return;
	}
	char *out = malloc(org.n + name.n + idn + 3);
	int k = 0;
	memcpy(out + k, org.p, org.n), k += org.n, out[k++] = '/';
	memcpy(out + k, name.p, name.n), k += name.n, out[k++] = '@';
	memcpy(out + k, id, idn), k += idn;
	strand_result((const uint8_t *)out, k);
}

STRAND_CONTRACT(kv)
static void kv(const strand_call *c) {
	if (strand_is(c->fn, "put")) put(c);
	else if (strand_is(c->fn, "get")) get(c);
	else if (strand_is(c->fn, "del")) del(c);
	else if (strand_is(c->fn, "list")) list(c);
	else if (strand_is(c->fn, "who")) who(c);
	else strand_fail_str(400, "unknown function: want put, get, del, list or who");
}
