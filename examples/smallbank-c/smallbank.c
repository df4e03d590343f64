/*
 * smallbank is the Smallbank contract (contracts/smallbank, the peer's
 * built-in Go code) written in C against sdk/c/strand.h (host ABI v1).
 * Build it with Debian's clang, lld and wasi-libc:
 *
 *   clang --target=wasm32-wasi -O2 -mexec-model=reactor -Isdk/c -o smallbank.wasm examples/smallbank-c/smallbank.c
 *
 * It answers exactly as the Go contract does: the same functions under
 * the same names (Go, lowerCamel and snake_case), the same results, the
 * same errors with the same statuses and messages (contract.Router's
 * for unknown functions, argument counts and arguments that do not
 * parse), and the same reads and writes in the same order, so a
 * transaction's read/write set does not depend on which of the two ran
 * it. contracts/smallbank's TestFunctionsC and TestInvariantC run the Go
 * contract's tables against it. It is what `strand bench --contract-runtime
 * wasm` runs by default (docs/contracts.md says why).
 *
 * Quoting (Go's %q) is exact for ASCII and valid UTF-8; an invalid byte
 * is escaped as \xNN, as Go does.
 */
#include <inttypes.h>
#include <stdio.h>

#include "strand.h"

#define MAX_ID_BYTES 256
#define MAX_NAME_BYTES 1024
#define MAX_CREATED 1000

/* ---- messages ---------------------------------------------------------- */

/* msg is the message being built; every call fails at most once. */
static char msg[4096];
static size_t msg_n;

static void msg_reset(void) { msg_n = 0; msg[0] = 0; }

static void msg_add(const char *p, size_t n) {
	if (n > sizeof msg - 1 - msg_n) n = sizeof msg - 1 - msg_n;
	memcpy(msg + msg_n, p, n);
	msg_n += n;
	msg[msg_n] = 0;
}

static void msg_str(const char *s) { msg_add(s, strlen(s)); }

static void msg_fmt(const char *fmt, int64_t v) {
	char b[32];
	int n = snprintf(b, sizeof b, fmt, v);
	msg_add(b, (size_t)n);
}

static void msg_int(int64_t v) { msg_fmt("%" PRId64, v); }

/* utf8_len is the length of the valid UTF-8 sequence at p (n bytes left),
 * 0 if there is none. */
static int utf8_len(const uint8_t *p, size_t n) {
	uint32_t c;
	int len;
	if (p[0] < 0x80) return 1;
	if (p[0] >= 0xC2 && p[0] <= 0xDF) len = 2, c = p[0] & 0x1F;
	else if (p[0] >= 0xE0 && p[0] <= 0xEF) len = 3, c = p[0] & 0x0F;
	else if (p[0] >= 0xF0 && p[0] <= 0xF4) len = 4, c = p[0] & 0x07;
	else return 0;
	if ((size_t)len > n) return 0;
	for (int i = 1; i < len; i++) {
		if ((p[i] & 0xC0) != 0x80) return 0;
		c = c << 6 | (p[i] & 0x3F);
	}
	if ((len == 3 && c < 0x800) || (len == 4 && (c < 0x10000 || c > 0x10FFFF)) || (c >= 0xD800 && c <= 0xDFFF)) return 0;
	return len;
}

/* msg_quote appends Go's strconv.Quote of b. */
static void msg_quote(const uint8_t *b, size_t n) {
	static const char hex[] = "0123456789abcdef";
	msg_add("\"", 1);
	for (size_t i = 0; i < n;) {
		uint8_t c = b[i];
		int l = utf8_len(b + i, n - i);
		if (l > 1) {
			msg_add((const char *)b + i, (size_t)l);
			i += (size_t)l;
			continue;
		}
		i++;
		switch (c) {
		case '"': msg_str("\\\""); continue;
		case '\\': msg_str("\\\\"); continue;
		case '\a': msg_str("\\a"); continue;
		case '\b': msg_str("\\b"); continue;
		case '\f': msg_str("\\f"); continue;
		case '\n': msg_str("\\n"); continue;
		case '\r': msg_str("\\r"); continue;
		case '\t': msg_str("\\t"); continue;
		case '\v': msg_str("\\v"); continue;
		}
		if (c >= 0x20 && c < 0x7F) {
			msg_add((const char *)&c, 1);
		} else {
			char e[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
			msg_add(e, 4);
		}
	}
	msg_add("\"", 1);
}

/* msg_clipped appends %q of s cut to 64 bytes and "..." (smallbank's clip). */
static void msg_clipped(strand_bytes s) {
	if (s.n > 64) {
		uint8_t b[67];
		memcpy(b, s.p, 64);
		memcpy(b + 64, "...", 3);
		msg_quote(b, 67);
	} else {
		msg_quote(s.p, (size_t)s.n);
	}
}

/* fail ends the call with msg; status 0 is a plain error (500). */
static int fail(int32_t status) {
	strand_fail(status, msg, (int32_t)msg_n);
	return -1;
}

/* refused fails the call with the host's refusal, as a plain error. */
static int refused(void) {
	strand_bytes m = strand_refusal();
	strand_fail(0, (const char *)m.p, m.n);
	return -1;
}

/* ---- state --------------------------------------------------------------- */

/* A key is a prefix and an account id. */
typedef struct {
	const char *prefix; /* "checking_", "savings_", "account_" */
	strand_bytes id;
} key;

static size_t key_len(key k) { return strlen(k.prefix) + (size_t)k.id.n; }

static char *key_write(key k, char *dst) {
	size_t p = strlen(k.prefix);
	memcpy(dst, k.prefix, p);
	memcpy(dst + p, k.id.p, (size_t)k.id.n);
	return dst + p + (size_t)k.id.n;
}

static uint8_t answer[4096];

static void put_u32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

/* get reads n balances (smallbank's get): 0 and the values, or -1 with the
 * call failed (404 for a missing account, a plain error for a balance that
 * is no decimal integer or a refusal). */
static int parse_int(const uint8_t *p, size_t n, int64_t *out);

static int get(const key *keys, int n, int64_t *out) {
	uint8_t req[4 + 3 * (4 + 9 + MAX_ID_BYTES)];
	uint8_t *w = req + 4;
	put_u32(req, (uint32_t)n);
	for (int i = 0; i < n; i++) {
		put_u32(w, (uint32_t)key_len(keys[i]));
		w = (uint8_t *)key_write(keys[i], (char *)w + 4);
	}
	int32_t len = strand_get_multi(req, (int32_t)(w - req), answer, sizeof answer);
	if (len == STRAND_REFUSED) return refused();
	const uint8_t *a = answer;
	if (len > (int32_t)sizeof answer) a = strand_taken(len).p;
	for (int i = 0; i < n; i++) {
		strand_bytes v;
		uint32_t raw;
		/* An absent value has length 0xFFFFFFFF, which strand_list_item
		 * reports as empty: look at the length itself. */
		if (!strand_list_item(a, len, (uint32_t)i, &v)) return refused();
		memcpy(&raw, v.p - 4, 4);
		if (raw == 0xFFFFFFFFu) {
			msg_reset();
			msg_str("account ");
			msg_quote(keys[i].id.p, (size_t)keys[i].id.n);
			msg_str(" does not exist (no ");
			char k[9 + MAX_ID_BYTES];
			msg_add(k, (size_t)(key_write(keys[i], k) - k));
			msg_str(")");
			return fail(404);
		}
		if (parse_int(v.p, (size_t)v.n, &out[i]) != 0) {
			char k[9 + MAX_ID_BYTES];
			msg_reset();
			msg_str("smallbank: balance ");
			msg_add(k, (size_t)(key_write(keys[i], k) - k));
			msg_str(" is ");
			msg_clipped(v);
			msg_str(": want a decimal integer");
			return fail(0);
		}
	}
	return 0;
}

static int put_raw(key k, const uint8_t *v, int32_t n) {
	char kb[9 + MAX_ID_BYTES];
	size_t kn = (size_t)(key_write(k, kb) - kb);
	if (strand_put(kb, (int32_t)kn, v, n) == STRAND_REFUSED) return refused();
	return 0;
}

static int put(key k, int64_t v) {
	char b[24];
	int n = snprintf(b, sizeof b, "%" PRId64, v);
	return put_raw(k, (const uint8_t *)b, n);
}

/* ---- checks ---------------------------------------------------------------- */

/* parse_int is strconv.ParseInt(s, 10, 64): an optional sign and decimal
 * digits, in range. */
static int parse_int(const uint8_t *p, size_t n, int64_t *out) {
	int neg = 0;
	uint64_t v = 0, lim;
	if (n > 0 && (p[0] == '+' || p[0] == '-')) neg = p[0] == '-', p++, n--;
	if (n == 0) return -1;
	lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9') return -1;
		if (v > (lim - (uint64_t)(p[i] - '0')) / 10) return -1;
		v = v * 10 + (uint64_t)(p[i] - '0');
	}
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return 0;
}

static int check_id(const char *what, strand_bytes id) {
	if (id.n == 0 || id.n > MAX_ID_BYTES) {
		msg_reset();
		msg_str(what);
		msg_str(" ");
		msg_clipped(id);
		msg_str(" is ");
		msg_int(id.n);
		msg_str(" bytes: want 1 to ");
		msg_int(MAX_ID_BYTES);
		return fail(400);
	}
	return 0;
}

static int same(strand_bytes a, strand_bytes b) { return a.n == b.n && memcmp(a.p, b.p, (size_t)a.n) == 0; }

static int check_pair(strand_bytes src, strand_bytes dst) {
	if (check_id("src", src) || check_id("dst", dst)) return -1;
	if (same(src, dst)) {
		msg_reset();
		msg_str("src and dst are both account ");
		msg_quote(src.p, (size_t)src.n);
		msg_str(": want two different accounts");
		return fail(400);
	}
	return 0;
}

static int check_amount(int64_t amount) {
	if (amount < 1) {
		msg_reset();
		msg_str("amount ");
		msg_int(amount);
		msg_str(": want 1 or more");
		return fail(400);
	}
	return 0;
}

/* add is bal+delta, or a 400 naming the account if that overflows. */
static int add(strand_bytes id, int64_t bal, int64_t delta, int64_t *out) {
	if ((delta > 0 && bal > INT64_MAX - delta) || (delta < 0 && bal < INT64_MIN - delta)) {
		msg_reset();
		msg_str("balance ");
		msg_int(bal);
		msg_str(" of account ");
		msg_quote(id.p, (size_t)id.n);
		msg_str(" ");
		msg_fmt("%+" PRId64, delta);
		msg_str(" overflows int64");
		return fail(400);
	}
	*out = bal + delta;
	return 0;
}

/* ---- functions ------------------------------------------------------------- */

/* A call's decoded arguments: strings stay bytes, integers are parsed. */
typedef struct {
	strand_bytes s[4];
	int64_t i[4];
} args;

static key checking(strand_bytes id) { return (key){"checking_", id}; }
static key savings(strand_bytes id) { return (key){"savings_", id}; }

static int create(strand_bytes id, strand_bytes name, int named, int64_t c, int64_t s) {
	if (c < 0 || s < 0) {
		msg_reset();
		msg_str("initial balances of account ");
		msg_quote(id.p, (size_t)id.n);
		msg_str(" are ");
		msg_int(c);
		msg_str(" and ");
		msg_int(s);
		msg_str(": want 0 or more");
		return fail(400);
	}
	key ks[2] = {checking(id), savings(id)};
	/* get_multi, not get: a missing account is no error here. */
	uint8_t req[4 + 2 * (4 + 9 + MAX_ID_BYTES)], *w = req + 4;
	put_u32(req, 2);
	for (int i = 0; i < 2; i++) {
		put_u32(w, (uint32_t)key_len(ks[i]));
		w = (uint8_t *)key_write(ks[i], (char *)w + 4);
	}
	int32_t len = strand_get_multi(req, (int32_t)(w - req), answer, sizeof answer);
	if (len == STRAND_REFUSED) return refused();
	const uint8_t *a = answer;
	if (len > (int32_t)sizeof answer) a = strand_taken(len).p;
	for (int i = 0; i < 2; i++) {
		strand_bytes v;
		uint32_t raw;
		if (!strand_list_item(a, len, (uint32_t)i, &v)) return refused();
		memcpy(&raw, v.p - 4, 4);
		if (raw != 0xFFFFFFFFu) {
			msg_reset();
			msg_str("account ");
			msg_quote(id.p, (size_t)id.n);
			msg_str(" already exists");
			return fail(409);
		}
	}
	if (put(ks[0], c) || put(ks[1], s)) return -1;
	if (named) return put_raw((key){"account_", id}, name.p, name.n);
	return 0;
}

static int create_account(const args *a) {
	if (check_id("id", a->s[0])) return -1;
	if (a->s[1].n > MAX_NAME_BYTES) {
		msg_reset();
		msg_str("name of account ");
		msg_quote(a->s[0].p, (size_t)a->s[0].n);
		msg_str(" is ");
		msg_int(a->s[1].n);
		msg_str(" bytes: want at most ");
		msg_int(MAX_NAME_BYTES);
		return fail(400);
	}
	return create(a->s[0], a->s[1], 1, a->i[2], a->i[3]);
}

static int create_accounts(const args *a) {
	int64_t first = a->i[0], count = a->i[1];
	if (first < 0) {
		msg_reset();
		msg_str("first account ");
		msg_int(first);
		msg_str(": want 0 or more");
		return fail(400);
	}
	if (count < 1 || count > MAX_CREATED) {
		msg_reset();
		msg_str("count ");
		msg_int(count);
		msg_str(": want 1 to ");
		msg_int(MAX_CREATED);
		return fail(400);
	}
	if (first > INT64_MAX - count) {
		msg_reset();
		msg_str("accounts ");
		msg_int(first);
		msg_str("+");
		msg_int(count);
		msg_str(" overflow int64");
		return fail(400);
	}
	for (int64_t id = first; id < first + count; id++) {
		char b[24];
		int n = snprintf(b, sizeof b, "%" PRId64, id);
		if (create((strand_bytes){(uint8_t *)b, n}, (strand_bytes){0, 0}, 0, a->i[2], a->i[3])) return -1;
	}
	return 0;
}

/* add_to adds sign*amount to the balance at k (deposit_checking,
 * write_check, transact_savings). */
static int add_to(strand_bytes id, key k, int64_t sign, int64_t amount) {
	int64_t b, n;
	if (check_id("id", id) || check_amount(amount) || get(&k, 1, &b) || add(id, b, sign * amount, &n)) return -1;
	return put(k, n);
}

static int deposit_checking(const args *a) { return add_to(a->s[0], checking(a->s[0]), +1, a->i[1]); }
static int write_check(const args *a) { return add_to(a->s[0], checking(a->s[0]), -1, a->i[1]); }
static int transact_savings(const args *a) { return add_to(a->s[0], savings(a->s[0]), +1, a->i[1]); }

static char result[64];
static int result_n;

static int write_check_hstore(const args *a) {
	strand_bytes id = a->s[0];
	int64_t amount = a->i[1], b[2], total, bal;
	key ks[2] = {checking(id), savings(id)};
	if (check_id("id", id) || check_amount(amount) || get(ks, 2, b)) return -1;
	int64_t taken = amount;
	/* add's overflow is no error here: a total past int64 is not below
	 * amount. Checked without failing the call. */
	if (!((b[1] > 0 && b[0] > INT64_MAX - b[1]) || (b[1] < 0 && b[0] < INT64_MIN - b[1]))) {
		total = b[0] + b[1];
		if (total < amount) taken++;
	}
	if (add(id, b[0], -taken, &bal)) return -1;
	result_n = snprintf(result, sizeof result, "%" PRId64, taken);
	return put(ks[0], bal);
}

static int send_payment(const args *a) {
	strand_bytes src = a->s[0], dst = a->s[1];
	int64_t amount = a->i[2], b[2], sb, db;
	key ks[2] = {checking(src), checking(dst)};
	if (check_pair(src, dst) || check_amount(amount) || get(ks, 2, b)) return -1;
	if (b[0] < amount) {
		msg_reset();
		msg_str("insufficient funds: account ");
		msg_quote(src.p, (size_t)src.n);
		msg_str(" has ");
		msg_int(b[0]);
		msg_str(" in checking, the payment is ");
		msg_int(amount);
		msg_str("; send_payment does not overdraw (write_check may)");
		return fail(409);
	}
	if (add(src, b[0], -amount, &sb) || add(dst, b[1], amount, &db)) return -1;
	if (put(ks[0], sb)) return -1;
	return put(ks[1], db);
}

static int amalgamate(const args *a) {
	strand_bytes src = a->s[0], dst = a->s[1];
	int64_t b[3], total;
	key ks[3] = {checking(src), savings(src), checking(dst)};
	if (check_pair(src, dst) || get(ks, 3, b) || add(dst, b[2], b[0], &total) || add(dst, total, b[1], &total)) return -1;
	if (put(ks[0], 0) || put(ks[1], 0)) return -1;
	return put(ks[2], total);
}

static int query(const args *a) {
	int64_t b[2];
	key ks[2] = {checking(a->s[0]), savings(a->s[0])};
	if (check_id("id", a->s[0]) || get(ks, 2, b)) return -1;
	result_n = snprintf(result, sizeof result, "{\"checking\":%" PRId64 ",\"savings\":%" PRId64 "}", b[0], b[1]);
	return 0;
}

/* ---- the router -------------------------------------------------------------- */

/* A parameter's type: 's' string, 'I' int64, 'i' int (64 bits, as Go's on
 * wasm and amd64). */
typedef struct {
	const char *go, *camel, *snake;
	int (*fn)(const args *);
	int nparams;
	const char *names[4];
	const char *types; /* one letter per parameter */
} function;

static const function functions[] = {
	{"Amalgamate", "amalgamate", "amalgamate", amalgamate, 2, {"src", "dst"}, "ss"},
	{"CreateAccount", "createAccount", "create_account", create_account, 4, {"id", "name", "checking", "savings"}, "ssII"},
	{"CreateAccounts", "createAccounts", "create_accounts", create_accounts, 4, {"first", "count", "checking", "savings"}, "IiII"},
	{"DepositChecking", "depositChecking", "deposit_checking", deposit_checking, 2, {"id", "amount"}, "sI"},
	{"Query", "query", "query", query, 1, {"id"}, "s"},
	{"SendPayment", "sendPayment", "send_payment", send_payment, 3, {"src", "dst", "amount"}, "ssI"},
	{"TransactSavings", "transactSavings", "transact_savings", transact_savings, 2, {"id", "amount"}, "sI"},
	{"WriteCheck", "writeCheck", "write_check", write_check, 2, {"id", "amount"}, "sI"},
	{"WriteCheckHstore", "writeCheckHstore", "write_check_hstore", write_check_hstore, 2, {"id", "amount"}, "sI"},
};
#define NFUNCTIONS (sizeof functions / sizeof functions[0])

static const char *type_name(char t) { return t == 's' ? "string" : t == 'I' ? "int64" : "int"; }

/* msg_arg appends contract.Router's quote of an argument: %q, cut at 64
 * bytes with the length after. */
static void msg_arg(strand_bytes b) {
	if (b.n <= 64) {
		msg_quote(b.p, (size_t)b.n);
		return;
	}
	msg_quote(b.p, 64);
	msg_str("... (");
	msg_int(b.n);
	msg_str(" bytes)");
}

static void smallbank(const strand_call *call) {
	const function *f = 0;
	for (size_t i = 0; i < NFUNCTIONS && !f; i++)
		if (strand_is(call->fn, functions[i].go) || strand_is(call->fn, functions[i].camel) || strand_is(call->fn, functions[i].snake))
			f = &functions[i];
	if (!f) {
		msg_reset();
		msg_str("unknown function ");
		msg_arg(call->fn);
		msg_str(": want one of ");
		for (size_t i = 0; i < NFUNCTIONS; i++) {
			if (i) msg_str(", ");
			msg_str(functions[i].snake);
		}
		fail(400);
		return;
	}
	if ((int)call->nargs != f->nparams) {
		msg_reset();
		msg_add((const char *)call->fn.p, (size_t)call->fn.n);
		msg_str(" takes ");
		msg_int(f->nparams);
		msg_str(f->nparams == 1 ? " argument (" : " arguments (");
		for (int i = 0; i < f->nparams; i++) {
			if (i) msg_str(", ");
			msg_str(f->names[i]);
			msg_str(" ");
			msg_str(type_name(f->types[i]));
		}
		msg_str("), got ");
		msg_int(call->nargs);
		fail(400);
		return;
	}
	args a;
	for (int i = 0; i < f->nparams; i++) {
		a.s[i] = call->args[i];
		if (f->types[i] != 's' && parse_int(a.s[i].p, (size_t)a.s[i].n, &a.i[i]) != 0) {
			msg_reset();
			msg_str("argument ");
			msg_int(i + 1);
			msg_str(" (");
			msg_str(f->names[i]);
			msg_str(") of ");
			msg_add((const char *)call->fn.p, (size_t)call->fn.n);
			msg_str(": ");
			msg_arg(a.s[i]);
			msg_str(" is not an ");
			msg_str(type_name(f->types[i]));
			fail(400);
			return;
		}
	}
	result_n = 0;
	if (f->fn(&a) == 0) strand_result((const uint8_t *)result, result_n); /* empty when the function has no result, as the Go SDK's */
}

STRAND_CONTRACT(smallbank)
