package kinds

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"alpnib.dev/alpage/decentral"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// Places is where each node is, as the registry says at the version read:
// its provider (its operator's), data center, the data center's owner and
// country. Err holds, per node, why its place could not be read.
type Places struct {
	Nodes map[string]decentral.Node `json:"nodes"`
	Err   map[string]string         `json:"errors,omitempty"`
}

// ReadPlaces reads the place of each node: node_record_<id> names its
// operator, node_operator_record_<op> its provider and data center, and
// data_center_record_<dc> the owner and region.
func ReadPlaces(ctx context.Context, r Reader, ids []string) Places {
	out := Places{Nodes: map[string]decentral.Node{}, Err: map[string]string{}}
	type op struct {
		provider, dc string
		err          error
	}
	type dc struct {
		owner, region string
		err           error
	}
	ops, dcs := map[string]op{}, map[string]dc{}
	readOp := func(id string) op {
		if o, ok := ops[id]; ok {
			return o
		}
		var o op
		var rec nns.NodeOperatorRecordPB
		if raw, found, err := r.Record(ctx, nns.NodeOperatorRecordKey(id)); err != nil || !found {
			o.err = orMissing(err, nns.NodeOperatorRecordKey(id))
		} else if err := rec.Unmarshal(raw); err != nil {
			o.err = fmt.Errorf("decode %s: %w", nns.NodeOperatorRecordKey(id), err)
		} else {
			o.dc = rec.DcID
			if p, err := principal.FromBytes(rec.NodeProviderPrincipalID); err == nil {
				o.provider = p.String()
			}
		}
		ops[id] = o
		return o
	}
	readDC := func(id string) dc {
		if d, ok := dcs[id]; ok {
			return d
		}
		var d dc
		var rec nns.DataCenterRecordPB
		if raw, found, err := r.Record(ctx, nns.DataCenterRecordKey(id)); err != nil || !found {
			d.err = orMissing(err, nns.DataCenterRecordKey(id))
		} else if err := rec.Unmarshal(raw); err != nil {
			d.err = fmt.Errorf("decode %s: %w", nns.DataCenterRecordKey(id), err)
		} else {
			d.owner, d.region = rec.Owner, rec.Region
		}
		dcs[id] = d
		return d
	}
	for _, id := range ids {
		var rec nns.NodeRecordPB
		raw, found, err := r.Record(ctx, nns.NodeRecordKey(id))
		if err != nil || !found {
			out.Err[id] = orMissing(err, nns.NodeRecordKey(id)).Error()
			continue
		}
		if err := rec.Unmarshal(raw); err != nil {
			out.Err[id] = fmt.Sprintf("decode %s: %v", nns.NodeRecordKey(id), err)
			continue
		}
		operator, err := principal.FromBytes(rec.NodeOperatorID)
		if err != nil {
			out.Err[id] = fmt.Sprintf("%s names no operator", nns.NodeRecordKey(id))
			continue
		}
		o := readOp(operator.String())
		if o.err != nil {
			out.Err[id] = o.err.Error()
			continue
		}
		d := readDC(o.dc)
		if d.err != nil {
			out.Err[id] = d.err.Error()
			continue
		}
		out.Nodes[id] = decentral.NewNode(id, o.provider, o.dc, d.owner, d.region)
	}
	return out
}

func orMissing(err error, key string) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("the registry has no %s", key)
}

// minimumFor is subnet's minimum coefficient per attribute: what it
// declares (min_nakamoto_coefficients), and for an attribute it leaves out
// the default for a subnet of size nodes, with dre's exceptions for the
// subnets it names (decentral.DefaultMinimumsFor).
func minimumFor(subnet string, declared map[string]int, size int) (decentral.Coefficients, [decentral.NumAttributes]bool) {
	m := decentral.DefaultMinimumsFor(subnet, size)
	var set [decentral.NumAttributes]bool
	for name, v := range declared {
		if a, ok := decentral.AttributeNamed(name); ok {
			m[a], set[a] = v, true
		}
	}
	return m, set
}

// decentralization checks a membership change's Nakamoto coefficients:
// before and after, per attribute, side by side, one check each. A
// decrease is flagged, and so is a coefficient the change takes below the
// subnet's minimum; one already below it that the change does not lower
// is a warning.
func decentralization(subnet string, members []string, add, remove []string, places Places, declared map[string]int) []Check {
	var missing []string
	need := slices.Concat(members, add)
	for _, id := range need {
		if _, ok := places.Nodes[id]; !ok {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		why := places.Err[missing[0]]
		return []Check{{Severity: Warning, Message: fmt.Sprintf("the Nakamoto coefficients of subnet %s are not computed: where %s are could not be read (%s: %s)", subnet, shortList(missing), missing[0], why)}}
	}
	before := make([]decentral.Node, 0, len(members))
	for _, id := range members {
		before = append(before, places.Nodes[id])
	}
	adding := make([]decentral.Node, 0, len(add))
	for _, id := range add {
		adding = append(adding, places.Nodes[id])
	}
	size := len(members) + len(add) - len(remove)
	minimum, declaredSet := minimumFor(subnet, declared, size)
	cmp, err := decentral.Compare(before, adding, remove, minimum)
	if err != nil {
		return []Check{{Severity: Warning, Message: fmt.Sprintf("the Nakamoto coefficients of subnet %s are not computed: %v", subnet, err)}}
	}
	var checks []Check
	for _, row := range cmp.Rows {
		from := defaultWords(subnet, size)
		if declaredSet[row.Attribute] {
			from = "declared"
		}
		c := Check{Severity: OK, Field: "nakamoto." + row.Attribute.String(), Live: fmt.Sprint(row.Before), Declared: fmt.Sprint(row.After),
			Message: fmt.Sprintf("Nakamoto coefficient %s: %d → %d (minimum %d, %s)", row.Attribute, row.Before, row.After, row.Minimum, from)}
		switch {
		case row.Breaks():
			c.Severity = Flagged
			c.Message += fmt.Sprintf("; the change takes it below the subnet's minimum: %s", actorsSay(row.Attribute, adding, before, remove))
		case row.Decreased():
			c.Severity = Flagged
			c.Message += fmt.Sprintf("; the change lowers it: %s", actorsSay(row.Attribute, adding, before, remove))
		case row.BelowMinimum():
			c.Severity = Warning
			c.Message += "; it is below the minimum already, and the change does not lower it"
		}
		checks = append(checks, c)
	}
	return checks
}

// actorsSay names the largest actors of attribute a after the change, as
// a reviewer would check the coefficient: "dc1 holds 2 of 13 nodes".
func actorsSay(a decentral.Attribute, add, members []decentral.Node, remove []string) string {
	after := slices.DeleteFunc(slices.Clone(members), func(n decentral.Node) bool { return slices.Contains(remove, n.ID) })
	after = append(after, add...)
	actors := decentral.Actors(after, a)
	total := len(after)
	var parts []string
	for i, x := range actors {
		if i == 3 || x.Nodes < 2 && i > 0 {
			break
		}
		parts = append(parts, fmt.Sprintf("%s holds %d of %d nodes", x.Name, x.Nodes, total))
	}
	return fmt.Sprintf("%s (more than a third is %d)", strings.Join(parts, ", "), total/3+1)
}

// defaultWords says where a default minimum comes from: "the default for
// 13 nodes", or "dre's default for the NNS subnet of 40 nodes".
func defaultWords(subnet string, size int) string {
	if role := decentral.SubnetRole(subnet); role != "" {
		return fmt.Sprintf("dre's default for the %s subnet of %d nodes", role, size)
	}
	return fmt.Sprintf("the default for %d nodes", size)
}
