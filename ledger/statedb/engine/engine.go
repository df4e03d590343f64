package engine

// Engine is an ordered byte-keyed store. Keys compare as byte strings.
type Engine interface {
	// Snapshot returns a read-only, point-in-time view of the committed
	// state. The caller releases it.
	Snapshot() (Snapshot, error)
	// Write applies b atomically. With sync it returns once b is durable.
	Write(b *Batch, sync bool) error
	// Close releases the engine. It is called once, after every snapshot
	// has been released.
	Close() error
}

// Snapshot is a consistent view. Its byte slices are valid only during
// the callback that receives them.
type Snapshot interface {
	// Get calls fn with the value of key if key exists, and reports
	// whether it does. fn's error is returned.
	Get(key []byte, fn func(val []byte) error) (bool, error)
	// Iterate calls fn for each key in [lower, upper) in ascending order
	// until fn returns false.
	Iterate(lower, upper []byte, fn func(key, val []byte) bool) error
	// Release frees the view.
	Release()
}

// Batch is an ordered list of puts and deletes, encoded back to back in
// one buffer that is reused across Apply calls. Later operations on a key
// win over earlier ones.
type Batch struct {
	buf []byte
	ops []op
}

// op is one operation: key buf[start:mid], value buf[mid:end].
type op struct {
	start, mid, end int
	del             bool
}

// Len returns the number of operations.
func (b *Batch) Len() int { return len(b.ops) }

// Op returns operation i. The slices alias the batch's buffer: valid
// until the batch is reset, and not to be modified.
func (b *Batch) Op(i int) (key, val []byte, del bool) {
	o := b.ops[i]
	return b.buf[o.start:o.mid:o.mid], b.buf[o.mid:o.end:o.end], o.del
}

// Each calls put or del for each operation in order, for engines whose
// batch type buffers operations without failing. The slices are Op's.
func (b *Batch) Each(put func(key, val []byte), del func(key []byte)) {
	for i := range b.ops {
		key, val, isDel := b.Op(i)
		if isDel {
			del(key)
		} else {
			put(key, val)
		}
	}
}

// Size returns the bytes of keys and values in the batch.
func (b *Batch) Size() int { return len(b.buf) }

func (b *Batch) reset() { b.buf, b.ops = b.buf[:0], b.ops[:0] }

// begin opens an operation; the caller appends its key to b.buf, calls
// mid, appends its value, and calls end.
func (b *Batch) begin(del bool) { b.ops = append(b.ops, op{start: len(b.buf), del: del}) }

func (b *Batch) mid() { b.ops[len(b.ops)-1].mid = len(b.buf) }

func (b *Batch) end() { b.ops[len(b.ops)-1].end = len(b.buf) }
