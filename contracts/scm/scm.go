package scm

import (
	"encoding/json"
	"fmt"

	"github.com/strand-ledger/strand/contract"
)

// Name is the contract's name on a channel.
const Name = "scm"

// Limits on arguments.
const (
	MaxVendors  = 1000
	MaxProducts = 100_000
	MaxBatch    = 500 // contracts per create_contracts call
	MaxQuantity = 1_000_000
	// InitialStock is the stock on hand of a vendor and product when a
	// contract first names them.
	InitialStock = 1000
)

// Order statuses, in the order an order passes them.
const (
	Placed    = "placed"
	Shipped   = "shipped"
	Delivered = "delivered"
)

// New returns the SCM contract.
func New() contract.Contract {
	r, err := contract.NewRouter(chain{})
	if err != nil {
		panic(err) // chain's methods are fixed; the tests build this router
	}
	return r
}

// Contract is a supply contract: buyer buys product from seller at price.
type Contract struct {
	ID      string `json:"id"`
	Buyer   int    `json:"buyer"`
	Seller  int    `json:"seller"`
	Product int    `json:"product"`
	Price   int64  `json:"price"`
}

// Order is an order under a contract.
type Order struct {
	ID       string `json:"id"`
	Contract string `json:"contract"`
	Quantity int64  `json:"quantity"`
	Status   string `json:"status"`
}

// Inventory is one vendor's stock of one product with the running sums
// the analytical queries need.
type Inventory struct {
	OnHand      int64 `json:"onHand"`
	Orders      int64 `json:"orders"`
	OrderSum    int64 `json:"orderSum"`
	OrderSumSq  int64 `json:"orderSumSq"`
	Demands     int64 `json:"demands"`
	DemandSum   int64 `json:"demandSum"`
	DemandSumSq int64 `json:"demandSumSq"`
}

// Supply is days_of_supply's result.
type Supply struct {
	Vendor     int     `json:"vendor"`
	Products   int     `json:"products"` // inventory records scanned
	OnHand     int64   `json:"onHand"`
	MeanDemand float64 `json:"meanDemand"` // per sale
	Days       float64 `json:"days"`       // OnHand / MeanDemand; 0 without demand
}

// Bullwhip is bullwhip's result.
type Bullwhip struct {
	Records        int     `json:"records"`
	OrderVariance  float64 `json:"orderVariance"`
	DemandVariance float64 `json:"demandVariance"`
	Coefficient    float64 `json:"coefficient"` // 0 without demand variance
}

// Keys.
func VendorKey(v int) string          { return fmt.Sprintf("vendor_%03d", v) }
func ProductKey(p int) string         { return fmt.Sprintf("product_%05d", p) }
func ContractKey(id string) string    { return "contract_" + id }
func OrderKey(id string) string       { return "order_" + id }
func InventoryKey(v, p int) string    { return fmt.Sprintf("inventory_%03d_%05d", v, p) }
func inventoryPrefix(v int) string    { return fmt.Sprintf("inventory_%03d_", v) }
func productMaker(p, vendors int) int { return p % vendors }

type chain struct{}

func (chain) ParamNames() map[string][]string {
	return map[string][]string{
		"Setup":           {"vendors", "products"},
		"CreateContracts": {"contracts"},
		"CreateContract":  {"id", "buyer", "seller", "product", "price"},
		"PlaceOrder":      {"id", "contract", "quantity"},
		"UpdateOrder":     {"id", "status"},
		"UpdateInventory": {"vendor", "product", "delta"},
		"DaysOfSupply":    {"vendor"},
	}
}

// Setup writes vendors 0..vendors-1 and products 0..products-1; product p
// is made by vendor p mod vendors.
func (chain) Setup(stub contract.Stub, vendors, products int) error {
	if vendors < 2 || vendors > MaxVendors {
		return contract.Errorf("vendors %d: want 2 to %d", vendors, MaxVendors)
	}
	if products < 1 || products > MaxProducts {
		return contract.Errorf("products %d: want 1 to %d", products, MaxProducts)
	}
	for v := range vendors {
		if err := putJSON(stub, VendorKey(v), map[string]any{"id": v, "name": fmt.Sprintf("vendor %d", v)}); err != nil {
			return err
		}
	}
	for p := range products {
		if err := putJSON(stub, ProductKey(p), map[string]any{"id": p, "maker": productMaker(p, vendors)}); err != nil {
			return err
		}
	}
	return nil
}

// CreateContracts creates 1 to MaxBatch contracts.
func (chain) CreateContracts(stub contract.Stub, cs []Contract) error {
	if len(cs) < 1 || len(cs) > MaxBatch {
		return contract.Errorf("contracts: %d in the batch, want 1 to %d", len(cs), MaxBatch)
	}
	for _, c := range cs {
		if err := createContract(stub, c); err != nil {
			return err
		}
	}
	return nil
}

// CreateContract creates one contract.
func (chain) CreateContract(stub contract.Stub, id string, buyer, seller, product int, price int64) error {
	return createContract(stub, Contract{ID: id, Buyer: buyer, Seller: seller, Product: product, Price: price})
}

func createContract(stub contract.Stub, c Contract) error {
	if err := contract.CheckKey("contract id", ContractKey(c.ID)); err != nil || c.ID == "" {
		return contract.Errorf("contract id %q: want 1 to %d bytes", c.ID, contract.MaxKeyBytes-len("contract_"))
	}
	if c.Buyer == c.Seller {
		return contract.Errorf("contract %s: buyer and seller are both vendor %d: want two vendors", c.ID, c.Buyer)
	}
	if c.Price < 0 {
		return contract.Errorf("contract %s: price %d: want at least 0", c.ID, c.Price)
	}
	for _, k := range []string{VendorKey(c.Buyer), VendorKey(c.Seller), ProductKey(c.Product)} {
		if err := mustExist(stub, k); err != nil {
			return err
		}
	}
	if err := mustNotExist(stub, ContractKey(c.ID)); err != nil {
		return err
	}
	for _, v := range []int{c.Buyer, c.Seller} {
		k := InventoryKey(v, c.Product)
		if b, err := stub.GetState(k); err != nil {
			return err
		} else if b == nil {
			if err := putJSON(stub, k, Inventory{OnHand: InitialStock}); err != nil {
				return err
			}
		}
	}
	return putJSON(stub, ContractKey(c.ID), c)
}

// PlaceOrder places order id for quantity under contract; the buyer's
// inventory record counts it.
func (chain) PlaceOrder(stub contract.Stub, id, contractID string, quantity int64) error {
	if quantity < 1 || quantity > MaxQuantity {
		return contract.Errorf("quantity %d: want 1 to %d", quantity, MaxQuantity)
	}
	var c Contract
	if err := getJSON(stub, ContractKey(contractID), &c); err != nil {
		return err
	}
	if err := contract.CheckKey("order id", OrderKey(id)); err != nil {
		return err
	}
	if err := mustNotExist(stub, OrderKey(id)); err != nil {
		return err
	}
	err := updateInventory(stub, c.Buyer, c.Product, func(inv *Inventory) {
		inv.Orders++
		inv.OrderSum += quantity
		inv.OrderSumSq += quantity * quantity
	})
	if err != nil {
		return err
	}
	return putJSON(stub, OrderKey(id), Order{ID: id, Contract: contractID, Quantity: quantity, Status: Placed})
}

// UpdateOrder moves order id to status, the next status after its
// current one: shipping takes the quantity from the seller's stock,
// delivery adds it to the buyer's.
func (chain) UpdateOrder(stub contract.Stub, id, status string) error {
	var o Order
	if err := getJSON(stub, OrderKey(id), &o); err != nil {
		return err
	}
	next := map[string]string{Placed: Shipped, Shipped: Delivered}[o.Status]
	if status != next {
		if next == "" {
			return contract.Statusf(409, "order %s is %s: it takes no further status", id, o.Status)
		}
		return contract.Statusf(409, "order %s is %s: want status %s next, got %q", id, o.Status, next, status)
	}
	var c Contract
	if err := getJSON(stub, ContractKey(o.Contract), &c); err != nil {
		return err
	}
	vendor, sign := c.Seller, int64(-1)
	if status == Delivered {
		vendor, sign = c.Buyer, 1
	}
	if err := updateInventory(stub, vendor, c.Product, func(inv *Inventory) { inv.OnHand += sign * o.Quantity }); err != nil {
		return err
	}
	o.Status = status
	return putJSON(stub, OrderKey(id), o)
}

// UpdateInventory restocks (delta > 0) or sells -delta to end customers
// (delta < 0; the demand is recorded in full, the stock never goes
// below 0).
func (chain) UpdateInventory(stub contract.Stub, vendor, product int, delta int64) error {
	if delta == 0 || delta < -MaxQuantity || delta > MaxQuantity {
		return contract.Errorf("delta %d: want -%d to %d, not 0", delta, MaxQuantity, MaxQuantity)
	}
	if err := mustExist(stub, VendorKey(vendor)); err != nil {
		return err
	}
	if err := mustExist(stub, ProductKey(product)); err != nil {
		return err
	}
	return updateInventory(stub, vendor, product, func(inv *Inventory) {
		if delta > 0 {
			inv.OnHand += delta
			return
		}
		d := -delta
		inv.OnHand = max(inv.OnHand-d, 0)
		inv.Demands++
		inv.DemandSum += d
		inv.DemandSumSq += d * d
	})
}

// DaysOfSupply scans vendor's inventory.
func (chain) DaysOfSupply(stub contract.Stub, vendor int) (*Supply, error) {
	if err := mustExist(stub, VendorKey(vendor)); err != nil {
		return nil, err
	}
	s := &Supply{Vendor: vendor}
	var demands, demandSum int64
	err := scan(stub, inventoryPrefix(vendor), func(inv *Inventory) {
		s.Products++
		s.OnHand += inv.OnHand
		demands += inv.Demands
		demandSum += inv.DemandSum
	})
	if err != nil || demands == 0 {
		return s, err
	}
	s.MeanDemand = float64(demandSum) / float64(demands)
	s.Days = float64(s.OnHand) / s.MeanDemand
	return s, nil
}

// Bullwhip scans every inventory record.
func (chain) Bullwhip(stub contract.Stub) (*Bullwhip, error) {
	b := &Bullwhip{}
	var o, d moments
	err := scan(stub, "inventory_", func(inv *Inventory) {
		b.Records++
		o.add(inv.Orders, inv.OrderSum, inv.OrderSumSq)
		d.add(inv.Demands, inv.DemandSum, inv.DemandSumSq)
	})
	if err != nil {
		return nil, err
	}
	b.OrderVariance, b.DemandVariance = o.variance(), d.variance()
	if b.DemandVariance > 0 {
		b.Coefficient = b.OrderVariance / b.DemandVariance
	}
	return b, nil
}

// moments are the count, sum and sum of squares of a quantity.
type moments struct{ n, sum, sumSq int64 }

func (m *moments) add(n, sum, sumSq int64) { m.n += n; m.sum += sum; m.sumSq += sumSq }

// variance is the population variance; each product is converted
// explicitly so that no multiply-add is fused.
func (m *moments) variance() float64 {
	if m.n == 0 {
		return 0
	}
	n := float64(m.n)
	mean := float64(m.sum) / n
	return float64(float64(m.sumSq)/n) - float64(mean*mean)
}

// scan calls fn for every inventory record whose key starts with prefix.
func scan(stub contract.Stub, prefix string, fn func(*Inventory)) error {
	bookmark := ""
	for {
		p, err := stub.GetStateByRange(prefix, prefixEnd(prefix), 1000, bookmark)
		if err != nil {
			return err
		}
		for _, kv := range p.KVs {
			var inv Inventory
			if err := json.Unmarshal(kv.Value, &inv); err != nil {
				return contract.Statusf(500, "%s does not decode: %v", kv.Key, err)
			}
			fn(&inv)
		}
		if p.Bookmark == "" {
			return nil
		}
		bookmark = p.Bookmark
	}
}

// prefixEnd is the first key after every key starting with prefix, whose
// last byte ('_') is ASCII: range bounds travel in the read set as proto
// strings, so they must be valid UTF-8 (a "\xff" suffix is not).
func prefixEnd(prefix string) string {
	return prefix[:len(prefix)-1] + string(prefix[len(prefix)-1]+1)
}

func updateInventory(stub contract.Stub, vendor, product int, fn func(*Inventory)) error {
	k := InventoryKey(vendor, product)
	var inv Inventory
	b, err := stub.GetState(k)
	if err != nil {
		return err
	}
	if b == nil {
		inv.OnHand = InitialStock
	} else if err := json.Unmarshal(b, &inv); err != nil {
		return contract.Statusf(500, "%s does not decode: %v", k, err)
	}
	fn(&inv)
	return putJSON(stub, k, inv)
}

func getJSON(stub contract.Stub, key string, v any) error {
	b, err := stub.GetState(key)
	if err != nil {
		return err
	}
	if b == nil {
		return contract.Statusf(404, "%s does not exist", key)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return contract.Statusf(500, "%s does not decode: %v", key, err)
	}
	return nil
}

func mustExist(stub contract.Stub, key string) error {
	b, err := stub.GetState(key)
	if err == nil && b == nil {
		return contract.Statusf(404, "%s does not exist", key)
	}
	return err
}

func mustNotExist(stub contract.Stub, key string) error {
	b, err := stub.GetState(key)
	if err == nil && b != nil {
		return contract.Statusf(409, "%s already exists", key)
	}
	return err
}

func putJSON(stub contract.Stub, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return stub.PutState(key, b)
}
