package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

// maxIdentityBytes bounds an identity file: a PEM key is a few hundred
// bytes.
const maxIdentityBytes = 64 << 10

// strictPermissionsFlag registers --strict-permissions on a command that
// reads an identity file.
func strictPermissionsFlag(cmd *cobra.Command, strict *bool) {
	cmd.Flags().BoolVar(strict, "strict-permissions", false, "refuse an identity file its group or others can access, instead of warning")
}

// readIdentityFile reads a private key file. As ssh does, alp will not
// keep quiet about a key file its group or others may access (mode & 077):
// anyone who could read it could have copied it. It warns on warn, and with
// strict it refuses the file instead.
func readIdentityFile(path string, strict bool, warn io.Writer) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		msg := fmt.Sprintf("permissions %04o for identity %s are too open: its group or others can access it; chmod 600 %s", perm, path, path)
		if strict {
			return nil, errors.New(msg + " (--strict-permissions refuses such a file)")
		}
		fmt.Fprintln(warn, "warning: "+msg)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxIdentityBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxIdentityBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes; it is not an identity PEM", path, maxIdentityBytes)
	}
	return data, nil
}
