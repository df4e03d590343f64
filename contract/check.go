package contract

import "fmt"

// Statusf returns an *Error with the given status, such as 404 for a
// missing key or 409 for one that already exists.
func Statusf(status int, format string, args ...any) error {
	return &Error{Status: status, Message: fmt.Sprintf(format, args...)}
}

// CheckKey returns an *Error with status 400 unless key is a valid state
// key (1 to MaxKeyBytes bytes). what names the key in the message, such as
// "account id".
func CheckKey(what, key string) error {
	if key == "" || len(key) > MaxKeyBytes {
		return Statusf(400, "%s %s is %d bytes: want 1 to %d", what, quote([]byte(key)), len(key), MaxKeyBytes)
	}
	return nil
}

// CheckValue returns an *Error with status 400 if value is longer than
// MaxValueBytes.
func CheckValue(what string, value []byte) error {
	if len(value) > MaxValueBytes {
		return Statusf(400, "%s is %d bytes: want at most %d", what, len(value), MaxValueBytes)
	}
	return nil
}
