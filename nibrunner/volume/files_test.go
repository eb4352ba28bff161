package volume

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

func TestFilesMakeGrowRefuseToShrinkAndDeleteSparseFiles(t *testing.T) {
	ctx := context.Background()
	f := Files{Dir: filepath.Join(t.TempDir(), "volumes")}
	spec := Spec{VolumeID: "v1", SizeBytes: 1000, State: Present}
	v, err := f.Converge(ctx, spec)
	if err != nil || !v.Created || v.SizeBytes != 1024 || v.Path != filepath.Join(f.Dir, "v1.img") {
		t.Fatalf("made: %+v, %v", v, err)
	}
	if v, err := f.Converge(ctx, spec); err != nil || v.Created || v.Grown || v.SizeBytes != 1024 {
		t.Fatalf("a volume at its size changed: %+v, %v", v, err)
	}
	spec.SizeBytes = 4096
	if v, err := f.Converge(ctx, spec); err != nil || !v.Grown || v.SizeBytes != 4096 {
		t.Fatalf("grown: %+v, %v", v, err)
	}
	spec.SizeBytes = 512
	if v, err := f.Converge(ctx, spec); !errors.Is(err, ErrShrink) || v.SizeBytes != 4096 {
		t.Fatalf("asked smaller: %+v, %v", v, err)
	}
	list, err := f.List(ctx)
	if err != nil || len(list) != 1 || list["v1"].SizeBytes != 4096 {
		t.Fatalf("listed %+v, %v", list, err)
	}
	spec.State = Absent
	if v, err := f.Converge(ctx, spec); err != nil || !v.Deleted {
		t.Fatalf("deleted: %+v, %v", v, err)
	}
	if list, err := f.List(ctx); err != nil || len(list) != 0 {
		t.Fatalf("listed after the delete: %+v, %v", list, err)
	}
	if _, err := f.Converge(ctx, spec); err != nil {
		t.Fatalf("deleting a volume already gone: %v", err)
	}
}
