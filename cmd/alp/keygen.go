package main

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"alpnib.dev/ic/identity"
)

func newKeygenCmd() *cobra.Command {
	var (
		out, show, output string
		strict            bool
	)
	cmd := &cobra.Command{
		Use:   "keygen (--out key.pem | --show key.pem)",
		Short: "Make an ed25519 identity, or print the principal of one",
		Long: `keygen --out FILE writes a new ed25519 identity as a PKCS#8 PEM file (mode 0600)
and prints its principal. It never overwrites an existing file.

keygen --show FILE prints the principal of an identity file: ed25519 PKCS#8
(as OpenSSL or dfx write it) or secp256k1 (dfx's default).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (out == "") == (show == "") {
				return errors.New("keygen: give exactly one of --out FILE or --show FILE")
			}
			if err := checkOutput(output); err != nil {
				return err
			}
			if out != "" {
				return keygen(cmd.OutOrStdout(), out, output)
			}
			return showKey(cmd.OutOrStdout(), cmd.ErrOrStderr(), show, output, strict)
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "write a new identity to this file")
	cmd.Flags().StringVar(&show, "show", "", "print the principal of this identity file")
	outputFlag(cmd, &output)
	strictPermissionsFlag(cmd, &strict)
	return cmd
}

func keygen(w io.Writer, path, output string) error {
	id, err := identity.GenerateEd25519(rand.Reader)
	if err != nil {
		return fmt.Errorf("keygen: %w", err)
	}
	pem, err := id.PEM()
	if err != nil {
		return fmt.Errorf("keygen: %w", err)
	}
	if err := writeNewFile(path, pem, 0o600); err != nil {
		return err
	}
	return printPrincipal(w, path, id.Sender().String(), output)
}

// writeNewFile creates path with data and mode perm, failing if anything
// is already there: O_EXCL makes "never overwrite a key" hold even against
// another keygen racing for the same name, which a check-then-rename could
// not promise. A write that fails halfway removes what it made.
func writeNewFile(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("keygen: %s already exists; keygen never overwrites a key, choose another path", path)
	}
	if err != nil {
		return fmt.Errorf("keygen: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("keygen: write %s: %w", path, err)
	}
	return nil
}

func showKey(w, warn io.Writer, path, output string, strict bool) error {
	data, err := readIdentityFile(path, strict, warn)
	if err != nil {
		return fmt.Errorf("keygen --show: %w", err)
	}
	id, err := identity.FromPEM(data)
	if err != nil {
		return fmt.Errorf("keygen --show %s: %w", path, err)
	}
	return printPrincipal(w, path, id.Sender().String(), output)
}

func printPrincipal(w io.Writer, path, p, output string) error {
	if output == "json" {
		return json.NewEncoder(w).Encode(map[string]string{"file": path, "principal": p})
	}
	_, err := fmt.Fprintln(w, p)
	return err
}

// checkOutput validates an --output value.
func checkOutput(output string) error {
	if output != "text" && output != "json" {
		return fmt.Errorf("--output %q: use text or json", output)
	}
	return nil
}
