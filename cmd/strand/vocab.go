package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/strand-ledger/strand/ledger/statedb/backend"
	"github.com/strand-ledger/strand/orderer/cut"
)

// The one vocabulary of the knobs several commands share. Each has one
// flag name, one type, one default and one help text, defined here and
// bound by every command that takes it (demo, bench run, bench validator,
// crypto gen, net up); round files and the channel file name the same
// knobs (docs/config.md, "One vocabulary"). The defaults are the
// orderer's and the state database's own, so a flag left out, a round
// field left out and a channel file field left out all mean the same.
const (
	flagBlockSize    = "block-size"
	flagBatchTimeout = "batch-timeout"
	flagBatchMode    = "batch-mode"
	flagStateDB      = "state-db"
	flagSeed         = "seed"

	defaultSeed = 1
)

// bindBlockSize binds --block-size; old is a name it replaces, kept as a
// deprecated alias ("" for none).
func bindBlockSize(fl *pflag.FlagSet, p *int, old string) {
	const help = "most transactions per block: a block is cut when it holds this many"
	fl.IntVar(p, flagBlockSize, cut.DefaultMaxTxs, help)
	deprecatedAlias(fl, old, flagBlockSize, func(name string) { fl.IntVar(p, name, cut.DefaultMaxTxs, help) })
}

func bindBatchTimeout(fl *pflag.FlagSet, p *time.Duration) {
	fl.DurationVar(p, flagBatchTimeout, cut.DefaultTimeout, "block mode: cut a non-empty block this long after its first transaction")
}

func bindBatchMode(fl *pflag.FlagSet, p *string) {
	fl.StringVar(p, flagBatchMode, string(cut.ModeBlock), "block: cut a block when full or at --batch-timeout (Fabric); stream: cut whenever the orderer can take one (StreamChain)")
}

func bindStateDB(fl *pflag.FlagSet, p *string) {
	fl.StringVar(p, flagStateDB, backend.Default, "peers' state database: "+strings.Join(backend.Names(), ", "))
}

func bindSeed(fl *pflag.FlagSet, p *uint64) {
	fl.Uint64Var(p, flagSeed, defaultSeed, "random seed of the workload")
}

// deprecatedAlias registers old (through bind, on the same variable) as a
// hidden name of flag that warns when used; nothing when old is "".
func deprecatedAlias(fl *pflag.FlagSet, old, flag string, bind func(string)) {
	if old == "" {
		return
	}
	bind(old)
	fl.MarkDeprecated(old, fmt.Sprintf("use --%s", flag))
}

// checkBatchMode names a bad --batch-mode value.
func checkBatchMode(mode string) error {
	if mode != string(cut.ModeBlock) && mode != string(cut.ModeStream) {
		return fmt.Errorf("--%s %q: want block or stream", flagBatchMode, mode)
	}
	return nil
}
