// Package kv is the YCSB key-value contract: each record is one state key
// holding its value as it was written.
//
//	read(key)                     the value; 404 if missing
//	update(key, value)            404 if missing (reads, then writes)
//	insert(key, value)            409 if it exists (reads, then writes)
//	scan(start, count)            JSON [{"key", "value"}] of up to count keys from start
//	read_modify_write(key, value) reads the record (404 if missing), then writes value
//	delete(key)                   404 if missing
//	load([{"key", "value"}])      blind writes of 1 to MaxLoad records (bulk load)
//
// scan renders values as JSON strings, so it suits text values such as
// YCSB's; invalid UTF-8 in a value comes back as U+FFFD. count is 1 to
// MaxScan. Keys are 1 to contract.MaxKeyBytes bytes; values at most
// contract.MaxValueBytes.
package kv
