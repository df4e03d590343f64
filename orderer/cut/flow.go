package cut

import "time"

// Batch is a cut block's transactions and their tx ids, in order.
type Batch struct {
	Txs [][]byte
	IDs []string
	// Config: a config update, cut alone.
	Config bool
}

// Pace says what Flow.Idle did about pacing; the flags combine.
type Pace uint8

const (
	// PaceHeld: a hold began (a peer was behind, the pending batch waits).
	PaceHeld Pace = 1 << iota
	// PaceLimit: a hold lasted MaxHold; the batch was cut all the same.
	PaceLimit
)

// Flow is the decision core of a channel's ordered path: which admitted
// transactions become the next batch, and when. It owns a Cutter, the tx
// ids of its pending transactions, and in stream mode the pacing hold.
// Like the Cutter it is pure: no goroutine, no clock, no I/O; time and the
// state of the pipeline downstream are arguments.
//
// The I/O loop's side of the contract (orderer's loop keeps it):
//
//  1. Add each admitted transaction, in admission order.
//  2. Tick at, or shortly after, the time Deadline reports whenever it
//     reports one (arm one timer for it after every call).
//  3. Stream mode: call Idle after every event while the pipeline
//     downstream holds nothing (no cut batch is yet a durable block),
//     with the store's height, which is then the height of the blocks
//     cut so far.
//  4. Flush once at the end (shutdown).
//  5. Hand every batch returned on, in order, before the next call.
//
// A Flow is for one goroutine.
type Flow struct {
	cutter *Cutter
	// ids are the tx ids of the cutter's pending transactions, in order;
	// a cut batch takes its prefix (the backing array is reused as a
	// queue, so the batches' IDs are capped to their length).
	ids    []string
	stream bool
	pacing Pacing // Pacer nil: no pacing
	// cut is the height of the blocks cut so far (pacing only).
	cut uint64
	// heldSince is when the current hold began; zero while not holding.
	heldSince time.Time
}

// Pacing configures a Flow's holds for the peers (stream mode).
type Pacing struct {
	// Pacer holds the peers' reports; it may be shared by the channels
	// of a process.
	Pacer *Pacer
	// Channel names this Flow's channel in the Pacer.
	Channel string
	// Height is the height of the blocks cut when the Flow starts (the
	// store's).
	Height uint64
	// MaxHold bounds a hold; zero means PaceMaxHold.
	MaxHold time.Duration
}

// NewFlow returns the core for cfg (zero fields take their defaults;
// an invalid cfg panics, as NewCutter). In stream mode, pacing with a
// Pacer makes it hold a cut while a peer is behind, up to its MaxHold;
// nil pacing never holds.
func NewFlow(cfg Config, pacing *Pacing) *Flow {
	cfg.EnsureDefaults()
	f := &Flow{cutter: NewCutter(cfg), stream: cfg.Mode == ModeStream}
	if f.stream && pacing != nil && pacing.Pacer != nil {
		f.pacing = *pacing
		if f.pacing.MaxHold == 0 {
			f.pacing.MaxHold = PaceMaxHold
		}
		f.cut = pacing.Height
	}
	return f
}

// Add takes tx, with tx id id, admitted at now, and returns the batches
// this cut. A config update (config) is a batch of its own: what is
// pending is cut first.
func (f *Flow) Add(tx []byte, id string, config bool, now time.Time) []Batch {
	if config {
		out := f.Flush()
		f.ids = append(f.ids, id)
		return append(out, f.counted([]Batch{f.take([][]byte{tx}, true)})...)
	}
	f.ids = append(f.ids, id)
	return f.takeAll(f.cutter.Add(tx, now))
}

// Tick cuts the pending batch if its block-mode deadline has come.
func (f *Flow) Tick(now time.Time) []Batch {
	return f.takeOne(f.cutter.Tick(now))
}

// Idle tells the core, at now, that the pipeline downstream is empty and
// the store holds stored blocks. In stream mode it cuts what is pending,
// unless a peer is more than PaceBacklog blocks behind stored: then it
// holds the batch until the peer catches up or the hold has lasted
// maxHold. Block mode cuts nothing here.
func (f *Flow) Idle(now time.Time, stored uint64) ([]Batch, Pace) {
	if !f.stream {
		return nil, 0
	}
	var ev Pace
	n, _ := f.cutter.Pending()
	p := f.pacing.Pacer
	if p != nil {
		f.cut = stored // nothing in flight: every block cut is stored
	}
	hold := p != nil && n > 0 && p.Behind(f.pacing.Channel, stored, now)
	if hold && f.heldSince.IsZero() {
		f.heldSince = now
		ev |= PaceHeld
	}
	if hold && now.Sub(f.heldSince) < f.pacing.MaxHold {
		return nil, ev
	}
	if hold {
		ev |= PaceLimit
	}
	f.heldSince = time.Time{}
	return f.takeOne(f.cutter.Free(now)), ev
}

// Flush cuts whatever is pending.
func (f *Flow) Flush() []Batch {
	f.heldSince = time.Time{}
	return f.takeOne(f.cutter.Flush())
}

// Deadline returns when the loop must call Tick (block mode: the pending
// batch's timeout) or Idle (stream mode: the end of a hold), and false
// when nothing is due.
func (f *Flow) Deadline() (time.Time, bool) {
	if !f.heldSince.IsZero() {
		return f.heldSince.Add(f.pacing.MaxHold), true
	}
	return f.cutter.Deadline()
}

// Holding reports whether a cut is held for a peer that is behind (a
// report that it caught up should then lead to an Idle call).
func (f *Flow) Holding() bool { return !f.heldSince.IsZero() }

// Pending returns the number of transactions and bytes waiting.
func (f *Flow) Pending() (txs, bytes int) { return f.cutter.Pending() }

func (f *Flow) take(txs [][]byte, config bool) Batch {
	b := Batch{Txs: txs, IDs: f.ids[:len(txs):len(txs)], Config: config}
	f.ids = f.ids[len(txs):]
	return b
}

func (f *Flow) takeOne(txs [][]byte) []Batch {
	if txs == nil {
		return nil
	}
	return f.counted([]Batch{f.take(txs, false)})
}

func (f *Flow) takeAll(cuts [][][]byte) []Batch {
	if len(cuts) == 0 {
		return nil
	}
	out := make([]Batch, len(cuts))
	for i, txs := range cuts {
		out[i] = f.take(txs, false)
	}
	return f.counted(out)
}

// counted tells the Pacer the new height of the blocks cut, so that the
// other channels count them in their peers' backlog.
func (f *Flow) counted(out []Batch) []Batch {
	if f.pacing.Pacer != nil && len(out) > 0 {
		f.cut += uint64(len(out))
		f.pacing.Pacer.Cut(f.pacing.Channel, f.cut)
	}
	return out
}
