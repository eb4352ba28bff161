package nns

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// GetLatestVersion reads the registry's latest version (get_latest_version,
// protobuf RegistryGetLatestVersionResponse { uint64 version = 1 }). Every
// registry mutation bumps it, so `alp plan -out` records it and `alp apply`
// refuses a plan made against an older registry.
func (r RegistryClient) GetLatestVersion(ctx context.Context) (uint64, error) {
	raw, err := r.Caller.Query(ctx, registryID, "get_latest_version", nil)
	if err != nil {
		return 0, fmt.Errorf("get_latest_version: %w", err)
	}
	var version uint64
	err = fields(raw, func(n protowire.Number, t protowire.Type, b []byte) (int, error) {
		if n == 1 {
			v, l, err := getVarint(t, b)
			version = v
			return l, err
		}
		return -1, nil
	})
	if err != nil {
		return 0, fmt.Errorf("get_latest_version: decode reply: %w", err)
	}
	return version, nil
}
