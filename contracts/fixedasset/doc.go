// Package fixedasset is Caliper's fixed-asset contract, used by the
// state-database study in docs WORKLOADS.md: assets of a chosen size stored
// under their uuid as JSON,
//
//	{"docType":"asset","uuid":…,"creator":…,"byteSize":n,"content":…}
//
// where content is the caller's content followed by 'x' padding so that
// the JSON is exactly byteSize bytes (or the unpadded JSON, when that is
// already larger). creator is the submitting identity's name.
//
//	empty_contract()                          does nothing (measures the overhead)
//	create_asset(uuid, byteSize, content)     a blind write: no read, overwrites
//	get_asset(uuid)                           the asset's JSON; 404 if missing
//	delete_asset(uuid)                        404 if missing
//	create_assets_from_batch([{uuid, byteSize, content}])   1 to 50 assets
//	get_assets_from_batch([uuid])             JSON array of assets, 1 to 50
//	read_write_assets({"read":[uuid], "write":[{uuid, byteSize, content}]})
//	                                          reads, then writes; returns the read assets
//	paginated_range_query(start, end, pageSize, bookmark)
//	                                          {"assets":[…], "bookmark":…}
//
// create_asset is a blind write, as in Caliper, so concurrent creates never
// conflict under MVCC. byteSize is 0 to MaxByteSize; a batch may not name
// a uuid twice.
package fixedasset
