package api

// Regenerate the protobuf code (needs protoc and protoc-gen-go on PATH):
//
//	go generate ./api
//
//go:generate protoc --go_out=. --go_opt=paths=source_relative strand.proto
