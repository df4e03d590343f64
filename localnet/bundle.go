package localnet

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/strand-ledger/strand/node"
)

// Bundle writes to w a gzipped tar of what node name of the network in
// dir needs to run on its own machine: its node file, the channel file,
// its own key pairs and the CA certificates it trusts, at their paths
// under dir, so that extracting it into a directory (such as /etc/strand)
// gives a node file that loads as it is.
//
// The invariant: a bundle holds only what the node file and the channel
// file name. Every path is checked to lie under dir, and no CA key
// (ca-key.pem) nor another node's or client's key is ever in it, so that
// handing a bundle to a node's operator hands over nothing else.
func Bundle(dir, name string, w io.Writer) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("localnet: %w", err)
	}
	lay, err := Load(dir)
	if err != nil {
		return err
	}
	files, err := bundleFiles(lay, name)
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(w)
	tw := tar.NewWriter(zw)
	for _, f := range files {
		if err := addFile(tw, dir, f); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("localnet: bundle of %s: %w", name, err)
	}
	return zw.Close()
}

// bundleFiles lists the absolute paths node name's files name.
func bundleFiles(lay *Layout, name string) ([]string, error) {
	var n *Node
	var names []string
	for _, all := range [][]Node{lay.Nodes, lay.Memnodes} {
		for i := range all {
			names = append(names, all[i].Name)
			if all[i].Name == name {
				n = &all[i]
			}
		}
	}
	if n == nil {
		return nil, fmt.Errorf("localnet: network %s has no node %q; its nodes: %s", lay.Dir, name, strings.Join(names, ", "))
	}
	files := []string{n.Config}
	if n.Kind() == MemnodeKind {
		m, err := node.LoadMemnode(n.Config)
		if err != nil {
			return nil, err
		}
		files = append(files, m.TLS.Cert, m.TLS.Key)
		files = append(files, m.CAs...)
	} else {
		c, err := node.LoadNode(n.Config)
		if err != nil {
			return nil, err
		}
		ch, err := node.LoadChannel(c.Channel)
		if err != nil {
			return nil, err
		}
		files = append(files, c.Channel, c.Identity.Cert, c.Identity.Key, c.TLS.Cert, c.TLS.Key)
		files = append(files, c.StateDB.Memnode.CAs...)
		for _, o := range ch.Orgs {
			files = append(files, o.CA)
		}
		if c.Join != "" {
			files = append(files, c.Join)
		}
	}
	slices.Sort(files)
	files = slices.Compact(files)
	for _, f := range files {
		rel, err := filepath.Rel(lay.Dir, f)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return nil, fmt.Errorf("localnet: node %s names %s, outside the network directory %s: a bundle holds only the network's own files", name, f, lay.Dir)
		}
		if filepath.Base(f) == "ca-key.pem" {
			return nil, fmt.Errorf("localnet: node %s names the CA key %s: a bundle never holds one", name, f)
		}
	}
	return files, nil
}

// addFile adds path to tw under its path relative to dir, with its mode
// (keys stay 0600).
func addFile(tw *tar.Writer, dir, path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("localnet: bundle: %w", err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("localnet: bundle: %s is not a regular file", path)
	}
	rel, err := filepath.Rel(dir, path)
	if err != nil {
		return fmt.Errorf("localnet: bundle: %w", err)
	}
	hdr := &tar.Header{Name: filepath.ToSlash(rel), Mode: int64(st.Mode().Perm()), Size: st.Size(), ModTime: st.ModTime().Truncate(time.Second), Typeflag: tar.TypeReg}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("localnet: bundle: %w", err)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("localnet: bundle: %w", err)
	}
	defer f.Close()
	if _, err := io.CopyN(tw, f, st.Size()); err != nil {
		return fmt.Errorf("localnet: bundle: %s: %w", path, err)
	}
	return nil
}
