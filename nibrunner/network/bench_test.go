package network

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"testing"

	"alpnib.dev/internal/testenv"
)

// BenchmarkRender1000Apps measures rendering the whole table for a full
// host: 1000 slots, half running with two raw ports each.
func BenchmarkRender1000Apps(b *testing.B) {
	r := fullHost()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Render(r); err != nil {
			b.Fatal(err)
		}
	}
}

func fullHost() Rules {
	r := Rules{DeniedV4: []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")}}
	for i := 0; i < 1000; i++ {
		r.Apps = append(r.Apps, App{Slot: i, AppID: "app-" + strconv.Itoa(i), Running: i%2 == 0, HTTPPort: 8080, Ports: []int{5000, 5001}})
	}
	return r
}

// BenchmarkApply1000Apps measures one atomic replacement of the whole
// table for a full host with nft -f, inside a namespace of its own.
func BenchmarkApply1000Apps(b *testing.B) {
	testenv.RequireRoot(b)
	testenv.RequireCommand(b, "ip", "nft")
	ns := testenv.Netns(b, fmt.Sprintf("nbb%d-%d", os.Getpid()%100000, b.N))
	r := fullHost()
	b.ResetTimer()
	err := testenv.InNetns(ns, func() error {
		for i := 0; i < b.N; i++ {
			r.Apps[i%len(r.Apps)].Running = !r.Apps[i%len(r.Apps)].Running
			if err := (Firewall{}).Apply(context.Background(), r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}
