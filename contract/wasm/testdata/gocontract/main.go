//go:build wasip1

// Command gocontract is the runtime tests' Go contract: what a Go module
// may do (clock, randomness, maps, panics, memory) and what it must not
// see (another call's variables).
package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/strand-ledger/strand/contract"
	"github.com/strand-ledger/strand/sdk/go/strand"
)

var counter int

var hog [][]byte

type fn func(contract.Stub) ([]byte, error)

func (f fn) Invoke(s contract.Stub) ([]byte, error) {
	switch s.Function() {
	case "counter":
		counter++
		return []byte(strconv.Itoa(counter)), nil
	case "clock": // the transaction's time and the tx-derived randomness
		b := make([]byte, 8)
		rand.Read(b)
		m := map[int]int{}
		for i := range 50 {
			m[i] = i
		}
		order := ""
		for k := range m {
			order += strconv.Itoa(k) + ","
		}
		return []byte(fmt.Sprintf("%d %s %s", time.Now().UnixNano(), hex.EncodeToString(b), order)), nil
	case "panic":
		panic("deliberately")
	case "hog": // allocate and keep until the cap
		for {
			hog = append(hog, make([]byte, 1<<20))
		}
	case "open":
		_, err := os.Open("/etc/passwd")
		return nil, err
	case "sleep":
		time.Sleep(time.Hour)
		return []byte("slept"), nil
	case "put":
		return nil, s.PutState(string(s.Args()[0]), s.Args()[1])
	}
	return nil, contract.Errorf("unknown function %q", s.Function())
}

func init() { strand.Serve(fn(nil)) }

func main() {}
