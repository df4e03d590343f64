package kv

import (
	"github.com/strand-ledger/strand/contract"
)

// Name is the contract's name on a channel.
const Name = "kv"

// MaxScan is the most records one scan returns (YCSB's scans are up to 100).
const MaxScan = 1000

// MaxLoad is the most records one load writes.
const MaxLoad = 1000

// New returns the key-value contract.
func New() contract.Contract {
	r, err := contract.NewRouter(store{})
	if err != nil {
		panic(err) // store's methods are fixed; the tests build this router
	}
	return r
}

// Record is one element of scan's result.
type Record struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

type store struct{}

func (store) ParamNames() map[string][]string {
	return map[string][]string{
		"Read":            {"key"},
		"Update":          {"key", "value"},
		"Insert":          {"key", "value"},
		"Scan":            {"start", "count"},
		"ReadModifyWrite": {"key", "value"},
		"Delete":          {"key"},
		"Load":            {"records"},
	}
}

// Read returns key's value.
func (store) Read(stub contract.Stub, key string) ([]byte, error) {
	return mustGet(stub, key)
}

// Update overwrites an existing key.
func (store) Update(stub contract.Stub, key string, value []byte) error {
	return overwrite(stub, key, value)
}

// ReadModifyWrite reads an existing key and then writes it, as YCSB's
// workload F does; the write does not depend on the value read.
func (store) ReadModifyWrite(stub contract.Stub, key string, value []byte) error {
	return overwrite(stub, key, value)
}

// Insert writes a new key.
func (store) Insert(stub contract.Stub, key string, value []byte) error {
	if err := checkKV(key, value); err != nil {
		return err
	}
	v, err := stub.GetState(key)
	if err != nil {
		return err
	}
	if v != nil {
		return contract.Statusf(409, "key %q already exists", key)
	}
	return stub.PutState(key, value)
}

// Scan returns up to count records in key order from start.
func (store) Scan(stub contract.Stub, start string, count int) ([]Record, error) {
	if count < 1 || count > MaxScan {
		return nil, contract.Errorf("scan count %d: want 1 to %d", count, MaxScan)
	}
	p, err := stub.GetStateByRange(start, "", count, "")
	if err != nil {
		return nil, err
	}
	recs := make([]Record, 0, len(p.KVs))
	for _, kv := range p.KVs {
		recs = append(recs, Record{Key: kv.Key, Value: string(kv.Value)})
	}
	return recs, nil
}

// Load writes 1 to MaxLoad records blindly (no read, overwriting): the
// bulk load before a YCSB run.
func (store) Load(stub contract.Stub, records []Record) error {
	if len(records) < 1 || len(records) > MaxLoad {
		return contract.Errorf("load of %d records: want 1 to %d", len(records), MaxLoad)
	}
	for _, r := range records {
		if err := checkKV(r.Key, []byte(r.Value)); err != nil {
			return err
		}
		if err := stub.PutState(r.Key, []byte(r.Value)); err != nil {
			return err
		}
	}
	return nil
}

// Delete removes an existing key.
func (store) Delete(stub contract.Stub, key string) error {
	if _, err := mustGet(stub, key); err != nil {
		return err
	}
	return stub.DelState(key)
}

func overwrite(stub contract.Stub, key string, value []byte) error {
	if err := checkKV(key, value); err != nil {
		return err
	}
	if _, err := mustGet(stub, key); err != nil {
		return err
	}
	return stub.PutState(key, value)
}

func mustGet(stub contract.Stub, key string) ([]byte, error) {
	if err := contract.CheckKey("key", key); err != nil {
		return nil, err
	}
	v, err := stub.GetState(key)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, contract.Statusf(404, "key %q does not exist", key)
	}
	return v, nil
}

func checkKV(key string, value []byte) error {
	if err := contract.CheckKey("key", key); err != nil {
		return err
	}
	return contract.CheckValue("value of key "+key, value)
}
