package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"
)

// cannedBroker answers every request with answer(request header): a broker's bytes as they are.
func cannedBroker(t *testing.T, answer func(Header) []byte) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					f, err := ReadFrame(r, nil)
					if err != nil {
						return
					}
					h, _ := ParseHeader(f, false)
					out := append([]byte(nil), answer(h)...)
					binary.BigEndian.PutUint32(out[4:], uint32(h.CorrelationID))
					_, _ = c.Write(out)
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// startProxyTo runs one link "client-to-n1" in front of upstream; returns its address.
func startProxyTo(t *testing.T, upstream string) (*Proxy, string, *logBuf) {
	logs := &logBuf{}
	p := &Proxy{Rules: NewRules([]string{"client-to-n1"}), Events: &Events{w: logs}}
	l := &Link{Name: "client-to-n1", Listen: "127.0.0.1:0", Upstream: upstream}
	p.Links = []*Link{l}
	ln, err := net.Listen("tcp", l.Listen)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go p.Serve(l, ln)
	return p, ln.Addr().String(), logs
}

func fixtureOf(t *testing.T, api, ver int16, name string) fixture {
	for _, f := range fixtures(t) {
		if f.h.APIKey == api && f.h.APIVersion == ver && (name == "" || f.name == name) {
			return f
		}
	}
	t.Fatalf("no fixture for %s v%d", APIName(api), ver)
	return fixture{}
}

// The proxy in front of a broker that advertises itself: the client gets the proxy's addresses
// in Metadata, FindCoordinator, DescribeCluster, Produce and Fetch; the counters say so.
func TestTheProxyRewritesEndToEnd(t *testing.T) {
	cases := []fixture{fixtureOf(t, apiMetadata, 12, ""), fixtureOf(t, apiFindCoordinator, 4, ""),
		fixtureOf(t, apiDescribeCluster, 1, "describecluster v1"), fixtureOf(t, apiProduce, 11, ""), fixtureOf(t, apiFetch, 17, "")}
	byKey := map[int16][]byte{}
	for _, f := range cases {
		byKey[f.h.APIKey] = f.in
	}
	upstream := cannedBroker(t, func(h Header) []byte { return byKey[h.APIKey] })
	p, addr, logs := startProxyTo(t, upstream)
	p.Rewrite.Advertise = fixtureMap
	c, r := dial(t, addr)
	for i, f := range cases {
		corr := int32(100 + i)
		var body func(e *Encoder, flex bool)
		if f.h.APIKey == apiProduce { // acks=-1: the proxy reads a Produce body to know whether an answer comes
			body = func(e *Encoder, flex bool) {
				e.NullString(flex)
				e.Int16(-1)
				e.Int32(1000)
				e.ArrayLen(0, flex)
				e.Tags(flex)
			}
		}
		if _, err := c.Write(mkRequest(f.h.APIKey, f.h.APIVersion, corr, "c", body)); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		got, err := ReadFrame(r, nil)
		if err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		want := append([]byte(nil), f.want...)
		binary.BigEndian.PutUint32(want[4:], uint32(corr))
		if !bytes.Equal(got, want) {
			t.Fatalf("%s through the proxy:\n%x\nwant\n%x", f.name, got, want)
		}
	}
	code, body := call(t, "GET", httptestServer(t, p)+"/stats", "")
	var stats struct {
		Advertise map[string]string       `json:"advertise"`
		Rewrite   map[string]RewriteStats `json:"rewrite"`
	}
	if err := json.Unmarshal([]byte(body), &stats); code != 200 || err != nil {
		t.Fatalf("stats: %d %s %v", code, body, err)
	}
	if stats.Advertise["2"] != "127.0.0.1:39094" || stats.Rewrite["client-to-n1"] != (RewriteStats{Rewritten: 5, Unmapped: 1}) {
		t.Fatalf("stats: %s", body)
	}
	if ev := logs.events("unmapped-broker"); len(ev) != 1 || ev[0]["api"] != "Fetch" {
		t.Fatalf("unmapped-broker events: %v", ev)
	}
}

// A response the proxy cannot read is not forwarded: the client's connection is closed (it
// reconnects through the proxy), the event names why.
func TestAResponseThatDoesNotDecodeClosesTheClient(t *testing.T) {
	f := fixtureOf(t, apiMetadata, 12, "")
	cut := f.in[:bytes.Index(f.in, []byte("staging"))]
	binary.BigEndian.PutUint32(cut, uint32(len(cut)-4))
	upstream := cannedBroker(t, func(Header) []byte { return cut })
	p, addr, logs := startProxyTo(t, upstream)
	p.Rewrite.Advertise = fixtureMap
	c, r := dial(t, addr)
	if _, err := c.Write(mkRequest(apiMetadata, 12, 7, "c", nil)); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := ReadFrame(r, nil); err == nil {
		t.Fatalf("the client got a response: %x", got)
	}
	if ev := logs.events("rewrite-failed"); len(ev) != 1 {
		t.Fatalf("rewrite-failed events: %v", ev)
	}
}

// Without a map (the built-in backends) nothing is rewritten: the broker's bytes reach the client.
func TestWithoutAMapTheProxyRewritesNothing(t *testing.T) {
	f := fixtureOf(t, apiMetadata, 12, "")
	upstream := cannedBroker(t, func(Header) []byte { return f.in })
	_, addr, _ := startProxyTo(t, upstream)
	c, r := dial(t, addr)
	if _, err := c.Write(mkRequest(apiMetadata, 12, 0x01020304, "c", nil)); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := ReadFrame(r, nil); err != nil || !bytes.Equal(got, f.in) {
		t.Fatalf("got %x (%v), want the broker's bytes", got, err)
	}
}

func TestAdvertiseFlags(t *testing.T) {
	var st rewriteState
	if err := st.parse([]string{"1=127.0.0.1:39092", "22=[::1]:39094"}); err != nil {
		t.Fatal(err)
	}
	if st.Advertise[22] != (HostPort{"::1", 39094}) || st.Advertise[1].String() != "127.0.0.1:39092" {
		t.Fatalf("parsed %v", st.Advertise)
	}
	for _, bad := range []string{"x=h:1", "1=h", "1=h:0", "1=:9092", "-1=h:1", "1=h:70000", "1=h:1,1=h:2"} {
		var st rewriteState
		if err := st.parse(strings.Split(bad, ",")); err == nil {
			t.Errorf("-advertise %s was taken", bad)
		}
	}
	var off rewriteState
	if err := off.parse(nil); err != nil || off.Advertise != nil {
		t.Fatal("no -advertise must leave rewriting off")
	}
}
