package ledger

import (
	"fmt"
	"time"
)

// Stats is a snapshot of the store's size and activity since it was
// opened.
type Stats struct {
	Height     uint64        `metric:"gauge"`   // Blocks stored.
	Bytes      int64         `metric:"gauge"`   // Bytes in segment files.
	Segments   int           `metric:"gauge"`   // Segment files.
	Appends    uint64        `metric:"counter"` // Successful appends (each one or more blocks) since the store opened.
	Blocks     uint64        `metric:"counter"` // Blocks appended since the store opened.
	Fsyncs     uint64        `metric:"counter"` // Segment fsyncs since the store opened.
	FsyncTotal time.Duration `metric:"counter"` // Time spent in segment fsyncs since the store opened.
	Damaged    int           `metric:"gauge"`   // Damaged blocks not yet replaced from the ordering service.
	Replaced   uint64        `metric:"counter"` // Damaged blocks replaced since the store opened.
	LastRepair Repair        // what OpenBlockStore repaired
}

// String renders the stats on one line.
func (st Stats) String() string {
	var avg time.Duration
	if st.Fsyncs > 0 {
		avg = st.FsyncTotal / time.Duration(st.Fsyncs)
	}
	return fmt.Sprintf("height %d, %d bytes in %d segments; %d appends of %d blocks; %d fsyncs, %s total, %s avg; %d damaged, %d replaced; open: %s",
		st.Height, st.Bytes, st.Segments, st.Appends, st.Blocks, st.Fsyncs, st.FsyncTotal, avg, st.Damaged, st.Replaced, st.LastRepair)
}

// Stats returns the current metrics.
func (s *BlockStore) Stats() Stats {
	v := s.state.Load()
	return Stats{
		Height:     v.height,
		Bytes:      v.sizeSum + v.endOff,
		Segments:   len(v.segs),
		Appends:    s.metrics.appends.Load(),
		Blocks:     s.metrics.blocks.Load(),
		Fsyncs:     s.metrics.fsyncs.Load(),
		FsyncTotal: time.Duration(s.metrics.fsyncNanos.Load()),
		Damaged:    len(s.Damaged()),
		Replaced:   s.metrics.replaced.Load(),
		LastRepair: s.repair,
	}
}

var clockStart = time.Now()

// nanotime is a monotonic clock reading for measuring fsync latency.
func nanotime() int64 { return int64(time.Since(clockStart)) }
