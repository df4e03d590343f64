package statedb

import (
	"errors"
	"fmt"
)

// Tunable is a backend's Options: zero fields mean defaults.
type Tunable interface {
	// Validate reports every invalid field.
	Validate() error
	// EnsureDefaults replaces zero fields with their defaults.
	EnsureDefaults()
}

// PrepareOpen is the common start of every on-disk backend's Open: it
// validates opts, fills in their defaults, and claims dir for f (see
// ClaimDir; adopt may be nil).
func PrepareOpen(dir string, f Format, opts Tunable, adopt func(names []string) bool) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	opts.EnsureDefaults()
	return ClaimDir(dir, f, adopt)
}

// SetDefault sets *field to def if it is zero.
func SetDefault[T comparable](field *T, def T) {
	var zero T
	if *field == zero {
		*field = def
	}
}

// OptionErrors collects invalid option fields, each wrapped in a
// backend's sentinel (its ErrBadOptions).
type OptionErrors struct {
	Sentinel error
	errs     []error
}

// Bad records that field has value where want is expected.
func (o *OptionErrors) Bad(field string, value any, want string) {
	if s, ok := value.(string); ok {
		value = fmt.Sprintf("%q", s)
	}
	o.errs = append(o.errs, fmt.Errorf("%w: %s = %v, want %s", o.Sentinel, field, value, want))
}

// Size checks a byte count that is 0 (default) or positive, and at most
// max when max > 0.
func (o *OptionErrors) Size(field string, v, max int64) {
	switch {
	case v < 0:
		o.Bad(field, v, "0 (default) or a positive byte count")
	case max > 0 && v > max:
		o.Bad(field, v, fmt.Sprintf("0 (default) to %d", max))
	}
}

// Err returns the recorded errors joined, or nil.
func (o *OptionErrors) Err() error { return errors.Join(o.errs...) }
