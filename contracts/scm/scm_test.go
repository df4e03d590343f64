package scm

import (
	"encoding/json"
	"testing"

	"github.com/strand-ledger/strand/contracts/internal/memstub"
)

func setup(t *testing.T) *memstub.Stub {
	t.Helper()
	s := memstub.New()
	c := New()
	if _, err := s.Call(c, "setup", "3", "6"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Call(c, "create_contracts", `[{"id":"c1","buyer":0,"seller":1,"product":1,"price":5},{"id":"c2","buyer":2,"seller":1,"product":1,"price":6}]`); err != nil {
		t.Fatal(err)
	}
	return s
}

func inventory(t *testing.T, s *memstub.Stub, v, p int) Inventory {
	t.Helper()
	var inv Inventory
	if err := json.Unmarshal(s.Get(InventoryKey(v, p)), &inv); err != nil {
		t.Fatalf("inventory %d/%d: %v", v, p, err)
	}
	return inv
}

func TestOrderLifecycle(t *testing.T) {
	s, c := setup(t), New()
	for _, step := range []struct {
		fn   string
		args []string
	}{
		{"place_order", []string{"o1", "c1", "10"}},
		{"update_order", []string{"o1", Shipped}},
		{"update_order", []string{"o1", Delivered}},
		{"update_inventory", []string{"0", "1", "-4"}},
		{"update_inventory", []string{"0", "1", "-6"}},
	} {
		if _, err := s.Call(c, step.fn, step.args...); err != nil {
			t.Fatalf("%s%v: %v", step.fn, step.args, err)
		}
	}
	if got := inventory(t, s, 1, 1).OnHand; got != InitialStock-10 {
		t.Fatalf("seller stock %d, want %d", got, InitialStock-10)
	}
	buyer := inventory(t, s, 0, 1)
	want := Inventory{OnHand: InitialStock + 10 - 10, Orders: 1, OrderSum: 10, OrderSumSq: 100, Demands: 2, DemandSum: 10, DemandSumSq: 52}
	if buyer != want {
		t.Fatalf("buyer inventory %+v, want %+v", buyer, want)
	}
	out, err := s.Call(c, "days_of_supply", "0")
	if err != nil || string(out) != `{"vendor":0,"products":1,"onHand":1000,"meanDemand":5,"days":200}` {
		t.Fatalf("days_of_supply = %s, %v", out, err)
	}
	out, err = s.Call(c, "bullwhip")
	// orders: one of 10 → variance 0; demand 4 and 6 → variance 1.
	if err != nil || string(out) != `{"records":3,"orderVariance":0,"demandVariance":1,"coefficient":0}` {
		t.Fatalf("bullwhip = %s, %v", out, err)
	}
	if len(s.Writes()) != 0 {
		t.Fatalf("bullwhip wrote %v", s.Writes())
	}
}

func TestErrors(t *testing.T) {
	c := New()
	for _, tc := range []struct {
		fn     string
		args   []string
		status int
		errHas string
	}{
		{"create_contract", []string{"c3", "1", "1", "1", "5"}, 400, "buyer and seller are both vendor 1"},
		{"create_contract", []string{"c1", "0", "1", "1", "5"}, 409, "contract_c1 already exists"},
		{"create_contract", []string{"c3", "0", "9", "1", "5"}, 404, "vendor_009 does not exist"},
		{"place_order", []string{"o1", "nope", "1"}, 404, "contract_nope does not exist"},
		{"place_order", []string{"o1", "c1", "0"}, 400, "quantity 0"},
		{"update_order", []string{"o9", Shipped}, 404, "order_o9 does not exist"},
		{"update_inventory", []string{"0", "1", "0"}, 400, "delta 0"},
		{"setup", []string{"1", "5"}, 400, "vendors 1: want 2 to 1000"},
	} {
		_, err := setup(t).Call(c, tc.fn, tc.args...)
		memstub.WantError(t, tc.fn, err, tc.status, tc.errHas)
	}
	s := setup(t)
	s.Call(c, "place_order", "o1", "c1", "3")
	_, err := s.Call(c, "update_order", "o1", Delivered)
	memstub.WantError(t, "update_order", err, 409, "want status shipped next")
}
