package committer

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/policy"
)

const crashChildEnv = "STRAND_COMMITTER_CRASH_CHILD"

// recoveredTotal counts blocks that restarted children re-applied to the
// state: proof that the test exercised recovery.
var recoveredTotal atomic.Uint64

func TestMain(m *testing.M) {
	if spec := os.Getenv(crashChildEnv); spec != "" {
		if err := runCrashChild(spec); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// crashSpec is what the parent hands a child peer: the channel and the chain.
type crashSpec struct {
	Dir        string
	Channel    string
	Orgs       []identity.Org
	Orderers   []string
	Policies   map[string]string
	Blocks     [][]byte
	Mode       Mode
	Durability Durability
	StateDB    string // a backend name
}

func (s *crashSpec) channel() (Channel, error) {
	reg, err := identity.NewRegistry(s.Orgs)
	if err != nil {
		return Channel{}, err
	}
	ch := Channel{Name: s.Channel, Registry: reg, OrdererOrgs: s.Orderers, Policies: map[string]*policy.Policy{}}
	for name, expr := range s.Policies {
		if ch.Policies[name], err = policy.Parse(expr); err != nil {
			return Channel{}, err
		}
	}
	return ch, nil
}

// runCrashChild is a peer process: it commits the chain from wherever its
// ledger stands, with real fsyncs, printing "height H" on start and
// "acked N" for each block a subscriber hears of (and so is acknowledged).
func runCrashChild(specFile string) error {
	raw, err := os.ReadFile(specFile)
	if err != nil {
		return err
	}
	var spec crashSpec
	if err := json.Unmarshal(raw, &spec); err != nil {
		return err
	}
	ch, err := spec.channel()
	if err != nil {
		return err
	}
	store, err := ledger.OpenBlockStore(filepath.Join(spec.Dir, "blocks"), ledger.Options{})
	if err != nil {
		return err
	}
	db, err := openStateDB(filepath.Join(spec.Dir, "state"), spec.StateDB)
	if err != nil {
		return err
	}
	c, err := New(ch, store, db, Options{Mode: spec.Mode, MaxGroup: 8, Durability: spec.Durability}, nil)
	if err != nil {
		return err
	}
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintf(out, "height %d recovered %d\n", c.Height(), c.Metrics().Recovered)
	out.Flush()
	sub := c.Subscribe(len(spec.Blocks) + 1)
	done := make(chan struct{})
	go func() {
		for ev := range sub.C {
			fmt.Fprintf(out, "acked %d\n", ev.Number)
			out.Flush()
		}
		close(done)
	}()
	for n := c.Height(); n < uint64(len(spec.Blocks)); n++ {
		if err := c.Deliver(spec.Blocks[n]); err != nil {
			return err
		}
	}
	if err := c.Close(); err != nil {
		return err
	}
	<-done
	if err := errors.Join(store.Close(), db.Close()); err != nil {
		return err
	}
	fmt.Fprintln(out, "done")
	out.Flush()
	return nil
}

// TestCrashRecovery kills a real peer process with SIGKILL at random points
// while it commits, restarts it, and checks that no acknowledged block is
// lost, that the chain verifies, and that codes and state equal a fresh
// replay of the chain: in Durable, in both modes, and in Relaxed, where a
// process crash must lose nothing either (the kernel holds the writes);
// and with the memory-checkpoint state, which a crash sets back to its
// newest checkpoint.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	for _, mode := range []Mode{Sequential, Parallel} {
		t.Run(mode.String(), func(t *testing.T) { crashRecovery(t, mode, Durable, "pebble") })
	}
	t.Run("relaxed", func(t *testing.T) { crashRecovery(t, Sequential, Relaxed, "pebble") })
	t.Run("memory-checkpoint", func(t *testing.T) { crashRecovery(t, Parallel, Durable, "memory-checkpoint") })
}

func crashRecovery(t *testing.T, mode Mode, d Durability, stateDB string) {
	n := newTestNet(t)
	rng := rand.New(rand.NewSource(int64(mode) + 7 + 100*int64(d) + int64(len(stateDB))))
	blocks := randomChain(t, n, rng, 300)
	spec := crashSpec{Dir: t.TempDir(), Channel: testChannel, Orderers: n.ch.OrdererOrgs, Blocks: blocks, Mode: mode, Durability: d, StateDB: stateDB,
		Policies: map[string]string{testContract: "AND('Org1.peer','Org2.peer')"}}
	for _, org := range n.ch.Registry.Orgs() {
		spec.Orgs = append(spec.Orgs, identity.Org{ID: org, CACerts: [][]byte{n.caCert(org)}})
	}
	specFile := filepath.Join(t.TempDir(), "spec.json")
	raw, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(specFile, raw, 0o600); err != nil {
		t.Fatal(err)
	}

	acked := int64(-1)
	recoveredBefore := recoveredTotal.Load()
	for round := 0; ; round++ {
		killAt := acked + 1 + rng.Int63n(60)
		height, last, finished := runChild(t, specFile, killAt, round < 6)
		if int64(height) < acked+1 {
			t.Fatalf("round %d: restarted at height %d but block %d was acknowledged", round, height, acked)
		}
		if last > acked {
			acked = last
		}
		if finished {
			break
		}
		if round > 20 {
			t.Fatal("the child never finished")
		}
	}

	if recoveredTotal.Load() == recoveredBefore {
		t.Error("no restart re-applied any block: recovery was not exercised")
	}

	// Reopen as a restarted peer would: through New, which recovers.
	got := openPeerOn(t, n, spec.Dir, Options{}, stateDB)
	sameAsReplay(t, n, got.store, got.db, blocks, "after crashes")
}

// runChild starts a child peer and, if kill is set, SIGKILLs it as soon as
// it acknowledges block killAt. It returns the height the child started at,
// the last block it acknowledged (-1 if none) and whether it finished.
func runChild(t *testing.T, specFile string, killAt int64, kill bool) (height uint64, last int64, finished bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+specFile)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	defer timer.Stop()
	last = -1
	killed := false
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "height "):
			var recovered uint64
			fmt.Sscanf(line, "height %d recovered %d", &height, &recovered)
			recoveredTotal.Add(recovered)
		case strings.HasPrefix(line, "acked "):
			last, _ = strconv.ParseInt(strings.TrimPrefix(line, "acked "), 10, 64)
			if kill && last >= killAt && !killed {
				cmd.Process.Signal(syscall.SIGKILL)
				killed = true
			}
		case line == "done":
			finished = true
		}
	}
	err = cmd.Wait()
	// The kill may land after the child printed "done" (its last ack was
	// past killAt): it finished all the same.
	if finished && err != nil && !killed {
		t.Fatalf("child: %v", err)
	}
	if !finished && !kill {
		t.Fatalf("child exited without finishing: %v", err)
	}
	return height, last, finished
}

// randomChain builds a chain of contended transactions (valid, stale,
// conflicting) over 20 keys, 1 to 4 per block.
func randomChain(t *testing.T, n *testNet, rng *rand.Rand, blocks int) [][]byte {
	out := make([][]byte, blocks)
	for b := range out {
		var txs [][]byte
		for i := 1 + rng.Intn(4); i > 0; i-- {
			k := fmt.Sprint("key", rng.Intn(20))
			var r []*api.KVRead
			if b > 0 && rng.Intn(2) == 0 {
				r = reads(rd(k, ver(uint64(rng.Intn(b)), uint32(rng.Intn(2)))))
			}
			log := "x"
			if b%7 == 0 { // over pebbledb's 4 KiB value separation: blob files too
				log = strings.Repeat("x", 5000)
			}
			txs = append(txs, n.tx(rwset(testContract, r, wr(k, fmt.Sprint(b, "/", i)), wr(fmt.Sprint("log", b, i), log))))
		}
		out[b] = n.block(txs...)
	}
	return out
}
