package node_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/client"
	"github.com/strand-ledger/strand/contract/lifecycle"
)

// TestEndorsementBoundToDefinitionNet: on a running network, a
// transaction endorsed under kv's genesis definition and submitted after
// an upgrade commits MVCC_READ_CONFLICT, though its endorsements satisfy
// the new policy (the same as the old): the endorsement ran the old code.
// Endorsed again, it commits VALID; so does a second upgrade's
// transaction, endorsed under the record the first one wrote.
func TestEndorsementBoundToDefinitionNet(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network")
	}
	n := startNetwork(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kv := n.gateway(t, 0).Contract(n.ch.Channel, "kv")
	if c, err := kv.Submit(ctx, "insert", "k0", "v0"); err != nil || c.Code != api.TxValidationCode_VALID {
		t.Fatalf("kv under its genesis definition: %v, %v", c, err)
	}
	old, err := kv.Endorse(ctx, "insert", "k1", "v1")
	if err != nil {
		t.Fatal(err)
	}
	pol := "OR('Org1.peer','Org2.peer')"
	n.define(t, ctx, &lifecycle.Definition{Name: "kv", Version: "2", Sequence: 2, Runtime: lifecycle.RuntimeBuiltin, Policy: pol}, n.peers...)
	_, err = old.SubmitAndWait(ctx)
	var ce *client.CommitError
	if !errors.As(err, &ce) || ce.Code != api.TxValidationCode_MVCC_READ_CONFLICT {
		t.Fatalf("a transaction endorsed under kv's genesis definition, submitted after its upgrade: %v, want MVCC_READ_CONFLICT", err)
	}
	if c, err := kv.Submit(ctx, "insert", "k1", "v1"); err != nil || c.Code != api.TxValidationCode_VALID {
		t.Fatalf("endorsed again after the upgrade: %v, %v", c, err)
	}

	old, err = kv.Endorse(ctx, "insert", "k2", "v2")
	if err != nil {
		t.Fatal(err)
	}
	n.define(t, ctx, &lifecycle.Definition{Name: "kv", Version: "3", Sequence: 3, Runtime: lifecycle.RuntimeBuiltin, Policy: pol}, n.peers...)
	if _, err = old.SubmitAndWait(ctx); !errors.As(err, &ce) || ce.Code != api.TxValidationCode_MVCC_READ_CONFLICT {
		t.Fatalf("a transaction endorsed under kv's sequence 2, submitted after sequence 3: %v, want MVCC_READ_CONFLICT", err)
	}
	if c, err := kv.Submit(ctx, "insert", "k2", "v2"); err != nil || c.Code != api.TxValidationCode_VALID {
		t.Fatalf("endorsed again after the second upgrade: %v, %v", c, err)
	}
}
