package pebbledb

import "log"

// quietLogger drops Pebble's informational messages (WAL recovery
// chatter on every Open) and passes errors to the standard logger.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any) {}

func (quietLogger) Errorf(format string, args ...any) { log.Printf("pebbledb: "+format, args...) }

func (quietLogger) Fatalf(format string, args ...any) { log.Fatalf("pebbledb: "+format, args...) }
