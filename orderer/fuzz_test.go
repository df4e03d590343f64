package orderer

import (
	"context"
	"testing"
	"time"

	"github.com/strand-ledger/strand/orderer/cut"
)

// FuzzSubmit feeds arbitrary bytes to Submit: it must never panic, and it
// either admits the bytes or refuses them with one of its sentinels.
func FuzzSubmit(f *testing.F) {
	n := newTestNet(f)
	good, _ := n.tx(f, "k")
	wrongCh, _ := n.txFor(f, "ch2", n.client1, "k")
	byPeer, _ := n.txFor(f, testChannel, n.peer1, "k")
	for _, seed := range [][]byte{good, wrongCh, byPeer, good[:len(good)/2], nil, {0x0a}, {0x0a, 0x80}, []byte("garbage")} {
		f.Add(seed)
	}
	o := n.start(f, cut.Config{MaxTxs: 50, Timeout: 10 * time.Millisecond})
	f.Fuzz(func(t *testing.T, raw []byte) {
		err := o.Submit(context.Background(), raw)
		if st := StatusOf(err); st != 200 && st != 400 && st != 403 && st != 404 && st != 429 {
			t.Fatalf("Submit(%d bytes): status %d (%v)", len(raw), st, err)
		}
	})
}
