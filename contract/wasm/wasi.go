package wasm

import (
	"crypto/sha256"
	"encoding/binary"

	"github.com/tetratelabs/wazero/api"
)

// WASI preview 1 for contracts: deterministic by construction. Toolchains
// (Go's wasip1 port, wasi-libc) import these functions whether or not the
// contract uses them, so every one of them is provided, but nothing of
// the machine reaches the contract:
//
//   - Clocks are virtual. The monotonic clock starts at 1 s when an
//     instance is made and advances 1 µs per reading and by the full
//     timeout of a poll_oneoff sleep; every call starts it where
//     _initialize left it. The realtime clock is the transaction's
//     timestamp plus the monotonic time elapsed in the call.
//   - random_get returns SHA-256 in counter mode over the tx id: the same
//     bytes on every endorser.
//   - stdout and stderr are kept, bounded, for the call's error message;
//     there are no arguments, environment variables or preopened
//     directories.
//   - Everything else (files, sockets, signals, reading stdin) ends the
//     call with ErrRefused, naming the function.
//
// proc_exit ends the call with ErrExit and its code.

// errno values of WASI preview 1.
const (
	errnoSuccess = 0
	errnoBadf    = 8
)

const clockStart = uint64(1e9) // a zero monotonic time may look unset to a runtime

var wasiFuncs = append([]hostFunc{
	{"args_get", types(i32, i32), types(i32), zero},
	{"args_sizes_get", types(i32, i32), types(i32), twoZeros},
	{"environ_get", types(i32, i32), types(i32), zero},
	{"environ_sizes_get", types(i32, i32), types(i32), twoZeros},
	{"clock_res_get", types(i32, i32), types(i32), func(in *instance, mem api.Memory, s []uint64) {
		in.writeU64(mem, s[1], 1000)
		s[0] = errnoSuccess
	}},
	{"clock_time_get", types(i32, i64, i32), types(i32), func(in *instance, mem api.Memory, s []uint64) {
		t := in.clock
		if uint32(s[0]) == 0 { // realtime
			t = uint64(in.realNs) + (in.clock - in.clock0)
		}
		in.clock += 1000
		in.writeU64(mem, s[2], t)
		s[0] = errnoSuccess
	}},
	{"fd_write", types(i32, i32, i32, i32), types(i32), fdWrite},
	{"fd_fdstat_get", types(i32, i32), types(i32), badf},
	{"fd_prestat_get", types(i32, i32), types(i32), badf},
	{"fd_prestat_dir_name", types(i32, i32, i32), types(i32), badf},
	{"fd_close", types(i32), types(i32), badf},
	{"poll_oneoff", types(i32, i32, i32, i32), types(i32), pollOneoff},
	{"proc_exit", types(i32), nil, func(in *instance, mem api.Memory, s []uint64) {
		in.abortf(ErrExit, "exit code %d", uint32(s[0]))
	}},
	{"random_get", types(i32, i32), types(i32), randomGet},
	{"sched_yield", nil, types(i32), zero},
},
	refused("fd_advise", i32, i64, i64, i32),
	refused("fd_allocate", i32, i64, i64),
	refused("fd_datasync", i32),
	refused("fd_fdstat_set_flags", i32, i32),
	refused("fd_fdstat_set_rights", i32, i64, i64),
	refused("fd_filestat_get", i32, i32),
	refused("fd_filestat_set_size", i32, i64),
	refused("fd_filestat_set_times", i32, i64, i64, i32),
	refused("fd_pread", i32, i32, i32, i64, i32),
	refused("fd_pwrite", i32, i32, i32, i64, i32),
	refused("fd_read", i32, i32, i32, i32),
	refused("fd_readdir", i32, i32, i32, i64, i32),
	refused("fd_renumber", i32, i32),
	refused("fd_seek", i32, i64, i32, i32),
	refused("fd_sync", i32),
	refused("fd_tell", i32, i32),
	refused("path_create_directory", i32, i32, i32),
	refused("path_filestat_get", i32, i32, i32, i32, i32),
	refused("path_filestat_set_times", i32, i32, i32, i32, i64, i64, i32),
	refused("path_link", i32, i32, i32, i32, i32, i32, i32),
	refused("path_open", i32, i32, i32, i32, i32, i64, i64, i32, i32),
	refused("path_readlink", i32, i32, i32, i32, i32, i32),
	refused("path_remove_directory", i32, i32, i32),
	refused("path_rename", i32, i32, i32, i32, i32, i32),
	refused("path_symlink", i32, i32, i32, i32, i32),
	refused("path_unlink_file", i32, i32, i32),
	refused("proc_raise", i32),
	refused("sock_accept", i32, i32, i32),
	refused("sock_recv", i32, i32, i32, i32, i32, i32),
	refused("sock_send", i32, i32, i32, i32, i32),
	refused("sock_shutdown", i32, i32),
)

// refused is a WASI function a module may import but not call.
func refused(name string, params ...api.ValueType) hostFunc {
	return hostFunc{name, params, types(i32), func(in *instance, mem api.Memory, s []uint64) {
		in.abortf(ErrRefused, "%s.%s: a contract has no files, sockets or signals; it reads and writes the ledger through the %s module",
			WASIModule, name, HostModule)
	}}
}

func zero(in *instance, mem api.Memory, s []uint64) { s[0] = errnoSuccess }

func badf(in *instance, mem api.Memory, s []uint64) { s[0] = errnoBadf }

// twoZeros answers a *_sizes_get: no items, no bytes.
func twoZeros(in *instance, mem api.Memory, s []uint64) {
	in.write(mem, s[0], []byte{0, 0, 0, 0})
	in.write(mem, s[1], []byte{0, 0, 0, 0})
	s[0] = errnoSuccess
}

func (in *instance) writeU64(mem api.Memory, ptr, v uint64) {
	in.write(mem, ptr, binary.LittleEndian.AppendUint64(nil, v))
}

// fdWrite keeps what a contract writes to stdout or stderr, up to
// Options.OutputBytes, and reports it all written.
func fdWrite(in *instance, mem api.Memory, s []uint64) {
	fd, iovs, n, nwritten := uint32(s[0]), s[1], uint32(s[2]), s[3]
	if fd != 1 && fd != 2 {
		s[0] = errnoBadf
		return
	}
	total := uint32(0)
	for i := range n {
		iov := in.read(mem, iovs+uint64(i)*8, 8)
		b := in.read(mem, uint64(binary.LittleEndian.Uint32(iov)), uint64(binary.LittleEndian.Uint32(iov[4:])))
		if room := in.m.e.opts.OutputBytes - len(in.out); room > 0 {
			in.out = append(in.out, b[:min(room, len(b))]...)
		}
		total += uint32(len(b))
	}
	in.write(mem, nwritten, binary.LittleEndian.AppendUint32(nil, total))
	s[0] = errnoSuccess
}

// pollOneoff sleeps on the virtual clock: every clock subscription fires
// at once and the clock advances past the longest; fd subscriptions fail
// with EBADF.
func pollOneoff(in *instance, mem api.Memory, s []uint64) {
	subs, events, n, nevents := s[0], s[1], uint32(s[2]), s[3]
	for i := range n {
		sub := in.read(mem, subs+uint64(i)*48, 48)
		ev := make([]byte, 32)
		copy(ev, sub[:8]) // userdata
		ev[10] = sub[8]   // the event type is the subscription's tag
		if sub[8] == 0 {  // clock
			timeout := binary.LittleEndian.Uint64(sub[24:])
			if binary.LittleEndian.Uint16(sub[40:])&1 != 0 { // absolute
				in.clock = max(in.clock, timeout)
			} else {
				in.clock += timeout
			}
		} else {
			binary.LittleEndian.PutUint16(ev[8:], errnoBadf)
		}
		in.write(mem, events+uint64(i)*32, ev)
	}
	in.write(mem, nevents, binary.LittleEndian.AppendUint32(nil, n))
	s[0] = errnoSuccess
}

// randomGet fills the buffer with SHA-256(tx id, call's counter, block).
func randomGet(in *instance, mem api.Memory, s []uint64) {
	buf := in.read(mem, s[0], s[1])
	seed := ""
	if in.stub != nil {
		seed = in.stub.TxID()
	}
	in.random++
	var ctr [16]byte
	binary.LittleEndian.PutUint64(ctr[:8], in.random)
	for i := 0; i < len(buf); i += sha256.Size {
		binary.LittleEndian.PutUint64(ctr[8:], uint64(i))
		sum := sha256.Sum256(append([]byte(seed), ctr[:]...))
		copy(buf[i:], sum[:])
	}
	s[0] = errnoSuccess
}
