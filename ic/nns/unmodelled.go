package nns

import (
	"fmt"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"alpnib.dev/ic/nns/registrypb"
)

// Field is a protobuf field of a live record that the view does not name:
// its number, and its name when our .proto knows it (chain_key_config),
// else "".
type Field struct {
	Number int32
	Name   string
}

// String is "29 (chain_key_config)" or "field 5" for one our .proto does
// not know.
func (f Field) String() string {
	if f.Name == "" {
		return fmt.Sprintf("field %d", f.Number)
	}
	return fmt.Sprintf("field %d (%s)", f.Number, f.Name)
}

// Unmodelled is what a subnet record carries beyond the view: fields of
// the record itself, and fields inside features and resource_limits, the
// two messages update_subnet replaces whole.
type Unmodelled struct {
	Record, Features, ResourceLimits []Field
}

// Unmodelled lists the fields of r its view does not name, each list in
// field-number order.
func (r *SubnetRecordPB) Unmodelled() Unmodelled {
	var m registrypb.SubnetRecord
	if len(r.rest) > 0 {
		// rest was produced by restOf from a SubnetRecord.
		_ = proto.Unmarshal(r.rest, &m)
	}
	var out Unmodelled
	m.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
		if n := fd.Number(); n != 23 && n != 34 {
			out.Record = append(out.Record, Field{Number: int32(n), Name: string(fd.Name())})
		}
		return true
	})
	out.Record = append(out.Record, unknownNumbers(m.ProtoReflect().GetUnknown())...)
	if m.Features != nil {
		out.Features = unknownNumbers(m.Features.ProtoReflect().GetUnknown())
	}
	if m.ResourceLimits != nil {
		out.ResourceLimits = unknownNumbers(m.ResourceLimits.ProtoReflect().GetUnknown())
	}
	for _, l := range []*[]Field{&out.Record, &out.Features, &out.ResourceLimits} {
		slices.SortFunc(*l, func(a, b Field) int { return int(a.Number - b.Number) })
		*l = slices.CompactFunc(*l, func(a, b Field) bool { return a.Number == b.Number })
	}
	return out
}

// unknownNumbers lists the field numbers in b, protobuf wire bytes; a
// malformed tail ends the list (decode already accepted the message).
func unknownNumbers(b []byte) []Field {
	var out []Field
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			break
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			break
		}
		out = append(out, Field{Number: int32(num)})
		b = b[n+m:]
	}
	return out
}

// ReplaceFeatures sets features as update_subnet does, whole: what the
// live features carried beyond the view is gone with them.
func (r *SubnetRecordPB) ReplaceFeatures(f *SubnetFeaturesRecord) {
	r.Features = f
	r.dropNested(func(m *registrypb.SubnetRecord) { m.Features = nil })
}

// ReplaceResourceLimits sets resource_limits as update_subnet does, whole.
func (r *SubnetRecordPB) ReplaceResourceLimits(l *ResourceLimitsRecord) {
	r.ResourceLimits = l
	r.dropNested(func(m *registrypb.SubnetRecord) { m.ResourceLimits = nil })
}

func (r *SubnetRecordPB) dropNested(clear func(*registrypb.SubnetRecord)) {
	if len(r.rest) == 0 {
		return
	}
	var m registrypb.SubnetRecord
	_ = proto.Unmarshal(r.rest, &m)
	clear(&m)
	r.rest = restOf(&m)
}
