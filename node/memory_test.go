package node_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
)

// childEnv makes the test binary a node process: "orderer <config>" or
// "peer <config>". It prints "ready" once serving and runs until its
// standard input closes (the parent ends or kills it).
const childEnv = "STRAND_NODE_TEST_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		if err := runChild(spec); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runChild(spec string) error {
	role, file, _ := strings.Cut(spec, " ")
	cfg, err := node.LoadNode(file)
	if err != nil {
		return err
	}
	var closer interface{ Close() error }
	switch role {
	case "orderer":
		closer, err = node.StartOrderer(cfg)
	case "peer":
		closer, err = node.StartPeer(cfg)
	default:
		err = fmt.Errorf("role %q, want orderer or peer", role)
	}
	if err != nil {
		return err
	}
	fmt.Println("ready")
	_, _ = bufio.NewReader(os.Stdin).ReadString(0) // until the parent goes
	return closer.Close()
}

// startProcess runs the node of config as a child process and returns its
// pid once it serves; the test's cleanup kills it.
func startProcess(t *testing.T, role, config string) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+role+" "+config)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		t.Fatalf("%s process: %q, %v; stderr: %s", role, line, err, stderr.String())
	}
	return cmd.Process.Pid
}

// procMiB returns a field of /proc/pid/status (VmRSS, VmHWM) in MiB.
func procMiB(t *testing.T, pid int, field string) float64 {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb / 1024
		}
	}
	t.Fatalf("/proc/%d/status has no %s", pid, field)
	return 0
}

// growth runs attack against process pid and returns how far its peak
// resident memory (VmHWM, reset first) rose above its resident memory
// before the attack, in MiB.
func growth(t *testing.T, pid int, attack func()) float64 {
	t.Helper()
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		t.Skipf("cannot reset the peak resident memory of process %d: %v", pid, err)
	}
	before := procMiB(t, pid, "VmRSS")
	attack()
	peak := procMiB(t, pid, "VmHWM")
	t.Logf("process %d: resident %.1f MiB before, peak %.1f MiB during the attack: +%.1f MiB", pid, before, peak, peak-before)
	return peak - before
}

// hugeCodec marshals a hugeSubmit into a gRPC message of its declared size
// that reuses one 1 MiB buffer, so that the sender holds 1 MiB however
// large the message.
type hugeCodec struct{}

type hugeSubmit struct{ size int }

var chunk = mem.SliceBuffer(bytes.Repeat([]byte{'x'}, 1<<20))

func (hugeCodec) Marshal(v any) (mem.BufferSlice, error) {
	size := v.(hugeSubmit).size
	// SubmitRequest.transaction (field 1, bytes) of size bytes.
	head := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.BytesType), uint64(size))
	out := mem.BufferSlice{mem.SliceBuffer(head)}
	for range size / len(chunk) {
		out = append(out, chunk)
	}
	return out, nil
}

func (hugeCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return proto.Unmarshal(data.Materialize(), v.(proto.Message))
}

func (hugeCodec) Name() string { return "proto" }

// memoryBudget is what four concurrent 200 MB messages may add to a
// node's peak resident memory (issue #15, finding 2).
const memoryBudget = 64

// TestOversizedMessagesStayOutOfMemory sends a real orderer process and a
// real peer process (its gateway) four concurrent 200 MB Submit calls,
// then sixteen on sixteen connections that declare 200 MB, send up to 15
// MiB (what the server's stream window lets them) and stall, and measures
// each process's peak resident memory (VmHWM) from /proc. Each message
// must be refused by name on its length prefix, and the peak may rise by
// at most memoryBudget MiB. Before the orderer's client server was limited
// to api.MaxRequestMessage, the orderer received every 200 MB message
// whole before refusing it (gRPC's limit was api.MaxBlockMessage for
// everyone: +2.4 GiB) and the half-sent ones were never answered (+249
// MiB). Under the race detector, before the client servers' stream window
// shrank to grpctune.ClientStreamWindow, what arrived before the refusals
// peaked at +42 to +55 MiB.
func TestOversizedMessagesStayOutOfMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	layout, err := localnet.Generate(t.TempDir(), localnet.Spec{Orgs: 1, Orderers: 1})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := node.LoadChannel(layout.Channel)
	if err != nil {
		t.Fatal(err)
	}
	pids := map[identity.Role]int{}
	for _, nd := range layout.Nodes { // orderers come first
		pids[nd.Role] = startProcess(t, nd.Role.String(), nd.Config)
	}
	c := layout.Clients[0]
	tlsCfg, err := node.ClientTLS(ch, c.TLSCert, c.TLSKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []struct {
		name, addr, method string
		pid                int
	}{
		{"orderer", ch.Orderers()[0].Address, api.Orderer_Submit_FullMethodName, pids[identity.RoleOrderer]},
		{"gateway", ch.PeersOf(c.Org)[0].Address, api.Gateway_Submit_FullMethodName, pids[identity.RolePeer]},
	} {
		t.Run(target.name+"/whole", func(t *testing.T) {
			if g := growth(t, target.pid, func() { submitHuge(t, target.addr, target.method, tlsCfg, 4, 200<<20) }); g > memoryBudget {
				t.Errorf("four 200 MB submissions grew the %s's peak resident memory by %.1f MiB, want at most %d", target.name, g, memoryBudget)
			}
		})
		t.Run(target.name+"/half-sent", func(t *testing.T) {
			if g := growth(t, target.pid, func() { sendHalf(t, target.addr, target.method, tlsCfg, 16, 200<<20, 15<<20) }); g > memoryBudget {
				t.Errorf("sixteen half-sent 200 MB messages grew the %s's peak resident memory by %.1f MiB, want at most %d", target.name, g, memoryBudget)
			}
		})
	}
}

// submitHuge makes n concurrent calls of method with a size-byte
// SubmitRequest; each must be refused with ResourceExhausted naming the
// size and the limit.
func submitHuge(t *testing.T, addr, method string, tlsCfg *tls.Config, n, size int) {
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := cc.Invoke(ctx, method, hugeSubmit{size}, &api.SubmitResponse{}, grpc.ForceCodecV2(hugeCodec{}))
			want := fmt.Sprintf("larger than max (%d vs. %d)", size+5, api.MaxRequestMessage)
			if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), want) {
				t.Errorf("a %d-byte %s: %v, want ResourceExhausted naming %q", size, method, err, want)
				return
			}
			t.Logf("refused: %v", err)
		}()
	}
	wg.Wait()
}

// sendHalf opens n connections, each with one call of method whose
// message declares declared bytes and stalls after sent of them; each
// must be refused on its length prefix while its sender stalls.
func sendHalf(t *testing.T, addr, method string, tlsCfg *tls.Config, n int, declared uint32, sent int) {
	body := bytes.Repeat([]byte{'x'}, sent)
	var ends []<-chan string
	for range n {
		ends = append(ends, dialH2(t, addr, tlsCfg).call(t, method, declared, body))
	}
	want := fmt.Sprintf("larger than max (%d vs. %d)", declared, api.MaxRequestMessage)
	deadline := time.After(10 * time.Second)
	for i, end := range ends {
		select {
		case got := <-end:
			if !strings.Contains(got, want) {
				t.Errorf("half-sent call %d: %s, want a refusal naming %q", i, got, want)
			}
		case <-deadline:
			t.Errorf("%d of %d half-sent calls declaring %d bytes were not refused in 10 s while their senders stalled", len(ends)-i, len(ends), declared)
			return
		}
	}
}
