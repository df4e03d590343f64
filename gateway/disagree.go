package gateway

import (
	"bytes"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
)

// difference names the first part in which two endorsers' response
// payloads differ: the result, the event, or a key of the read or write
// set. Equal reads with different results or writes mean a nondeterministic
// contract (the clock, randomness, a map's order, a runtime that differs);
// different read versions mean peers at different heights.
func difference(a, b []byte) string {
	pa, errA := api.DecodeResponsePayload(a)
	pb, errB := api.DecodeResponsePayload(b)
	if errA != nil || errB != nil {
		return "one of them does not decode"
	}
	if !bytes.Equal(pa.Result, pb.Result) {
		return fmt.Sprintf("the results differ (%.32q and %.32q): a nondeterministic contract", pa.Result, pb.Result)
	}
	if !proto.Equal(pa.Event, pb.Event) {
		return "the events differ: a nondeterministic contract"
	}
	na, nb := pa.GetRwset().GetNamespaces(), pb.GetRwset().GetNamespaces()
	if len(na) != len(nb) {
		return fmt.Sprintf("the read/write sets touch %d and %d namespaces", len(na), len(nb))
	}
	for i := range na {
		if d := nsDifference(na[i], nb[i]); d != "" {
			return fmt.Sprintf("in namespace %q %s", na[i].Namespace, d)
		}
	}
	return fmt.Sprintf("status %d/%d, message %q/%q", pa.Status, pb.Status, pa.Message, pb.Message)
}

func nsDifference(a, b *api.NsRWSet) string {
	for i := 0; i < max(len(a.Reads), len(b.Reads)); i++ {
		if i >= len(a.Reads) || i >= len(b.Reads) || !proto.Equal(a.Reads[i], b.Reads[i]) {
			return fmt.Sprintf("the reads differ at key %q: the peers read different versions (different heights) or a nondeterministic contract read other keys", keyAt(a.Reads, b.Reads, i))
		}
	}
	for i := 0; i < max(len(a.Writes), len(b.Writes)); i++ {
		if i >= len(a.Writes) || i >= len(b.Writes) || !proto.Equal(a.Writes[i], b.Writes[i]) {
			k := ""
			if i < len(a.Writes) {
				k = a.Writes[i].Key
			} else {
				k = b.Writes[i].Key
			}
			return fmt.Sprintf("the writes differ at key %q after equal reads: a nondeterministic contract", k)
		}
	}
	if len(a.RangeReads) != len(b.RangeReads) {
		return "the range reads differ"
	}
	for i := range a.RangeReads {
		if !proto.Equal(a.RangeReads[i], b.RangeReads[i]) {
			return "the range reads differ"
		}
	}
	return ""
}

func keyAt(a, b []*api.KVRead, i int) string {
	if i < len(a) {
		return a[i].Key
	}
	return b[i].Key
}
