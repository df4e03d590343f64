package api

// Regenerate the protobuf and gRPC code (needs protoc, protoc-gen-go and
// protoc-gen-go-grpc on PATH; README pins their versions):
//
//	go generate ./api
//
//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative strand.proto services.proto memnode.proto contract.proto
