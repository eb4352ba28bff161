package main

import (
	"net/http"

	"alpnib.dev/ic/localnet/governance"
	"alpnib.dev/ic/localnet/registry"
)

// localReplica and registryExecutor wire ic/localnet into the devnet; nil
// until the local replica lands, in which case the devnet serves the
// third-party stand-ins only.
var (
	localReplica     func(*registry.Registry, *governance.Governance) (http.Handler, error)
	registryExecutor func(*registry.Registry) governance.Executor
)
