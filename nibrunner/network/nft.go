package network

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Firewall applies rendered rulesets with the nft program.
type Firewall struct {
	// Nft is the nft program; empty means look it up.
	Nft string
}

func (f Firewall) nft() (string, error) {
	if f.Nft != "" {
		return f.Nft, nil
	}
	return lookPath("nft")
}

// Apply renders r and loads it with one `nft -f`: the kernel takes the
// whole table or, on any error, none of it, and the table it held before
// stays in force.
func (f Firewall) Apply(ctx context.Context, r Rules) error {
	script, err := Render(r)
	if err != nil {
		return fmt.Errorf("render the nibrun table: %w", err)
	}
	return f.Load(ctx, script)
}

// Load runs an nft script in one transaction.
func (f Firewall) Load(ctx context.Context, script string) error {
	nft, err := f.nft()
	if err != nil {
		return fmt.Errorf("apply the nibrun table: nft is not installed (Debian nftables): %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, nft, "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("apply the nibrun table with nft -f: %w: %s", err, strings.TrimSpace(out.String()))
	}
	return nil
}

// Remove deletes the nibrun table (uninstall); a host without one is fine.
func (f Firewall) Remove(ctx context.Context) error {
	return f.Load(ctx, fmt.Sprintf("table inet %s\ndelete table inet %s\n", Table, Table))
}

// Installed reports whether the nibrun table is loaded. The daemon refuses
// to start a guest until it is: a guest booted without it would be unfenced.
func (f Firewall) Installed(ctx context.Context) (bool, error) {
	nft, err := f.nft()
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, nft, "list", "tables", "inet").CombinedOutput()
	if err != nil {
		return false, fmt.Errorf("list nftables tables: %w: %s", err, strings.TrimSpace(string(out)))
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.TrimSpace(line) == "table inet "+Table {
			return true, nil
		}
	}
	return false, nil
}

func lookPath(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/sbin"} {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return exec.LookPath(name)
}
