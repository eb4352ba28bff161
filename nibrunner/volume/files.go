package volume

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Files keeps each volume as a plain sparse file <Dir>/<id>.img: no
// filesystem, no seeding (InitialContents is not read). It stands in for
// Local where mke2fs is not wanted: the fake VMM never mounts a volume, and
// a thousand-instance benchmark should not format a thousand filesystems.
type Files struct{ Dir string }

// List returns every volume in f.Dir by id.
func (f Files) List(ctx context.Context) (map[string]Info, error) {
	return ListFiles(f.Dir, ".img")
}

// Path is the file volume id lives in.
func (f Files) Path(id string) string { return filepath.Join(f.Dir, id+".img") }

// Converge makes volume spec.VolumeID what spec asks: a sparse file of the
// rounded size, grown when asked bigger, deleted when asked absent. A
// volume asked smaller is refused (ErrShrink) and keeps its size.
func (f Files) Converge(ctx context.Context, spec Spec) (Volume, error) {
	v := Volume{VolumeID: spec.VolumeID, Path: f.Path(spec.VolumeID)}
	fail := func(err error) (Volume, error) { return v, &Error{VolumeID: spec.VolumeID, Err: err} }
	if spec.State == Absent {
		if err := os.Remove(v.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fail(err)
		}
		v.Deleted = true
		return v, nil
	}
	if err := os.MkdirAll(f.Dir, 0o700); err != nil {
		return fail(err)
	}
	want := int64(RoundSize(spec.SizeBytes))
	st, err := os.Stat(v.Path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		// Made under a hidden name (List skips it) and renamed whole.
		tmp := filepath.Join(f.Dir, ".new-"+spec.VolumeID)
		if err := os.WriteFile(tmp, nil, 0o600); err != nil {
			return fail(err)
		}
		if err := os.Truncate(tmp, want); err != nil {
			return fail(err)
		}
		if err := os.Rename(tmp, v.Path); err != nil {
			return fail(err)
		}
		v.Created, v.SizeBytes = true, want
	case err != nil:
		return fail(err)
	case want < st.Size():
		v.SizeBytes = st.Size()
		return fail(fmt.Errorf("%w: it is %d bytes and the document asks for %d; ask for %d or more (shrinking would destroy data)", ErrShrink, st.Size(), spec.SizeBytes, st.Size()))
	case want > st.Size():
		if err := os.Truncate(v.Path, want); err != nil {
			return fail(err)
		}
		v.Grown, v.SizeBytes = true, want
	default:
		v.SizeBytes = st.Size()
	}
	return v, nil
}
