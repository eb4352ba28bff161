package desired

import (
	"strings"
	"testing"
)

func decodeBase(t *testing.T, mutate ...func(any)) *HostDesiredState {
	t.Helper()
	tree := parseTree(t, base)
	for _, m := range mutate {
		m(tree)
	}
	data := mustJSON(t, tree)
	doc, err := Decode(data)
	if err != nil {
		t.Fatalf("refused: %v", err)
	}
	return doc
}

func TestAHostWithBothProxiesAndRoomForThePortsHasNoInstanceProblems(t *testing.T) {
	doc := decodeBase(t)
	if got := InstanceProblems(doc, HostLimits{HTTPProxy: true, RawProxy: true, MaxPortsPerGuest: 1}); len(got) != 0 {
		t.Fatalf("want none, got %v", got)
	}
}

func TestInstanceProblemsFailTheInstanceButKeepTheDocument(t *testing.T) {
	cases := []struct {
		name   string
		mutate []func(any)
		limits HostLimits
		app    AppId
		want   string
	}{
		{"more ports than the host carries", []func(any){appendTo("instances.0.config.ports", `{"name": "b", "guestPort": 9001}`)},
			HostLimits{HTTPProxy: true, RawProxy: true, MaxPortsPerGuest: 1}, "web", "asks for 2 ports beside HTTP but this host carries at most 1 per guest"},
		{"ports on a host with no raw proxy", nil,
			HostLimits{HTTPProxy: true}, "web", "asks for 1 port beside HTTP but this host has no [proxy.raw]"},
		{"hostnames on a host with no http proxy", nil,
			HostLimits{RawProxy: true, MaxPortsPerGuest: 7}, "web", "names 1 hostname (web.example.com) but this host has no [proxy.http]"},
		{"an environment value with a newline", []func(any){set("instances.1.config.command.environment.MOTD", "a\nb")},
			HostLimits{HTTPProxy: true, RawProxy: true, MaxPortsPerGuest: 7}, "api", "environment variable MOTD holds a newline"},
		{"an environment value with a carriage return", []func(any){set("instances.1.config.command.environment.CR", "a\rb")},
			HostLimits{HTTPProxy: true, RawProxy: true, MaxPortsPerGuest: 7}, "api", "environment variable CR holds"},
		{"a guest with no memory", []func(any){set("instances.1.config.resources.memoryMib", 0.0)},
			HostLimits{HTTPProxy: true, RawProxy: true, MaxPortsPerGuest: 7}, "api", "config.resources.memoryMib is 0, and a guest cannot boot without memory"},
		{"a guest with no vCPU", []func(any){set("instances.1.config.resources.vcpuCount", 0.0)},
			HostLimits{HTTPProxy: true, RawProxy: true, MaxPortsPerGuest: 7}, "api", "config.resources.vcpuCount is 0, and a guest cannot run without a CPU"},
		{"an image layer on a host that pulls none", []func(any){set("instances.1.layers", []any{map[string]any{"kind": "image", "reference": "registry.example/api@sha256:" + strings.Repeat("ab", 32)}})},
			HostLimits{HTTPProxy: true, RawProxy: true, MaxPortsPerGuest: 7, NoImages: true}, "api", "layers[0] is an image but this host pulls none: give its config.toml an [images] section"},
		{"an environment value with a NUL", []func(any){set("instances.1.config.command.environment.Z", "a\x00b")},
			HostLimits{HTTPProxy: true, RawProxy: true, MaxPortsPerGuest: 7}, "api", "environment variable Z holds"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := decodeBase(t, tc.mutate...)
			got := InstanceProblems(doc, tc.limits)
			if !strings.Contains(got[tc.app], tc.want) {
				t.Fatalf("problem of %s = %q, want it to say %q", tc.app, got[tc.app], tc.want)
			}
			if len(got) != 1 {
				t.Fatalf("only %s has a problem, got %v", tc.app, got)
			}
		})
	}
}

func TestTheEffectiveSleepPolicyFollowsTheSpec(t *testing.T) {
	idle := IdleTimeoutMs(120000)
	cases := []struct {
		name string
		in   DesiredInstance
		want SleepPolicy
	}{
		{"activation wins", DesiredInstance{DesiredState: StateOnRequest, Activation: &ActivationPolicy{SleepWhen: SleepPolicy{Kind: SleepMaxLifetime, TtlMs: 60000}}},
			SleepPolicy{Kind: SleepMaxLifetime, TtlMs: 60000}},
		{"on-request with idleTimeoutMs sleeps after it", DesiredInstance{DesiredState: StateOnRequest, IdleTimeoutMs: &idle},
			SleepPolicy{Kind: SleepTrafficIdle, TimeoutMs: 120000}},
		{"on-request with neither sleeps after five minutes", DesiredInstance{DesiredState: StateOnRequest},
			SleepPolicy{Kind: SleepTrafficIdle, TimeoutMs: 300000}},
		{"running never sleeps", DesiredInstance{DesiredState: StateRunning, IdleTimeoutMs: &idle}, SleepPolicy{Kind: SleepNever}},
		{"stopped never sleeps", DesiredInstance{DesiredState: StateStopped}, SleepPolicy{Kind: SleepNever}},
	}
	for _, tc := range cases {
		if got := tc.in.EffectiveSleepPolicy(); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestMatchGuestPathIsTheSeedPatternWithItsLookahead(t *testing.T) {
	accept := []string{"/", "/a", "/usr/local/bin/x", "/a/.b", "/a/..b", "/a/b..", "/ünïcode", "/a b"}
	refuse := []string{"", "a", "//", "/a/", "/.", "/..", "/a/./b", "/a/../b", "/a\\b", "/a\"b", "/a'b", "/a\x00b", "/a\x1fb", "/a\nb"}
	for _, p := range accept {
		if !MatchGuestPath(p) {
			t.Errorf("%q refused", p)
		}
	}
	for _, p := range refuse {
		if MatchGuestPath(p) {
			t.Errorf("%q accepted", p)
		}
	}
}
