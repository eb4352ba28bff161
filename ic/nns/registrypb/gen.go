// Package registrypb holds the NNS registry's protobuf messages that alp
// reads: the records (node, node operator, subnet, data center, replica
// version) and the registry canister's transport messages. The .proto files
// beside this one are ours, written from the upstream field facts recorded in
// docs/decisions.md; the Go code is generated from them by protoc-gen-go.
package registrypb

//go:generate protoc --proto_path=. --go_out=. --go_opt=paths=source_relative types.proto node.proto node_operator.proto dc.proto replica_version.proto subnet.proto mixed_hash_tree.proto transport.proto
