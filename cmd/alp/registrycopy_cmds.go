package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"alpnib.dev/alpage/registrycopy"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/nns/registrypb"
)

func newRegistrySyncCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "sync",
		Short: "Bring the certified local copy of the registry up to date and print its version",
		Long: `registry sync brings the local copy of the registry
($XDG_CACHE_HOME/alp/registry/<root key hash>/registry.sqlite) up to date
with get_certified_changes_since, verifying every reply under the root key
(mainnet's constant; fetched for any other host), and prints its version.
A reply that does not verify, or is behind the copy (a replayed older
reply), is refused naming it, and the copy keeps its version: versions only
go forward. Only a file that is not a copy (damaged, another layout) is
discarded and rebuilt, and says so.
--output json gives {"registry_version", "from_version", "deltas",
"requests", "rebuilt", "path"}.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			c, res, err := g.syncedCopy(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), syncJSON{Version: res.To, From: res.From, Deltas: res.Deltas, Requests: res.Requests, Rebuilt: res.Rebuilt, Path: c.Path()})
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "registry version %d\n", res.To)
			return err
		},
	}
	outputFlag(cmd, &output)
	return cmd
}

// syncedCopy brings the copy of the resolved host's registry up to date.
func (g *globals) syncedCopy(cmd *cobra.Command) (*registrycopy.Copy, registrycopy.Result, error) {
	cfg, _ := g.loadConfig() // optional: only for provider.host
	a, _, err := g.readAgent(cmd.Context(), cfg, cmd.ErrOrStderr())
	if err != nil {
		return nil, registrycopy.Result{}, err
	}
	return openRegistryCopy(cmd.Context(), a, cmd.ErrOrStderr())
}

type syncJSON struct {
	Version  uint64 `json:"registry_version"`
	From     uint64 `json:"from_version"`
	Deltas   int    `json:"deltas"`
	Requests int    `json:"requests"`
	Rebuilt  bool   `json:"rebuilt"`
	Path     string `json:"path"`
}

func newRegistryGetCmd(g *globals) *cobra.Command {
	var version uint64
	cmd := &cobra.Command{
		Use:   "get KEY",
		Short: "Print a registry record from the certified local copy, decoded as JSON",
		Long: `registry get brings the certified local copy up to date (as registry sync
does) and prints the record KEY holds at --version (default: the copy's),
as {"key", "version" (the version that wrote it), "registry_version",
"record"}. A subnet, node, node operator, data center or replica version
record is decoded by its key's prefix (protobuf field names; bytes in
base64); any other value is given as "value_hex". A key that holds nothing
at that version is an error.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, res, err := g.syncedCopy(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			at := res.To
			if version != 0 {
				if version > res.To {
					return fmt.Errorf("registry get: version %d is past the registry's latest (%d)", version, res.To)
				}
				at = version
			}
			raw, wrote, found, err := c.Get(cmd.Context(), args[0], at)
			if err != nil {
				return err
			}
			if !found {
				return fmt.Errorf("registry get: %s holds no record at version %d", args[0], at)
			}
			out := recordJSON{Key: args[0], Version: wrote, RegistryVersion: at}
			if m := recordMessage(args[0]); m != nil {
				if err := proto.Unmarshal(raw, m); err != nil {
					return fmt.Errorf("registry get: decode %s: %w", args[0], err)
				}
				b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
				if err != nil {
					return fmt.Errorf("registry get: %s: %w", args[0], err)
				}
				out.Record = b
			} else {
				out.ValueHex = hex.EncodeToString(raw)
			}
			return writeJSON(cmd.OutOrStdout(), out)
		},
	}
	cmd.Flags().Uint64Var(&version, "version", 0, "registry version to read the record at (default: the copy's latest)")
	return cmd
}

type recordJSON struct {
	Key             string          `json:"key"`
	Version         uint64          `json:"version"`
	RegistryVersion uint64          `json:"registry_version"`
	Record          json.RawMessage `json:"record,omitempty"`
	ValueHex        string          `json:"value_hex,omitempty"`
}

// recordMessage is the protobuf message a key's value is, by its prefix;
// nil for one alp does not know.
func recordMessage(key string) proto.Message {
	for _, k := range []struct {
		prefix string
		m      func() proto.Message
	}{
		{nns.SubnetRecordKey(""), func() proto.Message { return &registrypb.SubnetRecord{} }},
		{nns.NodeOperatorRecordKey(""), func() proto.Message { return &registrypb.NodeOperatorRecord{} }},
		{nns.NodeRecordKey(""), func() proto.Message { return &registrypb.NodeRecord{} }},
		{nns.DataCenterRecordKey(""), func() proto.Message { return &registrypb.DataCenterRecord{} }},
		{nns.ReplicaVersionRecordKey(""), func() proto.Message { return &registrypb.ReplicaVersionRecord{} }},
	} {
		if strings.HasPrefix(key, k.prefix) {
			return k.m()
		}
	}
	return nil
}
