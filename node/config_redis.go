package node

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/strand-ledger/strand/ledger/statedb/redisdb"
)

// RedisConfig: the Redis server of the redis backend (stateDB.backend:
// redis), for a user who already runs Redis as the memory tier
// (docs/flexchain.md). The block store stays the truth: a Redis that
// loses data (no persistence, a restart, FLUSHALL) is refilled from it.
type RedisConfig struct {
	// Address is host:port, or the absolute path of a unix socket.
	// Required with backend redis.
	Address string `yaml:"address,omitempty"`
	// Database is the server's logical database; default 0; 0 to 15.
	Database int `yaml:"database,omitempty"`
	// Prefix starts every key this peer writes, so that one Redis holds
	// several peers; default "strand:" and a hash of dataDir/state. At
	// most 256 bytes, no spaces.
	Prefix string `yaml:"prefix,omitempty"`
	// Username (Redis 6 ACL) and PasswordFile, a file holding the
	// password (its trailing newline dropped); empty: no AUTH.
	Username     string `yaml:"username,omitempty"`
	PasswordFile string `yaml:"passwordFile,omitempty"`
	// TLS connects over TLS, trusting CAs (PEM files; none: the system's
	// roots). Not with a unix socket.
	TLS bool     `yaml:"tls,omitempty"`
	CAs []string `yaml:"cas,omitempty"`
}

// resolve makes the section's paths absolute against dir (the node
// file's directory).
func (r *RedisConfig) resolve(dir string) {
	if r.PasswordFile != "" {
		r.PasswordFile = resolve(dir, r.PasswordFile)
	}
	for i := range r.CAs {
		r.CAs[i] = resolve(dir, r.CAs[i])
	}
}

// check reports every invalid field; used is whether backend is redis.
func (r *RedisConfig) check(ck *checker, used bool) {
	switch {
	case used && r.Address == "":
		ck.bad("stateDB.redis.address", r.Address, "the Redis server: host:port, or the absolute path of its unix socket")
	case r.Address != "" && !filepath.IsAbs(r.Address):
		if why := checkHostPort(r.Address); why != "" {
			ck.bad("stateDB.redis.address", r.Address, why+", or the absolute path of a unix socket")
		}
	}
	if r.Database < 0 || r.Database > 15 {
		ck.bad("stateDB.redis.database", r.Database, "0 to 15 (0 is the default)")
	}
	if len(r.Prefix) > 256 || strings.ContainsAny(r.Prefix, " \t\r\n") {
		ck.bad("stateDB.redis.prefix", r.Prefix, "at most 256 bytes without spaces (empty: strand: and a hash of dataDir/state)")
	}
	if r.TLS && filepath.IsAbs(r.Address) {
		ck.bad("stateDB.redis.tls", r.TLS, "false with a unix socket address (TLS is for host:port)")
	}
	if len(r.CAs) > 0 && !r.TLS {
		ck.bad("stateDB.redis.cas", r.CAs, "none unless tls: true")
	}
}

// options reads the password and CA files into the backend's options.
func (r *RedisConfig) options() (redisdb.Options, error) {
	o := redisdb.Options{Address: r.Address, Database: r.Database, Prefix: r.Prefix, Username: r.Username}
	if r.PasswordFile != "" {
		raw, err := os.ReadFile(r.PasswordFile)
		if err != nil {
			return o, fmt.Errorf("node: stateDB.redis.passwordFile: %w", err)
		}
		o.Password = strings.TrimRight(string(raw), "\r\n")
	}
	if r.TLS {
		o.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
		if len(r.CAs) > 0 {
			o.TLS.RootCAs = x509.NewCertPool()
			for _, f := range r.CAs {
				pem, err := os.ReadFile(f)
				if err != nil {
					return o, fmt.Errorf("node: stateDB.redis.cas: %w", err)
				}
				if !o.TLS.RootCAs.AppendCertsFromPEM(pem) {
					return o, fmt.Errorf("node: stateDB.redis.cas: %s holds no PEM certificate", f)
				}
			}
		}
	}
	return o, nil
}
