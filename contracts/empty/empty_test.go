package empty

import (
	"testing"

	"github.com/strand-ledger/strand/contracts/internal/memstub"
)

func TestEmpty(t *testing.T) {
	s := memstub.New()
	out, err := s.Call(New(), "anything", "a", "b")
	if err != nil || out != nil || len(s.Reads())+len(s.Writes()) != 0 {
		t.Fatalf("empty = %q, %v, reads %v, writes %v: want nothing", out, err, s.Reads(), s.Writes())
	}
}
