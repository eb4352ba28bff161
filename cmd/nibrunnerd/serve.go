package main

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"alpnib.dev/internal/progress"
	"alpnib.dev/internal/version"
	"alpnib.dev/nibrunner/checkpoint"
	"alpnib.dev/nibrunner/checkpoint/schedule"
	"alpnib.dev/nibrunner/clock"
	"alpnib.dev/nibrunner/control"
	"alpnib.dev/nibrunner/daemon"
	"alpnib.dev/nibrunner/daemon/execs"
	"alpnib.dev/nibrunner/db"
	"alpnib.dev/nibrunner/export"
	"alpnib.dev/nibrunner/guestimage"
	"alpnib.dev/nibrunner/hostconfig"
	"alpnib.dev/nibrunner/image"
	"alpnib.dev/nibrunner/jail"
	"alpnib.dev/nibrunner/layer"
	"alpnib.dev/nibrunner/metrics"
	"alpnib.dev/nibrunner/network"
	"alpnib.dev/nibrunner/perm"
	"alpnib.dev/nibrunner/proxy"
	"alpnib.dev/nibrunner/proxy/meter"
	"alpnib.dev/nibrunner/proxy/raw"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/slot"
	"alpnib.dev/nibrunner/statuspage"
	"alpnib.dev/nibrunner/store"
	"alpnib.dev/nibrunner/vmm"
	"alpnib.dev/nibrunner/vmm/fake"
	"alpnib.dev/nibrunner/vmm/qemu"
	"alpnib.dev/nibrunner/volume"
)

func newServeCmd() *cobra.Command {
	var configPath, vmmKind string
	var reserveMiB uint64
	var userNetwork bool
	var logFormat string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the daemon: watch desired.json and converge this host on it",
		Long: `serve reads the host configuration once (--config, else NIBRUNNER_CONFIG, else
/etc/nibrunner/config.toml), then watches desired.json and converges the host
on it until it receives SIGTERM or SIGINT. Guests keep running when it stops
and are adopted by the next serve.

--vmm fake runs each app as a local HTTP server process instead of a microVM
(for demos and tests on hosts without QEMU).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The fake VMM runs its guests as this same program.
			fake.RunGuestIfAsked()
			if configPath == "" {
				configPath = hostconfig.Path()
			}
			h, err := logHandler(logFormat, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if h != nil {
				// The standard log's lines go through it too.
				slog.SetDefault(slog.New(h))
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return serve(ctx, configPath, vmmKind, reserveMiB, userNetwork)
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "", "host configuration file (default $NIBRUNNER_CONFIG or /etc/nibrunner/config.toml)")
	cmd.Flags().StringVar(&vmmKind, "vmm", "qemu", "what runs guests: qemu (microVMs) or fake (local processes)")
	cmd.Flags().StringVar(&logFormat, "log-format", "plain", "the daemon's log on stderr: plain (lines), text (key=value records) or json (one object a line, as the access log); each app's start, sleep, wake, failure and removal is one record with its reason")
	cmd.Flags().Uint64Var(&reserveMiB, "reserve-mib", 1024, "memory kept back for the host itself when admitting guests")
	cmd.Flags().BoolVar(&userNetwork, "user-network", false, "for development and tests on hosts without root networking: QEMU guests get user-mode networking (restricted) instead of taps and nftables; their host ports are forwarded on 127.0.0.1 and they reach nothing else, neither the host nor the Internet")
	return cmd
}

func serve(ctx context.Context, configPath, vmmKind string, reserveMiB uint64, userNetwork bool) error {
	cfg, err := hostconfig.Load(configPath)
	if err != nil {
		return err
	}
	// One daemon a host: the state_dir lock first, then the control
	// socket, before anything is opened, adopted or changed.
	unlock, err := lockStateDir(cfg.Paths.StateDir)
	if err != nil {
		return err
	}
	defer unlock()
	sock := control.SocketPath(cfg.Paths.RuntimeDir)
	ctl, err := listenControl(sock)
	if err != nil {
		return err
	}
	served := false
	defer func() {
		if !served && ctl != nil {
			ctl.Close()
			os.Remove(sock)
		}
	}()
	if err := privateFolders(cfg); err != nil {
		return err
	}
	// Every goroutine serve starts is joined before the daemon closes (see
	// the deferred shutdown below), so none calls into a closed daemon.
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	spawn := func(f func()) {
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
	}
	defer func() { cancel(); wg.Wait() }()
	artifacts, err := store.Open(ctx, cfg.Artifacts.StoreURL)
	if err != nil {
		return fmt.Errorf("open the artifact store: %w", err)
	}
	cache, err := layer.NewCache(filepath.Join(cfg.Paths.StateDir, "layers"), artifacts)
	if err != nil {
		return err
	}
	if im := cfg.Images; im != nil {
		// Under the layer cache's folder, so its size counts in the cache's.
		puller, err := image.New(image.Options{
			CacheDir: filepath.Join(cfg.Paths.StateDir, "layers", "oci"),
			AuthFile: im.AuthFile, CAFile: im.CAFile, PlainHTTP: im.PlainHTTPRegistries,
			MaxUnpackedBytes: im.MaxUnpackedBytes,
		})
		if err != nil {
			return fmt.Errorf("[images]: %w", err)
		}
		cache.Images = puller
	}
	local, err := volume.NewLocal(cfg.Volumes.StoragePrefix, artifacts)
	if err != nil {
		return err
	}
	// The daemon's one clock: its passes and jobs, and the waits of the
	// checkpoint and export stores' retries.
	clk := clock.Real
	// With [metrics], the families exist before the stores whose counts
	// they show are opened.
	var mx *metrics.Metrics
	if cfg.Metrics != nil {
		mx = metrics.New()
	}
	cps, exps, err := openBackground(ctx, cfg, clk, mx)
	if err != nil {
		return err
	}
	sched, err := openSchedule(ctx, cfg, cps, clk)
	if err != nil {
		return err
	}
	deps := daemon.Deps{
		Layers:      cache,
		Volumes:     local,
		Checkpoints: cps,
		Exports:     exps,
		Router:      daemon.NoRouter{},
		Schedule:    sched,
	}
	// With [metrics], /metrics is bound now (a port in use stops the
	// start) and served once everything it reads exists.
	var mxServer *metrics.Server
	if mx != nil {
		mxServer, err = mx.Listen(ctx, net.JoinHostPort(cfg.Metrics.ListenAddress, strconv.Itoa(cfg.Metrics.Port)))
		if err != nil {
			return err
		}
	}
	// With [proxy.http] the proxy is the router and measures traffic; it
	// listens once the daemon that wakes its sleeping apps exists.
	var px *proxy.Proxy
	if cfg.Proxy.HTTP != nil {
		// One JSON line per request on stderr, written in batches.
		accessLog := proxy.NewAccessLogWriter(os.Stderr, 200*time.Millisecond)
		defer accessLog.Close()
		opts := proxy.Options{AccessLog: accessLog, MaxBackendConnsPerApp: cfg.Proxy.HTTP.MaxBackendConnectionsPerApp}
		if mx != nil {
			opts.Recorder = mx
		}
		px = proxy.New(opts)
		defer px.Close()
		deps.Router, deps.Traffic = px, px
	}
	// With [proxy.raw] the relay carries raw ports; it binds each as the
	// daemon publishes it, and wakes through the daemon.
	var relay *raw.Relay
	if cfg.Proxy.Raw != nil {
		rc := cfg.Proxy.Raw
		ro := raw.Options{
			ListenAddress:              rc.ListenAddress,
			TCPIdleTimeout:             time.Duration(rc.TCPIdleTimeoutMs) * time.Millisecond,
			MaxTCPConnections:          rc.MaxTCPConnections,
			PortQueueBytes:             rc.UDPQueueBytesPerPort,
			MaxTCPConnectionsPerClient: rc.MaxTCPConnectionsPerClient,
			MaxTCPConnectionsPerApp:    rc.MaxTCPConnectionsPerApp,
			MaxFlowsPerClient:          rc.MaxUDPFlowsPerClient,
		}
		if mx != nil {
			ro.Recorder = mx
		}
		relay = raw.New(ro)
		defer relay.Close()
		deps.Ports = relay
		if px != nil {
			deps.Traffic = meter.Merged{px, relay}
		} else {
			deps.Traffic = relay
		}
	}
	if mx != nil {
		deps.Metrics = mx
	}
	guestImage := "none"
	switch vmmKind {
	case "fake":
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		v, err := fake.New(fake.Options{RuntimeDir: cfg.Paths.RuntimeDir, SnapshotDir: cfg.Paths.SnapshotDir, Command: []string{exe, "serve"}})
		if err != nil {
			return err
		}
		deps.VMM, deps.Network = v, daemon.NoNetwork{}
	case "qemu":
		img, err := guestimage.Load(cfg.Paths.GuestImageDir)
		if err != nil {
			return fmt.Errorf("load the guest image (nibrunnerd install builds it): %w", err)
		}
		guestImage = img.Version
		jc, err := jailConfig(cfg)
		if err != nil {
			return err
		}
		// What parses a tenant's ext4 on a grow runs jailed, as its guest.
		local.Jail = &jail.Tool{Root: filepath.Join(cfg.Paths.RuntimeDir, ".jail"), ID: cfg.JailRange().ToolID()}
		v, err := qemu.New(ctx, qemu.Config{Image: img, RuntimeDir: cfg.Paths.RuntimeDir, SnapshotDir: cfg.Paths.SnapshotDir, UserNetwork: userNetwork, Jail: jc})
		if err != nil {
			return err
		}
		defer v.Close()
		deps.VMM = v
		// A sleeping app's memory travels beside its volume's checkpoint
		// (docs/fleet.md).
		deps.Travel = qemu.Travel{VMM: v, Checkpoints: cps.Objects(), Artifacts: artifacts}
		deps.Network = network.Host{DeniedV4: cfg.Network.DeniedV4, DeniedV6: cfg.Network.DeniedV6, DNS: cfg.Network.DNS}
		if userNetwork {
			deps.Network = daemon.NoNetwork{}
			if w := userNetworkPortWarning(cfg.MaxApps); w != "" {
				log.Printf("nibrunnerd: %s", w)
			}
		}
	default:
		return fmt.Errorf("--vmm %q: choose qemu or fake", vmmKind)
	}
	stopFleet, source, err := startFleet(ctx, cfg, spawn)
	if err != nil {
		return err
	}
	defer stopFleet()
	if mx != nil {
		deps.VMM = metrics.Instrument(deps.VMM, mx)
	}
	// Exec sessions are a component beside the daemon: they reach guests
	// through the VMM, wake apps through the daemon, and an open one is
	// its app's traffic, so an on-request app does not sleep under it.
	sessions := execSessions(cfg, deps.VMM)
	if deps.Traffic != nil {
		deps.Traffic = meter.Merged{deps.Traffic, sessions}
	} else {
		deps.Traffic = sessions
	}
	hostID, _ := os.Hostname()
	d, err := daemon.Open(ctx, daemon.Config{
		HostID:            hostID,
		Clock:             clk,
		DesiredPath:       desiredFile(cfg),
		StateDir:          cfg.Paths.StateDir,
		MaxApps:           cfg.MaxApps,
		CapacityMiB:       memTotalMiB() - min(reserveMiB, memTotalMiB()),
		MemoryOvercommit:  cfg.Admission.MemoryOvercommit,
		VCPUs:             uint32(runtime.NumCPU()),
		AgentVersion:      version.String(),
		GuestImageVersion: guestImage,
		Limits:            cfg.Limits(),
		UserNetwork:       userNetwork || vmmKind == "fake",
		BackgroundJobs:    cfg.Checkpoints.MaxConcurrent,
		// 0 (not set) is one per CPU: the daemon's default.
		MaxConcurrentVMStarts: cfg.MaxConcurrentVMStarts,
		LayerCacheBytes:       int64(cfg.LayerCacheBytes),
		DNS:                   cfg.Network.DNS,
		Source:                source,
	}, deps)
	if err != nil {
		return err
	}
	// Shutdown, in order: no new request (the proxy and the raw relay
	// close, abandoning wakes under way), every goroutine serve started ends, then the
	// daemon closes. Closing the daemon first let a late request wake a
	// closed daemon.
	defer func() {
		cancel()
		if px != nil {
			px.Close()
		}
		if relay != nil {
			relay.Close()
		}
		wg.Wait()
		d.Close()
	}()
	// The events of the reports this daemon writes: the control socket's
	// and the status page's, kept in state.db across restarts.
	reportPath := filepath.Join(cfg.Paths.StateDir, daemon.ReportName)
	journal := control.NewJournal(0)
	events, err := db.Open(ctx, filepath.Join(cfg.Paths.StateDir, daemon.StateDBName))
	if err != nil {
		return err
	}
	if err := journal.RestoreFrom(ctx, events); err != nil {
		events.Close()
		return err
	}
	kept := journal.Seq()
	journal.Watch(ctx, reportPath)
	spawn(func() { logLifecycle(ctx, journal, kept, slog.Default()) })
	spawn(func() {
		logVolumeWork(ctx, clk, progress.Every, func() *reported.HostReportedState { return control.ReadReport(reportPath) }, slog.Default())
	})
	spawn(func() {
		defer events.Close()
		failing := false
		journal.KeepIn(ctx, events, kept, func(_ uint64, err error) {
			// Said once when it starts failing and once when it recovers.
			if (err != nil) != failing {
				failing = err != nil
				if failing {
					log.Printf("nibrunnerd: events are not kept in state.db (they are in memory; retried with the next): %v", err)
				} else {
					log.Printf("nibrunnerd: events are kept in state.db again")
				}
			}
		})
	})
	// Before the first pass: a checkpoint that pass starts must not have
	// its fresh freeze ended by this thaw.
	thawFrozen(ctx, deps.VMM)
	if ctl != nil {
		served = true
		sessions.SetWaker(d)
		spawn(func() { sessions.Start(ctx) })
		spawn(func() { serveControl(ctx, cfg, d, deps.VMM, sessions, journal, ctl) })
	}
	if mxServer != nil {
		mxServer.Handle("GET /{$}", statuspage.Handler(func(*http.Request) statuspage.Input {
			return pageInput(clk.Now(), reportPath, d, journal, mx)
		}))
		spawn(func() {
			if err := mxServer.Serve(ctx); err != nil {
				log.Printf("nibrunnerd: %v", err)
			}
		})
	}
	if relay != nil {
		relay.SetWaker(d)
	}
	if px != nil {
		px.SetWaker(d)
		h := cfg.Proxy.HTTP
		lc := proxy.ListenConfig{
			Address:                 net.JoinHostPort(h.ListenAddress, strconv.Itoa(h.Port)),
			BodyTimeout:             time.Duration(h.BodyTimeoutMs) * time.Millisecond,
			SendTimeout:             time.Duration(h.SendTimeoutMs) * time.Millisecond,
			MaxConnections:          h.MaxConnections,
			MaxConnectionsPerClient: h.MaxConnectionsPerClient,
			H2C:                     h.H2C,
		}
		if h.TLS != nil {
			lc.CertFile, lc.KeyFile = h.TLS.Certificate, h.TLS.Key
		}
		front, err := px.Listen(ctx, lc)
		if err != nil {
			return err
		}
		spawn(func() {
			if err := front.Serve(ctx); err != nil {
				log.Printf("nibrunnerd: %v", err)
			}
		})
	}
	return d.Run(ctx)
}

// privateFolders sets the daemon's umask (what it creates is not readable
// by others: 0640 files, 0750 folders), takes others' permissions off
// whatever a folder of tenants' data already holds, saying so, and makes
// the folders that are missing, 0750.
func privateFolders(cfg *hostconfig.Config) error {
	unix.Umask(perm.Umask)
	for _, dir := range []string{cfg.Paths.StateDir, cfg.Paths.RuntimeDir, cfg.Paths.SnapshotDir, cfg.Volumes.StoragePrefix, cfg.Exports.StagingDir} {
		done, err := perm.Tighten(dir)
		if len(done) > 0 {
			const shown = 5
			names := make([]string, 0, shown)
			for _, d := range done[:min(len(done), shown)] {
				names = append(names, d.String())
			}
			more := ""
			if len(done) > shown {
				more = fmt.Sprintf(" and %d more", len(done)-shown)
			}
			log.Printf("nibrunnerd: %s held %d folders and files others could read or write; took their permissions away: %s%s", dir, len(done), strings.Join(names, ", "), more)
		}
		if err != nil {
			return fmt.Errorf("make %s private: %w", dir, err)
		}
		if err := os.MkdirAll(dir, perm.Dir); err != nil {
			return err
		}
	}
	return nil
}

// openBackground opens the checkpoint store and the export writer the
// configuration names. Both clean up what a daemon that died left: scratch
// copies, mounts, and multipart uploads it never completed. An S3 store
// among them waits on clk between the retries of an upload, and shows
// its counts in mx (when not nil) as store "checkpoints" or "exports".
func openBackground(ctx context.Context, cfg *hostconfig.Config, clk clock.Clock, mx *metrics.Metrics) (*checkpoint.Store, *export.Writer, error) {
	freeze := time.Duration(cfg.Checkpoints.FreezeTimeoutMs) * time.Millisecond
	cpObjects, err := openStreamer(ctx, "checkpoints", cfg.Checkpoints.StoreURL, clk, mx)
	if err != nil {
		return nil, nil, err
	}
	// Under the host's name: the default store, the artifact store, is
	// often one bucket for a whole fleet, and checkpoint ids are each
	// host's own.
	cps, err := checkpoint.Open(ctx, checkpoint.Options{
		Dir: filepath.Join(cfg.Volumes.StoragePrefix, "checkpoints"), Objects: cpObjects,
		Prefix: checkpointPrefix(), FreezeTimeout: freeze,
	})
	if err != nil {
		return nil, nil, err
	}
	expObjects, err := openStreamer(ctx, "exports", cfg.Exports.StoreURL, clk, mx)
	if err != nil {
		return nil, nil, err
	}
	exps, err := export.Open(ctx, export.Options{
		Objects: expObjects, StagingDir: cfg.Exports.StagingDir,
		RecordDir: filepath.Join(cfg.Paths.StateDir, "export-records"), FreezeTimeout: freeze,
	})
	if err != nil {
		return nil, nil, err
	}
	return cps, exps, nil
}

// openSchedule opens the scheduled checkpoints [checkpoints.schedule]
// asks for: into the checkpoint store beside the document's checkpoints
// (cps), under <prefix>scheduled/, with a folder of their own and no local
// copy kept (the daemon's manager runs it, Deps.Schedule).
func openSchedule(ctx context.Context, cfg *hostconfig.Config, cps *checkpoint.Store, clk clock.Clock) (*schedule.Schedule, error) {
	sc := cfg.Checkpoints.Schedule
	st, err := checkpoint.Open(ctx, checkpoint.Options{
		Dir: filepath.Join(cfg.Volumes.StoragePrefix, "scheduled-checkpoints"), Objects: cps.Objects(),
		Prefix: checkpointPrefix() + "scheduled/", FreezeTimeout: time.Duration(cfg.Checkpoints.FreezeTimeoutMs) * time.Millisecond,
		UploadOnly: true,
	})
	if err != nil {
		return nil, fmt.Errorf("scheduled checkpoints: %w", err)
	}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	vols := map[string]schedule.Policy{}
	for id, v := range sc.Volumes {
		vols[id] = schedule.Policy{Interval: ms(v.IntervalMs), Keep: v.Keep, Off: v.Disabled}
	}
	return schedule.New(schedule.Options{
		Store: st, Dir: filepath.Join(cfg.Paths.StateDir, "schedule"),
		Default: schedule.Policy{Interval: ms(sc.IntervalMs), Keep: sc.Keep, Off: sc.Disabled},
		Volumes: vols, Clock: clk,
	})
}

// checkpointPrefix is checkpoints/<hostname>/ (checkpoints/ when the
// hostname cannot be read or is not a key segment).
func checkpointPrefix() string {
	host, err := os.Hostname()
	if err != nil || host == "" || host == "." || host == ".." || strings.ContainsAny(host, "/\\\x00") {
		return "checkpoints/"
	}
	return "checkpoints/" + host + "/"
}

// openStreamer opens the store of [section] store_url (checkpoints,
// exports), which must take streamed uploads. An S3 one retries on clk and
// is added to mx as store section.
func openStreamer(ctx context.Context, section, url string, clk clock.Clock, mx *metrics.Metrics) (store.Streamer, error) {
	key := section + ".store_url"
	st, err := store.Open(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", key, err)
	}
	s, ok := st.(store.Streamer)
	if !ok {
		return nil, fmt.Errorf("open %s: the store %s cannot take streamed uploads", key, url)
	}
	if s3, ok := st.(*store.S3); ok {
		s3.SetClock(clk)
		if mx != nil {
			mx.AddStore(section, s3)
		}
	}
	return s, nil
}

// thawFrozen thaws the volumes of the running guests a killed daemon may
// have left frozen mid-checkpoint (checkpoint.ThawRunning), all at once,
// waiting at most 10 s for a guest's answer (one that never answers thaws
// by itself at its freeze's bound).
func thawFrozen(ctx context.Context, v vmm.VMM) {
	f, ok := vmm.As[vmm.Freezer](v)
	if !ok {
		return
	}
	g := struct {
		vmm.VMM
		vmm.Freezer
	}{v, f}
	for app, err := range checkpoint.ThawRunning(ctx, g, 10*time.Second) {
		log.Printf("nibrunnerd: thaw the volume of %s as the daemon starts: %v", app, err)
	}
}

var (
	_ vmm.VMM          = (*qemu.VMM)(nil)
	_ proxy.Recorder   = (*metrics.Metrics)(nil)
	_ raw.Recorder     = (*metrics.Metrics)(nil)
	_ metrics.Recorder = (*metrics.Metrics)(nil)
	// The proxy measures the daemon's traffic; nibrunner/proxy does not
	// import the daemon (route is the seam), so the check lives here.
	_ daemon.Traffic = (*proxy.Proxy)(nil)
)

// memTotalMiB reads the host's memory from /proc/meminfo.
func memTotalMiB() uint64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb >> 10
		}
	}
	return 0
}

// userNetworkPortWarning says when max_apps reaches slots whose host
// ports, which QEMU's user network binds on loopback, lie in the kernel's
// range for outgoing connections' local ports: any connection on the host
// may hold one, and that app's guest then cannot start. With taps the
// ports are published by nftables and never bound, so this is the user
// network's alone.
func userNetworkPortWarning(maxApps int) string {
	lo, hi := network.EphemeralPorts()
	first, ok := slot.FirstWithPortIn(maxApps, lo, hi)
	if !ok {
		return ""
	}
	var fixes []string
	if first > 0 {
		fixes = append(fixes, fmt.Sprintf("lower max_apps to %d", first))
	}
	// Reserving the overlap is advised only while it leaves outgoing
	// connections ports of their own: reserving the whole range would stop
	// every connection the host makes (S3, the fleet poll, layer fetches).
	from, to := max(slot.HostPort(first), lo), min(slot.HostPort(min(maxApps, slot.Max)-1)+slot.PortsPerSlot-1, hi)
	if left := (hi - lo + 1) - (to - from + 1); left >= minOutgoingPorts {
		fixes = append(fixes, fmt.Sprintf("reserve the ports (%d stay for outgoing connections): sysctl net.ipv4.ip_local_reserved_ports=%d-%d", left, from, to))
	}
	fixes = append(fixes, "run without --user-network: on taps, nftables publishes the host ports and nothing binds them")
	return fmt.Sprintf("with --user-network, slots %d and up (max_apps is %d) have host ports in the kernel's range for outgoing connections, %d–%d (net.ipv4.ip_local_port_range); "+
		"a connection on this host can hold one, and that app's guest then fails to start. To avoid it, %s",
		first, maxApps, lo, hi, strings.Join(fixes, "; or "))
}

// minOutgoingPorts is the fewest ephemeral ports a reservation the warning
// advises may leave.
const minOutgoingPorts = 4096

// pageInput is what the status page shows now: the report on disk, the
// accepted document, each app's last event and the last hour's samples.
func pageInput(now time.Time, reportPath string, d *daemon.Daemon, j *control.Journal, mx *metrics.Metrics) statuspage.Input {
	in := statuspage.Input{Now: now, Report: control.ReadReport(reportPath), Doc: d.Accepted(), Last: map[string]statuspage.Event{}}
	evs, _ := j.After(0)
	for _, e := range evs {
		if e.Subject == control.SubjectInstance {
			in.Last[e.ID] = statuspage.Event{At: e.At, Verb: string(e.Verb), Message: e.Message}
		}
	}
	in.Wakes, in.Held = mx.History().Points()
	return in
}

// execSessions is the exec component as config.toml's [exec] bounds it,
// reaching guests through v when it can run a program in one.
func execSessions(cfg *hostconfig.Config, v vmm.VMM) *execs.Sessions {
	s := &execs.Sessions{
		MaxPerApp: cfg.Exec.MaxSessionsPerApp,
		Idle:      time.Duration(cfg.Exec.IdleTimeoutMs) * time.Millisecond,
	}
	if e, ok := vmm.As[vmm.Execer](v); ok {
		s.Execer = e
	}
	return s
}
