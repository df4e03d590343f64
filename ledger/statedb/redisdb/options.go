package redisdb

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
)

// Options configures a DB.
type Options struct {
	// Address is the server: host:port, or the path of its unix socket
	// (starting with /). Required.
	Address string
	// Database is the server's logical database. Default 0; 0 to 15.
	Database int
	// Prefix starts every key of this state database, so that several
	// peers may share one server. Default "strand:" and a hash of the
	// directory's absolute path. At most 256 bytes, no spaces.
	Prefix string
	// Username and Password authenticate to the server (AUTH; Redis 6
	// ACL users with a Username); empty: none.
	Username, Password string
	// TLS, if set, connects over TLS (not with a unix socket).
	TLS *tls.Config
}

// ErrBadOptions marks an invalid Options field; test with errors.Is.
var ErrBadOptions = errors.New("redisdb: invalid options")

// maxPrefix bounds Options.Prefix.
const maxPrefix = 256

// EnsureDefaults does nothing: every zero field is its default.
func (o *Options) EnsureDefaults() {}

// Validate reports every invalid field.
func (o *Options) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrBadOptions}, args...)...))
	}
	if o.Address == "" {
		bad("Address is empty: want host:port or a unix socket path")
	}
	if o.Database < 0 || o.Database > 15 {
		bad("Database = %d: want 0 to 15", o.Database)
	}
	if len(o.Prefix) > maxPrefix || strings.ContainsAny(o.Prefix, " \t\r\n") {
		bad("Prefix %q: want at most %d bytes without spaces", o.Prefix, maxPrefix)
	}
	if o.TLS != nil && strings.HasPrefix(o.Address, "/") {
		bad("TLS with the unix socket %s: want TLS only over TCP", o.Address)
	}
	return errors.Join(errs...)
}
