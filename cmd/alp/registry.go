package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/spf13/cobra"

	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// registryTimeout bounds the reads of `alp registry subnet`.
const registryTimeout = time.Minute

func newRegistryCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "registry",
		Short: "Read live registry records as resources",
	}
	cmd.AddCommand(newRegistrySubnetCmd(g), newRegistrySyncCmd(g), newRegistryGetCmd(g))
	return cmd
}

func newRegistrySubnetCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "subnet <subnet_id>",
		Short: "Print a subnet's live membership as a resources fragment",
		Long: `registry subnet reads the subnet's record from the registry canister and
prints it as HCL to paste into resources.hcl: a subnet block named
subnet_<first 5 characters of its id> and one node block per member, named
node_<prefix> (longer where two members share a prefix), sorted by id. It
declares what reconcile compares, so the fragment reconciles clean as it is:
the subnet's type, sev_enabled, cost_schedule and admins where they are not
the defaults, and each node's operator and chip_id (read from the node
records at the same registry version).
--output json gives the same as {"subnet_id", "registry_version", "nodes"}.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			id, err := principal.Decode(args[0])
			if err != nil {
				return fmt.Errorf("subnet id %q: %w", args[0], err)
			}
			cfg, _ := g.loadConfig() // optional: only for provider.host
			a, _, err := g.readAgent(cmd.Context(), cfg, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), registryTimeout)
			defer cancel()
			reg := nns.RegistryClient{Caller: a}
			version, err := reg.GetLatestVersion(ctx)
			if err != nil {
				return err
			}
			rec, err := reg.At(version).GetSubnet(ctx, id)
			if err != nil {
				return err
			}
			var nodes []string
			for _, m := range rec.Membership {
				p, err := principal.FromBytes(m)
				if err != nil {
					return fmt.Errorf("subnet %s: member %x: %w", id, m, err)
				}
				nodes = append(nodes, p.String())
			}
			sort.Strings(nodes)
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), subnetJSON{SubnetID: id.String(), RegistryVersion: version, Nodes: nonNilStrings(nodes)})
			}
			members := map[string]nns.NodeRecordPB{}
			for _, n := range nodes {
				raw, _, found, err := reg.GetValue(ctx, nns.NodeRecordKey(n), version)
				if err != nil {
					return fmt.Errorf("read node %s: %w", n, err)
				}
				var nr nns.NodeRecordPB
				if found {
					if err := nr.Unmarshal(raw); err != nil {
						return fmt.Errorf("decode %s: %w", nns.NodeRecordKey(n), err)
					}
				}
				members[n] = nr
			}
			_, err = cmd.OutOrStdout().Write(subnetFragment(id.String(), version, rec, nodes, members))
			return err
		},
	}
	outputFlag(cmd, &output)
	return cmd
}

type subnetJSON struct {
	SubnetID        string   `json:"subnet_id"`
	RegistryVersion uint64   `json:"registry_version"`
	Nodes           []string `json:"nodes"`
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// subnetFragment renders the subnet and its members (sorted) as resources
// HCL, formatted the way `hclfmt` would, declaring what reconcile compares
// so that the fragment reconciles clean as it is: the subnet's type,
// sev_enabled, cost_schedule and admins where they are not the defaults,
// and each node's operator and chip id.
func subnetFragment(subnet string, version uint64, rec *nns.SubnetRecord, nodes []string, members map[string]nns.NodeRecordPB) []byte {
	names := shortNames(nodes)
	subnetName := "subnet_" + prefix(subnet, 5)
	var b strings.Builder
	fmt.Fprintf(&b, "# Subnet %s as the registry has it at version %d (alp registry subnet).\n\n", subnet, version)
	fmt.Fprintf(&b, "subnet %q {\n  id = %q\n", subnetName, subnet)
	kind := rec.SubnetType.Name()
	if kind != "" && kind != "application" {
		fmt.Fprintf(&b, "  type = %q\n", kind)
	}
	if f := rec.Features; f != nil && f.SevEnabled != nil && *f.SevEnabled {
		b.WriteString("  sev_enabled = true\n")
	}
	free := rec.CanisterCyclesCostSchedule.Free != nil
	if free != (kind == "cloud_engine") {
		fmt.Fprintf(&b, "  cost_schedule = %q\n", map[bool]string{true: "free", false: "normal"}[free])
	}
	if len(rec.SubnetAdmins) > 0 {
		var admins []string
		for _, a := range rec.SubnetAdmins {
			admins = append(admins, strconv.Quote(a.String()))
		}
		sort.Strings(admins)
		fmt.Fprintf(&b, "  admins = [%s]\n", strings.Join(admins, ", "))
	}
	b.WriteString("}\n")
	for _, n := range nodes {
		fmt.Fprintf(&b, "\nnode %q {\n  id = %q\n  subnet = subnet.%s.id\n", names[n], n, subnetName)
		nr := members[n]
		if op, err := principal.FromBytes(nr.NodeOperatorID); err == nil && len(nr.NodeOperatorID) > 0 {
			fmt.Fprintf(&b, "  operator = %q\n", op.String())
		}
		if nr.ChipID != nil {
			fmt.Fprintf(&b, "  chip_id = %q\n", hex.EncodeToString(nr.ChipID))
		}
		b.WriteString("}\n")
	}
	return hclwrite.Format([]byte(b.String()))
}

// shortNames names each node node_<prefix>, with the prefix the first 5
// characters of its id, lengthened until no two nodes share a name.
func shortNames(ids []string) map[string]string {
	for n := 5; ; n++ {
		names := map[string]string{}
		seen := map[string]bool{}
		clash := false
		for _, id := range ids {
			name := "node_" + prefix(id, n)
			if seen[name] {
				clash = true
			}
			seen[name] = true
			names[id] = name
		}
		if !clash || n > 64 {
			return names
		}
	}
}

// prefix is the first n characters of id without dashes, so the name stays
// an identifier a person can read out.
func prefix(id string, n int) string {
	s := strings.ReplaceAll(id, "-", "")
	if len(s) > n {
		s = s[:n]
	}
	return s
}
