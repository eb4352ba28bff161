package kinds

import (
	"reflect"
	"testing"

	"alpnib.dev/ic/nns"
)

func TestTheFormerPayloadTypeIsTheCurrentOneButForResourceLimits(t *testing.T) {
	cur, old := reflect.TypeOf(nns.UpdateSubnetPayload{}), reflect.TypeOf(formerUpdateSubnetPayload{})
	if cur.NumField() != old.NumField() {
		t.Fatalf("%d fields, the former type %d", cur.NumField(), old.NumField())
	}
	for i := 0; i < cur.NumField(); i++ {
		c, o := cur.Field(i), old.Field(i)
		if c.Name != o.Name || c.Tag != o.Tag || (c.Type != o.Type && c.Name != "ResourceLimits") {
			t.Errorf("field %d: %s %s %s, the former type has %s %s %s", i, c.Name, c.Type, c.Tag, o.Name, o.Type, o.Tag)
		}
	}
}
