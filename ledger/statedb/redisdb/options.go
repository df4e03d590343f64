package redisdb

import (
	"errors"
	"fmt"
)

// Options configures a DB.
type Options struct {
	// Address is the server: host:port, or the path of its unix socket
	// (starting with /). Required.
	Address string
	// Database is the server's logical database. Default 0; 0 to 15.
	Database int
	// Prefix starts every key of this state database. Default "strand:"
	// and a hash of the directory's absolute path.
	Prefix string
	// Password authenticates to the server; empty: none.
	Password string
}

// ErrBadOptions marks an invalid Options field; test with errors.Is.
var ErrBadOptions = errors.New("redisdb: invalid options")

// EnsureDefaults does nothing: every zero field is its default.
func (o *Options) EnsureDefaults() {}

// Validate reports every invalid field.
func (o *Options) Validate() error {
	var errs []error
	if o.Address == "" {
		errs = append(errs, fmt.Errorf("%w: Address is empty: want host:port or a unix socket path", ErrBadOptions))
	}
	if o.Database < 0 || o.Database > 15 {
		errs = append(errs, fmt.Errorf("%w: Database = %d: want 0 to 15", ErrBadOptions, o.Database))
	}
	return errors.Join(errs...)
}
