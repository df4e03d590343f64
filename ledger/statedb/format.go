package statedb

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Format names the on-disk format of a state directory: the backend that
// wrote it and the version of that backend's layout. Every on-disk
// backend claims its directory with ClaimDir before it opens its engine,
// so a directory is never read by a backend, or a format version, other
// than the one that wrote it.
type Format struct {
	Backend string // the backend's name in node config: "pebble", "leveldb", ...
	Version int    // bumped when the backend's layout changes incompatibly
}

func (f Format) String() string { return fmt.Sprintf("backend %q format %d", f.Backend, f.Version) }

// FormatFile is the name of the marker file in a state directory.
const FormatFile = "STRAND-STATEDB"

// formatMagic is the first line of a marker file.
const formatMagic = "strand statedb"

// ErrFormat marks a directory written by another backend or format
// version, or not by strand at all; test with errors.Is.
var ErrFormat = errors.New("statedb: state directory format mismatch")

// ClaimDir makes dir a state directory of format f: it creates dir if
// needed and writes the marker file into an empty directory, or checks
// the marker of an existing one. A directory holding a different marker,
// or files but no marker, is refused with ErrFormat naming both formats;
// adopt, if not nil, may accept a markerless directory by its file names
// (a directory written before markers existed), which then gets a marker.
func ClaimDir(dir string, f Format, adopt func(names []string) bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("statedb: create state directory: %w", err)
	}
	path := filepath.Join(dir, FormatFile)
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		got, perr := parseFormat(data)
		if perr != nil {
			return fmt.Errorf("%w: %s: %v; this is %s", ErrFormat, path, perr, f)
		}
		if got != f {
			return fmt.Errorf("%w: %s was written by %s; this is %s: set stateDB.backend to %q, or move the directory away to rebuild the state from the block store",
				ErrFormat, dir, got, f, got.Backend)
		}
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("statedb: read %s: %w", path, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("statedb: list state directory: %w", err)
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	if len(names) > 0 && (adopt == nil || !adopt(names)) {
		return fmt.Errorf("%w: %s holds %d files but no %s marker, so no strand backend wrote it; this is %s: refusing to reinterpret it",
			ErrFormat, dir, len(names), FormatFile, f)
	}
	return writeFormat(dir, f)
}

// writeFormat writes the marker atomically: a temporary file, synced,
// renamed into place, and the directory synced.
func writeFormat(dir string, f Format) error {
	tmp, err := os.CreateTemp(dir, FormatFile+".tmp*")
	if err != nil {
		return fmt.Errorf("statedb: write format marker: %w", err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	_, err = fmt.Fprintf(tmp, "%s\nbackend %s\nformat %d\n", formatMagic, f.Backend, f.Version)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, FormatFile))
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("statedb: write format marker: %w", err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// parseFormat parses a marker file.
func parseFormat(data []byte) (Format, error) {
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 3 || lines[0] != formatMagic {
		return Format{}, fmt.Errorf("not a marker file (want 3 lines starting with %q)", formatMagic)
	}
	backend, ok1 := strings.CutPrefix(lines[1], "backend ")
	ver, ok2 := strings.CutPrefix(lines[2], "format ")
	n, err := strconv.Atoi(ver)
	if !ok1 || !ok2 || backend == "" || err != nil {
		return Format{}, fmt.Errorf("malformed marker lines %q", lines[1:])
	}
	return Format{Backend: backend, Version: n}, nil
}
