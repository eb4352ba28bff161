package atomicfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ReadRecords reads every <id>.json in dir, each a record written with
// WriteFile, into a map by id. A record removed while the folder is read
// is skipped, and so is one that does not decode: half a record stands
// for nothing, and whoever keeps the folder makes it again. what names
// the records in the error.
func ReadRecords[T any](dir, what string) (map[string]T, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", what, err)
	}
	out := make(map[string]T, len(names))
	for _, n := range names {
		b, err := os.ReadFile(n)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", what, err)
		}
		var rec T
		if json.Unmarshal(b, &rec) != nil {
			continue
		}
		out[strings.TrimSuffix(filepath.Base(n), ".json")] = rec
	}
	return out, nil
}
