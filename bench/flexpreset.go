package bench

import (
	"fmt"
	"strconv"
	"time"

	"github.com/strand-ledger/strand/bench/rate"
)

// The FlexChain presets (docs/flexchain.md): its disaggregated peer
// (memnodes) against its "generic XOV" peer (Pebble with a small or a
// large memtable), scaled from its 16-core servers and 4–40 GB data sets
// to a machine of 2 cores. Every round runs on node processes, so that a
// memory node is a process of its own and the monolithic peers have the
// same processes less the memory nodes. Pairs to compare run back to
// back within one preset, so that a shared machine's drift falls on both.

// flexRecord is FlexChain's record: 10 KB.
const flexRecord = 10_000

func init() {
	for _, p := range []Preset{
		{"flexchain-memory", "FlexChain Fig. 5(b): YCSB-A (uniform, 10 KB records) on peers with memory nodes, the memory tier from 1/16 of the data set to all of it (quick: 16 MB of records; full: 128 MB), local cache 1/64 of the data; each memory node held to the RAM of its tier (a memory cgroup of 3 × the tier + 96 MiB, page cache included). Needs root (cgroups)",
			flexMemoryRounds},
		{"flexchain-tiered", "FlexChain Fig. 7(a-c): peers with memory nodes (the data fits the memory tier; cache 1/8 of it) against monolithic Pebble peers with a 4 MB and a large memtable, on YCSB-A and B (10 KB records; quick 8 MB, full 64 MB, and 7(c) twice that), Smallbank at Pw 5, 50 and 95% (quick 1,000 accounts, full 100,000); then one client alone on YCSB-A and Smallbank, tiered against the large memtable",
			flexTieredRounds},
		{"flexchain-cache", "FlexChain Fig. 8(a): YCSB-A (10 KB records; quick 8 MB, full 64 MB) on peers with memory nodes: local cache sizes against a memory tier that holds the data and one that holds half of it, Zipf s = 0 and 2; hit ratio per tier and throughput",
			flexCacheRounds},
		{"flexchain-memcpu", "FlexChain Fig. 8(b): YCSB-A and B (10 KB records; quick 8 MB, full 64 MB) on peers with memory nodes whose CPU quota goes from 0.1 to 2 cores (the machine's all). Needs root (cgroups)",
			flexMemCPURounds},
		{"flexchain-compute", "FlexChain Fig. 5(a): K-Means (K 20, 100 dimensions, up to 2000 epochs, 1,000 points read per call) on one peer with a memory node and 1, 2 and 4 compute nodes of 0.4 cores each (full: and 0.2), sequential and parallel validation. Needs root (cgroups)",
			flexComputeRounds},
	} {
		Presets[p.Name] = p
	}
}

// dataMB is the size of records FlexChain records in MiB, rounded up.
func dataMB(records int) int { return (records*flexRecord + 1<<20 - 1) >> 20 }

// holdsAll is a memory tier that holds a data set of records and the
// versions written while a flush is pending: a quarter more and 4 MiB.
func holdsAll(records int) int { return dataMB(records)*5/4 + 4 }

func flexYCSB(mix string, records int, zipf string) map[string]string {
	return map[string]string{"mix": mix, "records": strconv.Itoa(records), "value_size": strconv.Itoa(flexRecord), "zipf": zipf}
}

// smallbankPw is Smallbank with a write share of pw percent, spread
// evenly over the five writes (FlexChain: "one of the five modifying
// transactions with probability Pw"), the balance query the rest.
func smallbankPw(pw, accounts int) map[string]string {
	w := strconv.Itoa(pw / 5)
	return map[string]string{"accounts": strconv.Itoa(accounts), "mix": fmt.Sprintf(
		"deposit_checking=%s,write_check=%s,transact_savings=%s,send_payment=%s,amalgamate=%s,query=%d", w, w, w, w, w, 100-pw)}
}

// tieredRound is a round on peers with memory nodes.
func tieredRound(label, wl string, p map[string]string, memMB, cacheMB int, dur time.Duration) Round {
	return Round{Label: label, Workload: wl, Params: p, Clients: 16, Duration: dur,
		Interference: Interference{Network: "processes"}, Disagg: Disagg{Memnodes: true, MemoryMB: memMB, CacheMB: max(cacheMB, 1)}}
}

// monoRound is a round on monolithic Pebble peers with a memtable of
// memtableMB, paired with a tiered round whose peers' cache is cacheMB:
// the monolithic peer's committer cache (state_cache_mb) gets the same
// bytes, so that neither peer has more cache of its own than the other.
func monoRound(label, wl string, p map[string]string, memtableMB, cacheMB int, dur time.Duration) Round {
	return Round{Label: label, Workload: wl, Params: p, Clients: 16, Duration: dur,
		Interference: Interference{Network: "processes"}, Disagg: Disagg{MemtableMB: memtableMB, StateCacheMB: max(cacheMB, 1)}}
}

// Fig. 5(b)'s memory nodes hold the RAM of a machine sized to their
// memory tier: memory_limit_mb (memlimit.go) moves with memory_mb, and
// Pebble's block cache is a small fixed 4 MiB, so that the memory tier is
// the only memory that grows from round to round.
const (
	flexStorageCacheMB = 4
	// flexProcessMB is a memory node's RAM beyond its tier: its Go
	// runtime, gRPC and TLS (about 30 MiB), Pebble's block cache and two
	// 16 MiB memtables, and the page cache of Pebble's indexes, filters
	// and WAL (measured: 77–82 MiB of anonymous memory with an 8 MiB tier
	// under a 112 MiB limit, docs/flexchain.md).
	flexProcessMB = 96
	// flexHeapFactor is the memory tier's share of the limit per MiB of
	// tier: the versions, their keys and index, and the Go collector's
	// headroom (with less, GOMEMLIMIT makes the collector run so often
	// that its CPU, not the storage tier, sets the large tier's
	// throughput: 440 against 519 tx/s with 123 MiB under 342 MiB).
	flexHeapFactor = 3
)

// flexMemLimit is the memory limit of a memory node with a tier of memMB.
func flexMemLimit(memMB int) int { return flexHeapFactor*memMB + flexProcessMB }

func flexMemoryRounds(full bool) []Round {
	records := pick(full, 1600, 12800)
	dur := pick(full, 3*time.Second, 30*time.Second)
	data := dataMB(records)
	round := func(label string, mem int) Round {
		r := tieredRound(label, "ycsb", flexYCSB("a", records, "0"), mem, data/64, dur)
		r.StorageCacheMB = flexStorageCacheMB
		r.MemoryLimitMB = map[string]int{"memnode": flexMemLimit(mem)}
		return r
	}
	var rs []Round
	for _, div := range []int{16, 8, 4, 2, 1} {
		rs = append(rs, round(fmt.Sprintf("memory-1/%d", div), max(data/div, 1)))
	}
	return append(rs, round("memory-all", holdsAll(records)))
}

func flexTieredRounds(full bool) []Round {
	records := pick(full, 800, 6400)
	accounts := pick(full, 1000, 100_000)
	dur := pick(full, 3*time.Second, 20*time.Second)
	var rs []Round
	// trio: tiered (the data fits the memory tier), then the large and
	// the small memtable, back to back.
	trio := func(name, wl string, p map[string]string, dataMiB, largeMB int) {
		rs = append(rs,
			tieredRound(name+"-tiered", wl, p, dataMiB*5/4+4, dataMiB/8, dur),
			monoRound(name+"-mono-large", wl, p, largeMB, dataMiB/8, dur),
			monoRound(name+"-mono-4mb", wl, p, 4, dataMiB/8, dur))
	}
	data := dataMB(records)
	large := max(data, 64)
	trio("ycsb-a", "ycsb", flexYCSB("a", records, "0"), data, large)
	trio("ycsb-b", "ycsb", flexYCSB("b", records, "0"), data, large)
	// Smallbank's state: two keys per customer, a few dozen bytes each,
	// which the memory tier holds at about 250 bytes a version with its
	// key and index (measured: 100,000 customers did not fit 19 MiB).
	sbMB := max(accounts*2*256>>20, 1)
	for _, pw := range []int{5, 50, 95} {
		trio(fmt.Sprintf("smallbank-pw%d", pw), "smallbank", smallbankPw(pw, accounts), sbMB, max(sbMB, 64))
	}
	// 7(c): twice the records; the monolithic memtable stays at the
	// first data set's size (FlexChain: 10 GB remote memory against 4 GB
	// local).
	for _, mix := range []string{"a", "b"} {
		p := flexYCSB(mix, 2*records, "0")
		rs = append(rs,
			tieredRound("ycsb2x-"+mix+"-tiered", "ycsb", p, dataMB(2*records)*5/4+4, data/8, dur),
			monoRound("ycsb2x-"+mix+"-mono-large", "ycsb", p, large, data/8, dur))
	}
	// Low load: one client, one transaction outstanding.
	for _, c := range []struct {
		name, wl string
		p        map[string]string
		dataMiB  int
	}{{"ycsb-a", "ycsb", flexYCSB("a", records, "0"), data}, {"smallbank-pw50", "smallbank", smallbankPw(50, accounts), sbMB}} {
		t := tieredRound("1client-"+c.name+"-tiered", c.wl, c.p, c.dataMiB*5/4+4, c.dataMiB/8, dur)
		m := monoRound("1client-"+c.name+"-mono-large", c.wl, c.p, max(c.dataMiB, 64), c.dataMiB/8, dur)
		for _, r := range []*Round{&t, &m} {
			r.Clients, r.Rate = 1, rate.Config{Kind: "fixed-load", Load: 1}
		}
		rs = append(rs, t, m)
	}
	return rs
}

func flexCacheRounds(full bool) []Round {
	records := pick(full, 800, 6400)
	dur := pick(full, 3*time.Second, 20*time.Second)
	data := dataMB(records)
	caches := pick(full, []int{1, 4}, []int{1, 4, 32})
	var rs []Round
	for _, s := range []string{"0", "2"} {
		for _, mem := range []struct {
			name string
			mb   int
		}{{"all", holdsAll(records)}, {"half", max(data/2, 1)}} {
			if !full && s == "2" && mem.name == "half" {
				continue // quick: the skewed run with the whole data set in memory only
			}
			for _, c := range caches {
				rs = append(rs, tieredRound(fmt.Sprintf("s%s-mem-%s-cache%dmb", s, mem.name, c), "ycsb", flexYCSB("a", records, s), mem.mb, c, dur))
			}
		}
	}
	return rs
}

func flexMemCPURounds(full bool) []Round {
	records := pick(full, 800, 6400)
	dur := pick(full, 3*time.Second, 20*time.Second)
	quotas := pick(full, []float64{0.1, 1}, []float64{0.1, 0.25, 0.5, 1, 2})
	var rs []Round
	for _, mix := range []string{"a", "b"} {
		for _, q := range quotas {
			r := tieredRound(fmt.Sprintf("ycsb-%s-memnode-%gcpu", mix, q), "ycsb", flexYCSB(mix, records, "0"), holdsAll(records), dataMB(records)/8, dur)
			r.CPUQuota = map[string]float64{"memnode": q}
			rs = append(rs, r)
		}
	}
	return rs
}

// flexKMeansN is the points one get_food reads (and clusters): with
// FlexChain's K 20, 100 dimensions and 2,000 epochs (uniform points
// converge in about 15) a call costs about 41 ms of one core
// (contracts/kmeans BenchmarkGetFood) and 42–51 core-ms per transaction
// on a compute node, against 7–10 core-ms for all the rest (primary,
// orderer, memory node, load generator): execution is the bottleneck, as
// in FlexChain. docs/flexchain.md has the measurements behind it.
const flexKMeansN = 1000

// flexComputeRounds: one org (one logical peer, so that every core the
// compute nodes do not take goes to the one primary, orderer and memory
// node), compute nodes × quota × validation mode.
func flexComputeRounds(full bool) []Round {
	points := pick(full, 2*flexKMeansN, 10*flexKMeansN)
	dur := pick(full, 6*time.Second, 15*time.Second)
	quotas := pick(full, []float64{0.4}, []float64{0.4, 0.2})
	p := map[string]string{"points": strconv.Itoa(points), "n": strconv.Itoa(flexKMeansN), "k": "20", "dims": "100", "epochs": "2000", "threshold": "0.01"}
	var rs []Round
	for _, mode := range []string{"sequential", "parallel"} {
		for _, q := range quotas {
			for _, n := range []int{1, 2, 4} {
				rs = append(rs, Round{Label: fmt.Sprintf("%s-compute%d-%gcpu", mode, n, q), Workload: "kmeans", Params: p,
					Clients: 16, Duration: dur, Orgs: 1, Validation: mode,
					Interference: Interference{Network: "processes", CPUQuota: map[string]float64{"compute": q}},
					Disagg:       Disagg{Memnodes: true, ComputeNodes: n}})
			}
		}
	}
	return rs
}
