package daemon

import (
	"testing"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/route"
	"alpnib.dev/nibrunner/slot"
)

func TestTheRouteBuilderGivesEveryListedHostnameARouteAndAnAppBeingDeletedAnswersNotRunning(t *testing.T) {
	in := func(id string, state desired.DesiredInstanceState) desired.DesiredInstance {
		return desired.DesiredInstance{AppId: desired.AppId(id), DesiredState: state,
			Hostnames: []desired.AppHostname{{Hostname: desired.Hostname(id + ".example.net")}}}
	}
	up := routeFacts{Slot: 2, HasSlot: true, Up: true, Answering: true, Addr: "10.201.0.10:8080"}
	tests := []struct {
		name string
		doc  []desired.DesiredInstance
		apps map[string]routeFacts
		last []route.Route
		want []route.Route
	}{
		{
			name: "an app stopped in its first document has no slot and answers not running",
			doc:  []desired.DesiredInstance{in("a", desired.StateStopped)},
			want: []route.Route{{Hostname: "a.example.net", AppID: "a", State: route.Down}},
		},
		{
			name: "an app to run that has no slot yet is waited on until its first boot",
			doc:  []desired.DesiredInstance{in("a", desired.StateRunning)},
			apps: map[string]routeFacts{"a": {}},
			want: []route.Route{{Hostname: "a.example.net", AppID: "a", State: route.Sleeping}},
		},
		{
			name: "an app whose first guest is being started is waited on",
			doc:  []desired.DesiredInstance{in("a", desired.StateRunning)},
			apps: map[string]routeFacts{"a": {Slot: 2, HasSlot: true}},
			want: []route.Route{{Hostname: "a.example.net", AppID: "a", HostPort: slot.HostPort(2), State: route.Sleeping}},
		},
		{
			name: "an app stopped in its first document answers not running",
			doc:  []desired.DesiredInstance{in("a", desired.StateStopped)},
			apps: map[string]routeFacts{"a": {}},
			want: []route.Route{{Hostname: "a.example.net", AppID: "a", State: route.Down}},
		},
		{
			name: "a healthy guest is up at its address",
			doc:  []desired.DesiredInstance{in("a", desired.StateRunning)},
			apps: map[string]routeFacts{"a": up},
			want: []route.Route{{Hostname: "a.example.net", AppID: "a", HostPort: slot.HostPort(2), Addr: up.Addr, State: route.Up}},
		},
		{
			name: "a booting guest is waited on",
			doc:  []desired.DesiredInstance{in("a", desired.StateRunning)},
			apps: map[string]routeFacts{"a": {Slot: 2, HasSlot: true, Up: true, Addr: up.Addr}},
			want: []route.Route{{Hostname: "a.example.net", AppID: "a", HostPort: slot.HostPort(2), Addr: up.Addr, State: route.Sleeping}},
		},
		{
			name: "a stopped app whose guest is still going down answers not running",
			doc:  []desired.DesiredInstance{in("a", desired.StateStopped)},
			apps: map[string]routeFacts{"a": {Slot: 2, HasSlot: true, Up: true, Addr: up.Addr}},
			want: []route.Route{{Hostname: "a.example.net", AppID: "a", HostPort: slot.HostPort(2), Addr: up.Addr, State: route.Down}},
		},
		{
			name: "an on-request app booted once sleeps",
			doc:  []desired.DesiredInstance{in("a", desired.StateOnRequest)},
			apps: map[string]routeFacts{"a": {Slot: 2, HasSlot: true, Booted: true}},
			want: []route.Route{{Hostname: "a.example.net", AppID: "a", HostPort: slot.HostPort(2), State: route.Sleeping}},
		},
		{
			name: "an app the document dropped but the daemon still holds is being deleted and answers not running",
			doc:  []desired.DesiredInstance{},
			apps: map[string]routeFacts{"gone": up},
			last: []route.Route{{Hostname: "gone.example.net", AppID: "gone", HostPort: slot.HostPort(2), Addr: up.Addr, State: route.Up}},
			want: []route.Route{{Hostname: "gone.example.net", AppID: "gone", HostPort: slot.HostPort(2), State: route.Down}},
		},
		{
			name: "an app once forgotten is not routed at all",
			doc:  []desired.DesiredInstance{},
			last: []route.Route{{Hostname: "gone.example.net", AppID: "gone", State: route.Down}},
		},
		{
			name: "a hostname an app of the document now names is that app's, not the deleted one's",
			doc: []desired.DesiredInstance{{AppId: "b", DesiredState: desired.StateStopped,
				Hostnames: []desired.AppHostname{{Hostname: "gone.example.net"}}}},
			apps: map[string]routeFacts{"gone": up},
			last: []route.Route{{Hostname: "gone.example.net", AppID: "gone", HostPort: slot.HostPort(2), State: route.Up}},
			want: []route.Route{{Hostname: "gone.example.net", AppID: "b", State: route.Down}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &desired.HostDesiredState{Instances: tt.doc}
			got, _ := buildRoutes(d, tt.apps, tt.last, false)
			if len(got) != len(tt.want) {
				t.Fatalf("routes %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("route %d is %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestRawPortsArePublishedOnlyForAppsWithASlotOffTheUserNetwork(t *testing.T) {
	d := &desired.HostDesiredState{Instances: []desired.DesiredInstance{
		{AppId: "a", DesiredState: desired.StateRunning, Config: desired.AppConfig{Ports: []desired.InstancePort{{Name: "game", GuestPort: 7000}}}},
		{AppId: "b", DesiredState: desired.StateStopped, Config: desired.AppConfig{Ports: []desired.InstancePort{{Name: "game", GuestPort: 7000}}}},
	}}
	apps := map[string]routeFacts{"a": {Slot: 1, HasSlot: true}}
	_, raw := buildRoutes(d, apps, nil, false)
	// a is being started: its port, like its hostnames, waits for it.
	want := route.Port{AppID: "a", Index: 1, HostPort: slot.HostPort(1) + 1, Addr: "10.201.0.6:7000", State: route.Sleeping}
	if len(raw) != 1 || raw[0] != want {
		t.Fatalf("raw ports %+v, want only %+v", raw, want)
	}
	if _, raw := buildRoutes(d, apps, nil, true); len(raw) != 0 {
		t.Fatalf("raw ports on the user network: %+v", raw)
	}
}
