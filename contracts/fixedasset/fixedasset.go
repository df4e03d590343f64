package fixedasset

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/strand-ledger/strand/contract"
)

// Name is the contract's name on a channel.
const Name = "fixedasset"

// Limits on arguments.
const (
	MaxBatch    = 50      // assets per batch call
	MaxByteSize = 1 << 20 // an asset's byteSize
	MaxPageSize = 1000    // paginated_range_query's pageSize
)

// DocType is every asset's docType.
const DocType = "asset"

// New returns the fixed-asset contract.
func New() contract.Contract {
	r, err := contract.NewRouter(assets{})
	if err != nil {
		panic(err) // assets' methods are fixed; the tests build this router
	}
	return r
}

// Asset is the stored document.
type Asset struct {
	DocType  string `json:"docType"`
	UUID     string `json:"uuid"`
	Creator  string `json:"creator"`
	ByteSize int    `json:"byteSize"`
	Content  string `json:"content"`
}

// Spec is what a client asks to create.
type Spec struct {
	UUID     string `json:"uuid"`
	ByteSize int    `json:"byteSize"`
	Content  string `json:"content"`
}

// ReadWrite is read_write_assets' argument.
type ReadWrite struct {
	Read  []string `json:"read"`
	Write []Spec   `json:"write"`
}

// Page is paginated_range_query's result.
type Page struct {
	Assets   []json.RawMessage `json:"assets"`
	Bookmark string            `json:"bookmark"`
}

type assets struct{}

func (assets) ParamNames() map[string][]string {
	return map[string][]string{
		"CreateAsset":           {"uuid", "byteSize", "content"},
		"GetAsset":              {"uuid"},
		"DeleteAsset":           {"uuid"},
		"CreateAssetsFromBatch": {"assets"},
		"GetAssetsFromBatch":    {"uuids"},
		"ReadWriteAssets":       {"sets"},
		"PaginatedRangeQuery":   {"start", "end", "pageSize", "bookmark"},
	}
}

// EmptyContract does nothing.
func (assets) EmptyContract(stub contract.Stub) error { return nil }

// CreateAsset writes an asset of about byteSize bytes.
func (assets) CreateAsset(stub contract.Stub, uuid string, byteSize int, content string) error {
	return create(stub, Spec{UUID: uuid, ByteSize: byteSize, Content: content})
}

// GetAsset returns an asset's JSON.
func (assets) GetAsset(stub contract.Stub, uuid string) ([]byte, error) {
	vs, err := getAll(stub, []string{uuid})
	if err != nil {
		return nil, err
	}
	return vs[0], nil
}

// DeleteAsset removes an asset.
func (assets) DeleteAsset(stub contract.Stub, uuid string) error {
	if _, err := getAll(stub, []string{uuid}); err != nil {
		return err
	}
	return stub.DelState(uuid)
}

// CreateAssetsFromBatch writes 1 to MaxBatch assets.
func (assets) CreateAssetsFromBatch(stub contract.Stub, batch []Spec) error {
	if err := checkBatch("assets", len(batch), 1); err != nil {
		return err
	}
	return createAll(stub, batch)
}

// GetAssetsFromBatch returns 1 to MaxBatch assets as a JSON array.
func (assets) GetAssetsFromBatch(stub contract.Stub, uuids []string) ([]json.RawMessage, error) {
	if err := checkBatch("uuids", len(uuids), 1); err != nil {
		return nil, err
	}
	return getAll(stub, uuids)
}

// ReadWriteAssets reads sets.Read, then writes sets.Write (each 0 to
// MaxBatch, together at least one), and returns the assets read.
func (assets) ReadWriteAssets(stub contract.Stub, sets ReadWrite) ([]json.RawMessage, error) {
	if err := checkBatch("read", len(sets.Read), 0); err != nil {
		return nil, err
	}
	if err := checkBatch("write", len(sets.Write), 0); err != nil {
		return nil, err
	}
	if len(sets.Read)+len(sets.Write) == 0 {
		return nil, contract.Errorf("read and write are both empty: want at least one asset")
	}
	read := []json.RawMessage{}
	if len(sets.Read) > 0 {
		var err error
		if read, err = getAll(stub, sets.Read); err != nil {
			return nil, err
		}
	}
	return read, createAll(stub, sets.Write)
}

// PaginatedRangeQuery returns a page of up to pageSize assets with uuids in
// [start, end) from bookmark, and the bookmark of the next page (empty
// after the last).
func (assets) PaginatedRangeQuery(stub contract.Stub, start, end string, pageSize int, bookmark string) (Page, error) {
	if pageSize < 1 || pageSize > MaxPageSize {
		return Page{}, contract.Errorf("pageSize %d: want 1 to %d", pageSize, MaxPageSize)
	}
	if end != "" && start >= end {
		return Page{}, contract.Errorf("range [%q, %q) is empty: want start < end, or an empty end", start, end)
	}
	p, err := stub.GetStateByRange(start, end, pageSize, bookmark)
	if err != nil {
		return Page{}, err
	}
	out := Page{Assets: make([]json.RawMessage, 0, len(p.KVs)), Bookmark: p.Bookmark}
	for _, kv := range p.KVs {
		if !json.Valid(kv.Value) {
			return Page{}, fmt.Errorf("fixedasset: value of key %q is not JSON", kv.Key)
		}
		out.Assets = append(out.Assets, kv.Value)
	}
	return out, nil
}

func checkBatch(what string, n, least int) error {
	if n < least || n > MaxBatch {
		return contract.Errorf("%s holds %d entries: want %d to %d", what, n, least, MaxBatch)
	}
	return nil
}

func createAll(stub contract.Stub, specs []Spec) error {
	seen := make(map[string]bool, len(specs))
	for i, s := range specs {
		if seen[s.UUID] {
			return contract.Errorf("uuid %q appears twice in the batch (again at entry %d): want distinct uuids", s.UUID, i+1)
		}
		seen[s.UUID] = true
	}
	for _, s := range specs {
		if err := create(stub, s); err != nil {
			return err
		}
	}
	return nil
}

// create writes the asset s describes, padded to s.ByteSize.
func create(stub contract.Stub, s Spec) error {
	if err := contract.CheckKey("uuid", s.UUID); err != nil {
		return err
	}
	if s.ByteSize < 0 || s.ByteSize > MaxByteSize {
		return contract.Errorf("byteSize %d of asset %q: want 0 to %d", s.ByteSize, s.UUID, MaxByteSize)
	}
	if len(s.Content) > MaxByteSize {
		return contract.Errorf("content of asset %q is %d bytes: want at most %d", s.UUID, len(s.Content), MaxByteSize)
	}
	a := Asset{DocType: DocType, UUID: s.UUID, Creator: stub.Creator().Name, ByteSize: s.ByteSize, Content: s.Content}
	b, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("fixedasset: encoding asset %q: %w", s.UUID, err)
	}
	if pad := s.ByteSize - len(b); pad > 0 {
		a.Content += strings.Repeat("x", pad)
		if b, err = json.Marshal(a); err != nil {
			return fmt.Errorf("fixedasset: encoding asset %q: %w", s.UUID, err)
		}
	}
	return stub.PutState(s.UUID, b)
}

// getAll reads assets; a missing one is a 404 naming its uuid.
func getAll(stub contract.Stub, uuids []string) ([]json.RawMessage, error) {
	for _, u := range uuids {
		if err := contract.CheckKey("uuid", u); err != nil {
			return nil, err
		}
	}
	vs, err := stub.GetMultipleStates(uuids...)
	if err != nil {
		return nil, err
	}
	out := make([]json.RawMessage, len(vs))
	for i, v := range vs {
		if v == nil {
			return nil, contract.Statusf(404, "asset %q does not exist", uuids[i])
		}
		out[i] = v
	}
	return out, nil
}
