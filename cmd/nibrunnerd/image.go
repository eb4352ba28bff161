package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/hostconfig"
	"alpnib.dev/nibrunner/image"
)

const imageSettingsLong = `

The registry's settings (credentials file, CA file, loopback registries
spoken to without TLS) are the [images] section of the host configuration
(--config, else $NIBRUNNER_CONFIG, else /etc/nibrunner/config.toml). Without
a configuration at the default path, or without the section, the registry
is reached over TLS with the system's roots and no login. Only the
manifest and the config blob are fetched, never a layer.`

// inspector is a registry client with the host's [images] settings.
func inspector(configPath string) (*image.Puller, error) {
	path := configPath
	if path == "" {
		path = hostconfig.Path()
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return image.NewInspector(image.Options{})
		}
	}
	cfg, err := hostconfig.Load(path)
	if err != nil {
		return nil, err
	}
	var o image.Options
	if im := cfg.Images; im != nil {
		o = image.Options{AuthFile: im.AuthFile, CAFile: im.CAFile, PlainHTTP: im.PlainHTTPRegistries}
	}
	p, err := image.NewInspector(o)
	if err != nil {
		return nil, fmt.Errorf("%s [images]: %w", path, err)
	}
	return p, nil
}

func inspect(ctx context.Context, configPath, ref string) (image.Inspection, error) {
	p, err := inspector(configPath)
	if err != nil {
		return image.Inspection{}, err
	}
	return p.Inspect(ctx, ref)
}

func newImageCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Read container images on their registry",
	}
	var configPath, output string
	inspectCmd := &cobra.Command{
		Use:   "inspect REF",
		Short: "Print what an image pinned by digest implies: its layers and how it runs",
		Long: `inspect reads the image REF (registry/repository@sha256:<digest>; a tag
alone is refused, saying how to find the digest) from its registry and
prints its manifest digest and platform (linux/amd64, chosen from an index),
its layers with their compressed sizes, and its config: entrypoint, cmd,
environment, working directory, exposed ports and user. With --output json
it prints the same as one JSON object.` + imageSettingsLong,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "text" && output != "json" {
				return fmt.Errorf("--output %q: choose text or json", output)
			}
			in, err := inspect(cmd.Context(), configPath, args[0])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if output == "json" {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(in)
			}
			printInspection(out, in)
			return nil
		},
	}
	inspectCmd.Flags().StringVar(&configPath, "config", "", "host configuration file whose [images] section says how to reach registries")
	inspectCmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	cmd.AddCommand(inspectCmd)
	return cmd
}

func printInspection(w io.Writer, in image.Inspection) {
	var total int64
	for _, l := range in.Layers {
		total += l.Size
	}
	c := in.Config
	fmt.Fprintf(w, "reference   %s\n", in.Ref)
	fmt.Fprintf(w, "manifest    %s\n", in.ManifestDigest)
	fmt.Fprintf(w, "platform    %s\n", in.Platform)
	fmt.Fprintf(w, "layers      %d, %d bytes compressed\n", len(in.Layers), total)
	for i, l := range in.Layers {
		fmt.Fprintf(w, "  %d  %s  %d bytes  %s\n", i+1, l.Digest, l.Size, l.MediaType)
	}
	fmt.Fprintf(w, "entrypoint  %s\n", quoteList(c.Entrypoint))
	fmt.Fprintf(w, "cmd         %s\n", quoteList(c.Cmd))
	fmt.Fprintf(w, "workdir     %s\n", orNone(c.WorkingDir))
	fmt.Fprintf(w, "ports       %s\n", orNone(strings.Join(exposedPorts(c.ExposedPorts), " ")))
	fmt.Fprintf(w, "user        %s\n", orNone(c.User))
	plural := "s"
	if len(c.Env) == 1 {
		plural = ""
	}
	fmt.Fprintf(w, "env         %d variable%s\n", len(c.Env), plural)
	for _, e := range c.Env {
		fmt.Fprintf(w, "  %s\n", e)
	}
}

func quoteList(ss []string) string {
	if len(ss) == 0 {
		return "(none)"
	}
	b, _ := json.Marshal(ss)
	return string(b)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// exposedPorts are an image's exposed ports ("8080/tcp"), by number, tcp
// before udp.
func exposedPorts(m map[string]struct{}) []string {
	ps := make([]string, 0, len(m))
	for p := range m {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool {
		ni, pi := splitPort(ps[i])
		nj, pj := splitPort(ps[j])
		if ni != nj {
			return ni < nj
		}
		return pi < pj
	})
	return ps
}

// splitPort reads "8080/tcp" (or "8080", which is tcp) as 8080 and "tcp".
func splitPort(s string) (int, string) {
	num, proto, ok := strings.Cut(s, "/")
	if !ok {
		proto = "tcp"
	}
	n, err := strconv.Atoi(num)
	if err != nil {
		n = 1 << 30
	}
	return n, proto
}

// Output types of app from-image: desired.json's, without the properties
// other kinds of layer and health check have.
type (
	fragment struct {
		HostId      desired.HostId              `json:"hostId"`
		Volumes     []desired.DesiredVolume     `json:"volumes"`
		Instances   []fragmentInstance          `json:"instances"`
		Checkpoints []desired.DesiredCheckpoint `json:"checkpoints"`
		Exports     []desired.DesiredExport     `json:"exports"`
	}
	fragmentInstance struct {
		AppId        desired.AppId                `json:"appId"`
		DeploymentId desired.DeploymentId         `json:"deploymentId"`
		VolumeId     desired.VolumeId             `json:"volumeId"`
		DesiredState desired.DesiredInstanceState `json:"desiredState"`
		Layers       []fragmentLayer              `json:"layers"`
		Config       fragmentConfig               `json:"config"`
		Hostnames    []desired.AppHostname        `json:"hostnames"`
	}
	fragmentLayer struct {
		Kind      desired.LayerKind      `json:"kind"`
		Reference desired.ImageReference `json:"reference"`
	}
	fragmentConfig struct {
		HttpPort      desired.HttpPort          `json:"httpPort"`
		Command       desired.Command           `json:"command"`
		Resources     desired.InstanceResources `json:"resources"`
		HealthCheck   fragmentHealth            `json:"healthCheck"`
		RestartPolicy desired.RestartPolicy     `json:"restartPolicy"`
	}
	fragmentHealth struct {
		Kind               desired.HealthCheckKind `json:"kind"`
		IntervalMs         uint64                  `json:"intervalMs"`
		TimeoutMs          uint64                  `json:"timeoutMs"`
		GracePeriodMs      uint64                  `json:"gracePeriodMs"`
		HealthyThreshold   uint32                  `json:"healthyThreshold"`
		UnhealthyThreshold uint32                  `json:"unhealthyThreshold"`
	}
)

// appOptions are app from-image's flags.
type appOptions struct {
	app, hostname, hostID, program string
	httpPort                       int
	sizeBytes                      uint64
}

// fromImage is the document running in as an app, and notes for a person
// on what it took from the image and what it did not.
func fromImage(in image.Inspection, o appOptions) ([]byte, []string, error) {
	c := in.Config
	argv := append(append([]string{}, c.Entrypoint...), c.Cmd...)
	if o.program != "" {
		if len(argv) == 0 {
			argv = []string{""}
		}
		argv[0] = o.program
	}
	var notes []string
	switch {
	case len(argv) == 0:
		return nil, nil, fmt.Errorf("the image %s names neither an entrypoint nor a cmd; give the program to run with --program PATH", in.Ref)
	case !strings.HasPrefix(argv[0], "/"):
		return nil, nil, fmt.Errorf("the image %s starts %q, not an absolute path, and the guest runs command.program as written; give its full path in the image with --program PATH", in.Ref, argv[0])
	}
	port := o.httpPort
	if port == 0 {
		ports := exposedPorts(c.ExposedPorts)
		for _, p := range ports {
			if n, proto := splitPort(p); proto == "tcp" && n >= 1 && n <= 65535 {
				port = n
				break
			}
		}
		if port == 0 {
			return nil, nil, fmt.Errorf("the image %s exposes no TCP port; give the port the app answers HTTP on with --http-port N", in.Ref)
		}
		if len(ports) > 1 {
			notes = append(notes, fmt.Sprintf("httpPort is %d, the image's first exposed port of %s", port, strings.Join(ports, " ")))
		}
	}
	env := desired.TenantEnvironment{}
	for _, kv := range c.Env {
		// An entry without "=" names no value (Docker drops it).
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = desired.TenantValue(v)
		}
	}
	wd := c.WorkingDir
	if wd == "" {
		wd = "/"
	}
	if c.User != "" {
		notes = append(notes, fmt.Sprintf("the image's user %q is not applied: the guest runs the command as uid 65534", c.User))
	}
	digest := strings.TrimPrefix(in.Digest, "sha256:")
	inst := fragmentInstance{
		AppId: desired.AppId(o.app), DeploymentId: desired.DeploymentId("image-" + digest[:16]),
		VolumeId: desired.VolumeId(o.app), DesiredState: desired.StateRunning,
		Layers: []fragmentLayer{{Kind: desired.LayerImage, Reference: desired.ImageReference(in.Ref)}},
		Config: fragmentConfig{
			HttpPort: desired.HttpPort(port),
			Command: desired.Command{Program: desired.ExecutablePath(argv[0]), Args: desired.TenantArguments(argv[1:]),
				WorkingDirectory: desired.GuestPath(wd), Environment: env},
			Resources: desired.InstanceResources{VcpuCount: 1, MemoryMib: 256},
			HealthCheck: fragmentHealth{Kind: desired.HealthTCP, IntervalMs: 2000, TimeoutMs: 1000, GracePeriodMs: 30000,
				HealthyThreshold: 1, UnhealthyThreshold: 5},
			RestartPolicy: desired.RestartPolicy{MaxRestarts: 5, InitialBackoffMs: 500, MaxBackoffMs: 30000, BackoffFactor: 2, ResetAfterMs: 300000},
		},
		Hostnames: []desired.AppHostname{},
	}
	if o.hostname != "" {
		inst.Hostnames = append(inst.Hostnames, desired.AppHostname{Hostname: desired.Hostname(o.hostname), Kind: desired.HostnamePlatform})
	}
	doc := fragment{
		HostId:      desired.HostId(o.hostID),
		Volumes:     []desired.DesiredVolume{{VolumeId: desired.VolumeId(o.app), AppId: desired.AppId(o.app), SizeBytes: o.sizeBytes, DesiredState: desired.Present}},
		Instances:   []fragmentInstance{inst},
		Checkpoints: []desired.DesiredCheckpoint{},
		Exports:     []desired.DesiredExport{},
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, nil, err
	}
	// What is printed is what check accepts: a flag or an image field the
	// document cannot carry is said here, as check would say it.
	if _, err := desired.Decode(b); err != nil {
		var why []string
		for _, r := range desired.Reasons(err) {
			why = append(why, r.String())
		}
		return nil, nil, fmt.Errorf("the document for %s would be refused: %s", in.Ref, strings.Join(why, "; "))
	}
	return append(b, '\n'), notes, nil
}

func newAppCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "app",
		Short: "Write desired.json entries for an app",
	}
	var configPath string
	var o appOptions
	fromCmd := &cobra.Command{
		Use:   "from-image REF --app NAME [--hostname H]",
		Short: "Print a desired.json that runs an image pinned by digest as an app",
		Long: `from-image reads the image REF (registry/repository@sha256:<digest>) from
its registry and prints a desired.json holding one volume and one instance
that runs it: the image as the instance's only layer, and a command written
out from the image's entrypoint and cmd, its environment and working
directory, with its first exposed TCP port as httpPort. Merge the volume
and the instance into the host's document; nibrunnerd check accepts it as
printed. The document's command is what the guest runs: nothing of the
image is applied beyond what is written in it, and the image's user is not
(the guest runs every command as uid 65534). What it took from the image
and what it left out is said on standard error.` + imageSettingsLong,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.app == "" {
				return fmt.Errorf("name the app with --app NAME")
			}
			in, err := inspect(cmd.Context(), configPath, args[0])
			if err != nil {
				return err
			}
			doc, notes, err := fromImage(in, o)
			if err != nil {
				return err
			}
			for _, n := range notes {
				fmt.Fprintln(cmd.ErrOrStderr(), "note:", n)
			}
			_, err = cmd.OutOrStdout().Write(doc)
			return err
		},
	}
	f := fromCmd.Flags()
	f.StringVar(&o.app, "app", "", "the app's id (also its volume's)")
	f.StringVar(&o.hostname, "hostname", "", "a platform hostname the HTTP proxy routes to the app")
	f.StringVar(&o.hostID, "host-id", "host-1", "the document's hostId")
	f.StringVar(&o.program, "program", "", "the program to run in place of the first word of the image's entrypoint (of its cmd when it has no entrypoint)")
	f.IntVar(&o.httpPort, "http-port", 0, "the port the app answers HTTP on (default the image's first exposed TCP port)")
	f.Uint64Var(&o.sizeBytes, "volume-bytes", 1<<30, "the app's volume size in bytes")
	f.StringVar(&configPath, "config", "", "host configuration file whose [images] section says how to reach registries")
	cmd.AddCommand(fromCmd)
	return cmd
}
