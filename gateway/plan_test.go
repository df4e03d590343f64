package gateway

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/policy"
)

func TestPlan(t *testing.T) {
	for _, tc := range []struct {
		local, expr string
		want        []string
		err         string
	}{
		{"Org1", "AND('Org1.peer','Org2.peer')", []string{"Org1", "Org2"}, ""},
		{"Org2", "AND('Org1.peer','Org2.peer')", []string{"Org2", "Org1"}, ""},
		{"Org1", "OR('Org1.peer','Org2.peer')", []string{"Org1"}, ""},
		{"Org3", "OR('Org1.peer','Org2.peer')", []string{"Org3", "Org1"}, ""},
		{"Org1", "OutOf(2,'Org1.peer','Org2.peer','Org3.peer')", []string{"Org1", "Org2"}, ""},
		{"Org3", "OutOf(2,'Org1.member','Org2.peer','Org3.peer')", []string{"Org3", "Org1"}, ""},
		{"Org1", "AND('Org1.peer','Org1.peer')", nil, "one peer of each"},
		{"Org1", "AND('Org1.admin','Org2.peer')", nil, "one peer of each"},
	} {
		got, err := plan(tc.local, policy.MustParse(tc.expr))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("plan(%s, %s) = %v, %v; want error containing %q", tc.local, tc.expr, got, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("plan(%s, %s) = %v, %v; want %v", tc.local, tc.expr, got, err, tc.want)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	_, err := New(Config{Channel: "ch"})
	if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), "LocalOrg") {
		t.Fatalf("New with no LocalOrg: %v, want ErrBadConfig naming LocalOrg", err)
	}
}

func TestMetricsString(t *testing.T) {
	var c counters
	c.endorse.Add(3)
	c.endorseRefused.Add(1)
	if s := c.snapshot().String(); !strings.Contains(s, "endorse 3 (refused 1") {
		t.Fatalf("Metrics.String() = %q", s)
	}
}
