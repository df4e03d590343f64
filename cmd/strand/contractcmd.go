package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/client"
	"github.com/strand-ledger/strand/contract/external"
	"github.com/strand-ledger/strand/contract/lifecycle"
	"github.com/strand-ledger/strand/contract/wasm"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
)

// contractCmd is `strand contract`: the contract lifecycle
// (contract/lifecycle, docs/contracts.md).
func contractCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "contract", Short: "Package, deploy, upgrade and list the channel's contracts"}
	cmd.AddCommand(contractPackageCmd(), contractDefineCmd(false), contractDefineCmd(true), contractListCmd(), contractShowCmd())
	return cmd
}

// contractPackageCmd checks a module as every peer will (compile, ABI)
// and prints its code hash.
func contractPackageCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "package MODULE.wasm",
		Short: "Check a WebAssembly module as the peers will (compile, imports, exports) and print its code hash",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			code, err := readModule(args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "module  %s\nsize    %d bytes (%d carried, compressed)\nhash    %s\n", args[0], len(code),
				len(lifecycle.PackCode(lifecycle.RuntimeWasm, code)), lifecycle.CodeHash(code))
			return nil
		},
	}
}

// readModule reads a module and checks it as the peers will (decode,
// validation, imports, exports, _initialize under the peers' default
// fuel), so that a module the peers could not run is refused before
// anything is signed. It runs it on wazero's interpreter, which checks
// the same and skips the compilation to machine code that the peers do
// (1.6 s of a Go module's 2 s check on this project's machine,
// docs/contracts.md): the deploy's own time to every peer's "in force".
func readModule(path string) ([]byte, error) {
	code, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--wasm: %w", err)
	}
	if len(code) > lifecycle.MaxModuleBytes {
		return nil, fmt.Errorf("--wasm %s: %d bytes, over the %d a module may have (docs/contracts.md: code distribution)", path, len(code), lifecycle.MaxModuleBytes)
	}
	if n := len(lifecycle.PackCode(lifecycle.RuntimeWasm, code)); n > lifecycle.MaxCodeBytes {
		return nil, fmt.Errorf("--wasm %s: %d bytes, %d compressed, over the %d a definition transaction carries (docs/contracts.md: code distribution)", path, len(code), n, lifecycle.MaxCodeBytes)
	}
	e, err := wasm.NewEngine(wasm.Options{Interpreter: true})
	if err != nil {
		return nil, err
	}
	defer e.Close()
	if _, err := e.Compile(code); err != nil {
		return nil, fmt.Errorf("--wasm %s: the module does not compile as a strand contract: %w", path, err)
	}
	return code, nil
}

// externalPackage builds an external contract's connection package: the
// code its definition carries and hashes.
func externalPackage(addr, caFile, serverName string, orgAddrs []string) ([]byte, error) {
	if caFile == "" {
		return nil, fmt.Errorf("--external %s: want --external-ca CA.pem, the CA (or certificate) that the server's TLS certificate chains to: the definition pins it", addr)
	}
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("--external-ca: %w", err)
	}
	pkg := &external.Package{Address: addr, RootCert: string(ca), ServerName: serverName}
	for _, oa := range orgAddrs {
		org, a, ok := strings.Cut(oa, "=")
		if !ok {
			return nil, fmt.Errorf("--external-org %q: want ORG=HOST:PORT", oa)
		}
		if pkg.OrgAddresses == nil {
			pkg.OrgAddresses = map[string]string{}
		}
		pkg.OrgAddresses[org] = a
	}
	raw, err := pkg.Encode()
	if err != nil {
		return nil, fmt.Errorf("--external %s --external-ca %s: %w", addr, caFile, err)
	}
	return raw, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

type defineFlags struct {
	clientFlags
	wasm, version, policy, init string
	external, externalCA        string
	externalName                string
	externalOrgs                []string
	initArgs, signAs            []string
	builtin                     bool
	sequence                    uint64
	fuel                        int64
	fuelSet                     bool // --fuel given, 0 included
}

// contractDefineCmd is `strand contract deploy` (upgrade false) and
// `strand contract upgrade`.
func contractDefineCmd(upgrade bool) *cobra.Command {
	var f defineFlags
	use, short := "deploy NAME (--wasm MODULE.wasm | --external HOST:PORT --external-ca CA.pem | --builtin)", "Define a new contract on the channel, signed by the org admins, and wait until every peer runs it"
	if upgrade {
		use, short = "upgrade NAME (--wasm MODULE.wasm | --external HOST:PORT --external-ca CA.pem | --builtin)", "Define the next version of a contract (its state is kept), signed by the org admins, and wait until every peer runs it"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long: short + ".\n\nThe definition (name, version, sequence, runtime, code hash, endorsement policy, init) and, for\n" +
			"wasm, the module itself travel in one transaction that the admins of the orgs --sign-as names sign\n" +
			"(the channel's lifecycle policy decides whose signatures it needs: a majority of the orgs' admins by\n" +
			"default). It takes effect from the block after its own on every peer. With --init, the init function\n" +
			"is then invoked once.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.fuelSet = cmd.Flags().Changed("fuel")
			return runDefine(cmd, f, args[0], upgrade)
		},
	}
	f.bind(cmd, false)
	fl := cmd.Flags()
	fl.StringVar(&f.wasm, "wasm", "", "the contract's WebAssembly module")
	fl.BoolVar(&f.builtin, "builtin", false, "the contract is compiled into strand (runtime builtin)")
	fl.StringVar(&f.external, "external", "", "the contract is a server the peers dial at this host:port (runtime external, docs/contracts.md)")
	fl.StringVar(&f.externalCA, "external-ca", "", "with --external: PEM file of the CA (or certificate) the server's TLS certificate must chain to")
	fl.StringSliceVar(&f.externalOrgs, "external-org", nil, "with --external: ORG=HOST:PORT, the address ORG's peers dial instead (each org may run its own server; repeat it)")
	fl.StringVar(&f.externalName, "external-server-name", "", "with --external: the name the server's certificate carries (default: the host of --external)")
	fl.StringVar(&f.version, "version", "", "the version label (default: the sequence, as \"1\", \"2\", ...)")
	fl.StringVar(&f.policy, "policy", "", "endorsement policy (deploy default: a majority of the orgs' peers; upgrade default: the current one)")
	fl.StringVar(&f.init, "init", "", "a function to invoke once the definition is in force")
	fl.StringSliceVar(&f.initArgs, "init-arg", nil, "an argument of --init (repeat it)")
	fl.StringSliceVar(&f.signAs, "sign-as", nil, "orgs whose admins sign (default: every org with an admin in the network)")
	fl.Int64Var(&f.fuel, "fuel", 0, "with --wasm: the fuel budget of one call, about one unit a WebAssembly instruction; 0: the peers' default, 500000000 (deploy default: 0; upgrade default: the current one)")
	fl.Uint64Var(&f.sequence, "sequence", 0, "the definition's sequence (default: the current one plus one; the channel refuses any other)")
	return cmd
}

func runDefine(cmd *cobra.Command, f defineFlags, name string, upgrade bool) error {
	start := time.Now()
	if err := lifecycle.CheckName(name); err != nil {
		return err
	}
	if n := btoi(f.wasm != "") + btoi(f.builtin) + btoi(f.external != ""); n != 1 {
		return fmt.Errorf("want exactly one of --wasm MODULE.wasm, --external HOST:PORT and --builtin")
	}
	var code []byte
	def := &lifecycle.Definition{Name: name, Runtime: lifecycle.RuntimeBuiltin, Version: f.version, Policy: f.policy, Init: f.init}
	if f.wasm != "" {
		var err error
		if code, err = readModule(f.wasm); err != nil {
			return err
		}
		def.Runtime, def.CodeHash = lifecycle.RuntimeWasm, lifecycle.CodeHash(code)
	} else if f.external != "" {
		var err error
		if code, err = externalPackage(f.external, f.externalCA, f.externalName, f.externalOrgs); err != nil {
			return err
		}
		def.Runtime, def.CodeHash = lifecycle.RuntimeExternal, lifecycle.CodeHash(code)
	} else if !slices.Contains(node.DefaultBuiltins().Names(), name) {
		return fmt.Errorf("--builtin: strand has no built-in contract %q; it has %s", name, strings.Join(node.DefaultBuiltins().Names(), ", "))
	}
	lay, err := loadNet(f.dir)
	if err != nil {
		return err
	}
	signers, err := adminSigners(lay, f.signAs)
	if err != nil {
		return err
	}
	conn, err := f.connect()
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	cur, err := definitions(ctx, conn)
	if err != nil {
		return err
	}
	if err := fillDefinition(def, f, cur, lay, conn.Channel, upgrade); err != nil {
		return err
	}
	raw, txID, err := buildDefinitionTx(def, code, signers)
	if err != nil {
		return err
	}
	admin, err := conn.As(lay.Admins[slices.IndexFunc(lay.Admins, func(c localnet.Client) bool { return c.Org == signers[0].Identity().Org })])
	if err != nil {
		return err
	}
	if err := admin.Gateway.SubmitTx(ctx, txID, raw); err != nil {
		return explainClient(conn, f.dir, "contract "+name, err)
	}
	skipped, err := waitEveryPeer(ctx, lay, txID, name, def.Sequence)
	if err != nil {
		return fmt.Errorf("contract %s sequence %d: %w", name, def.Sequence, err)
	}
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "contract %s version %s sequence %d (%s%s), policy %s: in force on every peer after %s (tx %s)\n",
		name, def.Version, def.Sequence, def.Runtime, hashNote(def.CodeHash), def.Policy, time.Since(start).Round(time.Millisecond), txID)
	if len(skipped) > 0 {
		fmt.Fprintf(w, "not asked: %s (their orgs were removed from the channel)\n", strings.Join(skipped, ", "))
	}
	if def.Init == "" {
		return nil
	}
	commit, err := conn.Contract(name).Submit(ctx, def.Init, f.initArgs...)
	if commit != nil {
		printCommit(w, commit)
		fmt.Fprintf(w, "init    %s %s after the deploy started\n", commit.Code, time.Since(start).Round(time.Millisecond))
	}
	return f.explain(conn, name+"."+def.Init+" (init)", err)
}

func hashNote(h string) string {
	if h == "" {
		return ""
	}
	return " " + h[:16]
}

// fillDefinition completes def from the flags and the definition in
// force, refusing what the channel would refuse.
func fillDefinition(def *lifecycle.Definition, f defineFlags, cur map[string]node.DefinitionInfo, lay *localnet.Layout, channel string, upgrade bool) error {
	old, defined := cur[def.Name]
	switch {
	case upgrade && !defined:
		return fmt.Errorf("contract %s is not defined on channel %q: deploy it first (defined: %s)", def.Name, channel, strings.Join(defNames(cur), ", "))
	case !upgrade && defined:
		return fmt.Errorf("contract %s is already defined on channel %q (version %s, sequence %d): upgrade it instead", def.Name, channel, old.Version, old.Sequence)
	}
	def.Channel, def.Sequence = channel, old.Sequence+1
	if f.sequence != 0 {
		def.Sequence = f.sequence // the channel decides; a wrong one comes back as CHAINCODE_VERSION_CONFLICT
	}
	if def.Version == "" {
		def.Version = fmt.Sprint(def.Sequence)
	}
	if def.Policy == "" && defined {
		def.Policy = old.Policy
	}
	def.Fuel = f.fuel
	if !f.fuelSet && defined && def.Runtime == lifecycle.RuntimeWasm {
		def.Fuel = old.Fuel
	}
	if def.Policy == "" {
		orgs := lay.Orgs()
		peers := make([]string, len(orgs))
		for i, o := range orgs {
			peers[i] = "'" + o + ".peer'"
		}
		def.Policy = fmt.Sprintf("OutOf(%d, %s)", len(orgs)/2+1, strings.Join(peers, ", "))
	}
	if _, err := def.Encode(); err != nil {
		return fmt.Errorf("contract %s: %w", def.Name, err)
	}
	return nil
}

// adminSigners loads the admins of orgs (every org with an admin if none
// are named), the first of them the transaction's creator.
func adminSigners(lay *localnet.Layout, orgs []string) ([]*identity.Signer, error) {
	if len(orgs) == 0 {
		for _, a := range lay.Admins {
			orgs = append(orgs, a.Org)
		}
	}
	slices.Sort(orgs)
	var out []*identity.Signer
	for _, org := range slices.Compact(orgs) {
		a, err := lay.Admin(org)
		if err != nil {
			return nil, fmt.Errorf("--sign-as %s: %w", org, err)
		}
		s, err := a.Signer()
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--sign-as: no org admin to sign")
	}
	return out, nil
}

// buildDefinitionTx builds the definition transaction: created by the
// first signer, its response "endorsed" by every signer (the lifecycle
// policy's admin signatures).
func buildDefinitionTx(def *lifecycle.Definition, code []byte, signers []*identity.Signer) ([]byte, string, error) {
	nonce := make([]byte, client.NonceSize)
	if _, err := rand.Read(nonce); err != nil {
		return nil, "", err
	}
	es := make([]api.Signer, len(signers))
	for i, s := range signers {
		es[i] = s
	}
	raw, id, err := api.BuildTx(api.TxSpec{Channel: def.Channel, Contract: lifecycle.Namespace, Function: "define", Nonce: nonce,
		Timestamp: time.Now().UnixNano(), RWSet: lifecycle.Writes(def, code)}, signers[0], es)
	if err != nil {
		return nil, "", err
	}
	if len(raw) > api.MaxTxBytes {
		return nil, "", fmt.Errorf("contract %s: the definition transaction is %d bytes, over the %d the orderers take: the module is too large", def.Name, len(raw), api.MaxTxBytes)
	}
	return raw, id, nil
}

// waitEveryPeer waits until every peer of the network has committed
// txID, and fails naming the validation code if it is not VALID; then
// until each peer runs definition name at seq. A peer answers a commit
// status once the block is stored, a little before the block's state is
// applied and its definitions installed, so the first waits only for the
// block and the second for the contract itself.
//
// Peers of orgs a membership update removed are skipped (they refuse
// this client, and are no longer the channel's), and so are their
// names in the returned list.
func waitEveryPeer(ctx context.Context, lay *localnet.Layout, txID, name string, seq uint64) (skipped []string, err error) {
	removed, err := removedOrgs(ctx, lay)
	if err != nil {
		return nil, err
	}
	for _, n := range lay.Nodes {
		if n.Role != identity.RolePeer {
			continue
		}
		if slices.Contains(removed, n.Org) {
			skipped = append(skipped, n.Name)
			continue
		}
		c, err := lay.Connect(n.Org, n.Name)
		if err != nil {
			return skipped, err
		}
		err = waitPeer(ctx, c, txID, name, seq)
		c.Close()
		if err != nil {
			return skipped, fmt.Errorf("waiting for %s: %w", n.Name, err)
		}
	}
	return skipped, nil
}

// removedOrgs asks the first peer of an org still in the channel which
// orgs membership updates removed (`_lifecycle revocations`).
func removedOrgs(ctx context.Context, lay *localnet.Layout) ([]string, error) {
	var last error
	for _, n := range lay.Nodes {
		if n.Role != identity.RolePeer {
			continue
		}
		c, err := lay.Connect(n.Org, n.Name)
		if err != nil {
			return nil, err
		}
		raw, err := c.Contract(lifecycle.Namespace).Evaluate(ctx, "revocations")
		c.Close()
		var info node.RevocationsInfo
		if err == nil {
			if err = json.Unmarshal(raw, &info); err == nil {
				return info.Removed, nil
			}
		}
		last = fmt.Errorf("asking %s which orgs were removed: %w", n.Name, err)
	}
	if last == nil {
		return nil, fmt.Errorf("the network in %s has no peer", lay.Dir)
	}
	return nil, last
}

func waitPeer(ctx context.Context, c *localnet.Conn, txID, name string, seq uint64) error {
	_, err := c.Gateway.CommitStatus(ctx, txID)
	var ce *client.CommitError
	if errors.As(err, &ce) {
		return fmt.Errorf("the channel refused the definition: %s (%s)", ce.Code, definitionCodeHint(ce.Code))
	}
	if err != nil {
		return fmt.Errorf("the definition's commit (tx %s): %w", txID, err)
	}
	for {
		raw, err := c.Contract(lifecycle.Namespace).Evaluate(ctx, "show", name)
		var info node.DefinitionInfo
		if err == nil && json.Unmarshal(raw, &info) == nil && info.Sequence >= seq {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the peer committed the definition but does not run %s sequence %d yet (last: %v): %w", name, seq, err, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// definitionCodeHint says what a definition's validation code means.
func definitionCodeHint(code api.TxValidationCode) string {
	switch code {
	case api.TxValidationCode_ENDORSEMENT_POLICY_FAILURE:
		return "not approved: the admins who signed do not satisfy the channel's lifecycle policy; sign as more orgs with --sign-as"
	case api.TxValidationCode_CHAINCODE_VERSION_CONFLICT:
		return "its sequence is not the contract's current one plus one: a downgrade, a replay, or another definition went first"
	case api.TxValidationCode_INVALID_CHAINCODE:
		return "its code does not match its hash, or its runtime is unknown"
	case api.TxValidationCode_BAD_RWSET:
		return "the definition is malformed: see the peer's log"
	}
	return "see the peer's log"
}

// definitions returns the definitions in force on conn's peer.
func definitions(ctx context.Context, conn *localnet.Conn) (map[string]node.DefinitionInfo, error) {
	raw, err := conn.Contract(lifecycle.Namespace).Evaluate(ctx, "list")
	if err != nil {
		return nil, fmt.Errorf("reading the channel's contract definitions from %s: %w", conn.Peer.Name, err)
	}
	var list []node.DefinitionInfo
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("reading the channel's contract definitions from %s: %w", conn.Peer.Name, err)
	}
	m := make(map[string]node.DefinitionInfo, len(list))
	for _, d := range list {
		m[d.Name] = d
	}
	return m, nil
}

func defNames(m map[string]node.DefinitionInfo) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func contractListCmd() *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the contracts defined on the channel (as the org's peer has them in force)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			conn, err := f.connect()
			if err != nil {
				return err
			}
			defer conn.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
			defer cancel()
			defs, err := definitions(ctx, conn)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "%-16s %-10s %4s %-8s %-16s %s\n", "NAME", "VERSION", "SEQ", "RUNTIME", "CODE", "POLICY")
			for _, name := range defNames(defs) {
				d := defs[name]
				fmt.Fprintf(w, "%-16s %-10s %4d %-8s %-16s %s\n", d.Name, d.Version, d.Sequence, d.Runtime, shortHash(d.CodeHash), d.Policy)
			}
			return nil
		},
	}
	f.bind(cmd, false)
	return cmd
}

func shortHash(h string) string {
	if len(h) < 16 {
		return "-"
	}
	return h[:16]
}

func contractShowCmd() *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "show NAME",
		Short: "Print one contract's definition in force, as JSON",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			conn, err := f.connect()
			if err != nil {
				return err
			}
			defer conn.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
			defer cancel()
			raw, err := conn.Contract(lifecycle.Namespace).Evaluate(ctx, "show", args[0])
			if err != nil {
				return explainClient(conn, f.dir, "contract show "+args[0], err)
			}
			_, err = io.WriteString(cmd.OutOrStdout(), string(raw)+"\n")
			return err
		},
	}
	f.bind(cmd, false)
	return cmd
}
