package jail

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// Identity is the uid and gid one guest's VMM runs as.
type Identity struct {
	UID int `json:"uid"`
	GID int `json:"gid"`
}

// Range is the block of ids the host reserves for guests: slot n runs as
// uid UIDBase+n and gid GIDBase+n, for n below Count. SharedGID, one past
// the per-slot gids, is the group that may read the files every guest
// reads (the guest kernel, initrd, base image and layers); each guest's VMM
// holds it as its one supplementary group. ToolID follows both.
type Range struct {
	UIDBase int
	GIDBase int
	Count   int
}

// Default ranges: far above the ids Debian hands out (system ids below
// 1000, users from 1000, subordinate ids from 100000 in blocks of 65536),
// below the 2^31 that some tools take for a signed id.
const (
	DefaultUIDBase = 900000
	DefaultGIDBase = 900000
)

// For returns slot's identity.
func (r Range) For(slot int) (Identity, error) {
	if slot < 0 || slot >= r.Count {
		return Identity{}, fmt.Errorf("slot %d is outside the jail's %d ids (max_apps)", slot, r.Count)
	}
	return Identity{UID: r.UIDBase + slot, GID: r.GIDBase + slot}, nil
}

// SharedGID is the group of the files every guest reads.
func (r Range) SharedGID() int { return r.GIDBase + r.Count }

// ToolID is the uid and gid of the confined tools (Tool): one past the
// slots' uids, and one past the shared gid. No guest runs as it.
func (r Range) ToolID() Identity {
	return Identity{UID: r.UIDBase + r.Count, GID: r.SharedGID() + 1}
}

// maxID is the largest id the range may reach: 2^32-1 is (uid_t)-1,
// which means "unchanged" to setresuid, and ids from 2^31 trip tools that
// hold them signed.
const maxID = 1<<31 - 1

// Check refuses a range that holds uid or gid 0, passes maxID, or
// overlaps an account of passwd or a group of group (the contents of
// /etc/passwd and /etc/group): a guest must never run as, or share files
// with, an account of the host. Errors name the file, line and entry.
func (r Range) Check(passwd, group []byte) error {
	if r.Count <= 0 {
		return fmt.Errorf("the jail's id range holds no id (count %d)", r.Count)
	}
	if r.UIDBase <= 0 {
		return fmt.Errorf("jail.uid_base %d: guests never run as uid 0, nor below; pick a free range such as %d", r.UIDBase, DefaultUIDBase)
	}
	if r.GIDBase <= 0 {
		return fmt.Errorf("jail.gid_base %d: guests never run as gid 0, nor below; pick a free range such as %d", r.GIDBase, DefaultGIDBase)
	}
	tool := r.ToolID()
	if last := tool.UID; last > maxID {
		return fmt.Errorf("jail.uid_base %d: the last uid, %d, passes %d", r.UIDBase, last, maxID)
	}
	if last := tool.GID; last > maxID {
		return fmt.Errorf("jail.gid_base %d: the last gid, %d, passes %d", r.GIDBase, last, maxID)
	}
	if err := overlap("/etc/passwd", passwd, 2, r.UIDBase, tool.UID, "jail.uid_base"); err != nil {
		return err
	}
	// A passwd entry's primary group counts too: its files carry that gid.
	if err := overlap("/etc/passwd", passwd, 3, r.GIDBase, tool.GID, "jail.gid_base"); err != nil {
		return err
	}
	return overlap("/etc/group", group, 2, r.GIDBase, tool.GID, "jail.gid_base")
}

// overlap refuses an entry of file whose field (0-based) falls in lo…hi.
func overlap(file string, data []byte, field, lo, hi int, key string) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, ":")
		if len(f) <= field {
			continue
		}
		id, err := strconv.Atoi(f[field])
		if err != nil {
			continue
		}
		if id >= lo && id <= hi {
			return fmt.Errorf("%s line %d: %q has id %d, inside the jail's ids %d…%d; move %s to a free range", file, n, f[0], id, lo, hi, key)
		}
	}
	return nil
}
