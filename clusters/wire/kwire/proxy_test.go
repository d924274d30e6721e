package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeBroker answers every request with a header-v0 response carrying its correlation id and an
// error code 0 body (throttle, error), after delay(request) — and records when each request arrived.
type fakeBroker struct {
	ln      net.Listener
	mu      sync.Mutex
	arrived map[int32]time.Time
	delay   func(Header) time.Duration
}

func newFakeBroker(t *testing.T) *fakeBroker {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &fakeBroker{ln: ln, arrived: map[int32]time.Time{}, delay: func(Header) time.Duration { return 0 }}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go b.serve(c)
		}
	}()
	return b
}

func (b *fakeBroker) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	var wmu sync.Mutex
	var prev chan struct{} // responses in request order, even when one is delayed
	for {
		f, err := ReadFrame(r, nil)
		if err != nil {
			return
		}
		h, _ := ParseHeader(f, false)
		b.mu.Lock()
		b.arrived[h.CorrelationID] = time.Now()
		b.mu.Unlock()
		done := make(chan struct{})
		go func(h Header, wait chan struct{}) {
			time.Sleep(b.delay(h))
			if wait != nil {
				<-wait
			}
			e := &Encoder{}
			e.Int32(h.CorrelationID)
			e.Tags(ResponseHeaderVersion(h.APIKey, h.APIVersion) == 1)
			e.Int32(0)
			e.Int16(0)
			wmu.Lock()
			_, _ = c.Write(e.Frame())
			wmu.Unlock()
			close(done)
		}(h, prev)
		prev = done
	}
}

func (b *fakeBroker) when(corr int32) (time.Time, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.arrived[corr]
	return t, ok
}

type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) events(what string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.b.String()), "\n") {
		var ev map[string]any
		if json.Unmarshal([]byte(line), &ev) == nil && ev["event"] == what {
			out = append(out, ev)
		}
	}
	return out
}

// startProxy runs one link "client-to-n1" in front of the fake broker; returns its address.
func startProxy(t *testing.T, b *fakeBroker) (*Proxy, string, *logBuf) {
	logs := &logBuf{}
	p := &Proxy{Rules: NewRules([]string{"client-to-n1"}), Events: &Events{w: logs}}
	l := &Link{Name: "client-to-n1", Listen: "127.0.0.1:0", Upstream: b.ln.Addr().String()}
	p.Links = []*Link{l}
	ln, err := net.Listen("tcp", l.Listen)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go p.Serve(l, ln)
	return p, ln.Addr().String(), logs
}

func dial(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, bufio.NewReader(c)
}

func metadata(corr int32) []byte { return mkRequest(apiMetadata, 1, corr, "c", nil) }

// responses reads n responses (deadline d) and returns their correlation ids and error codes.
func responses(t *testing.T, c net.Conn, r *bufio.Reader, n int, d time.Duration) ([]int32, []int16) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(d))
	var ids []int32
	var codes []int16
	for i := 0; i < n; i++ {
		f, err := ReadFrame(r, nil)
		if err != nil {
			t.Fatalf("response %d of %d: %v (got %v)", i+1, n, err, ids)
		}
		ids = append(ids, int32(binary.BigEndian.Uint32(f[4:])))
		codes = append(codes, errorCodeOf(f))
	}
	return ids, codes
}

// errorCodeOf reads (corr, [tags], throttle, error) of the fake broker's or a synthesized response.
func errorCodeOf(f []byte) int16 {
	if len(f) == 4+4+4+2 {
		return int16(binary.BigEndian.Uint16(f[12:]))
	}
	return int16(binary.BigEndian.Uint16(f[13:])) // header v1: one byte of tags
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestPassThroughKeepsOrder(t *testing.T) {
	b := newFakeBroker(t)
	_, addr, logs := startProxy(t, b)
	c, r := dial(t, addr)
	for i := int32(1); i <= 50; i++ {
		_, _ = c.Write(metadata(i))
	}
	ids, _ := responses(t, c, r, 50, 5*time.Second)
	for i, id := range ids {
		if id != int32(i+1) {
			t.Fatalf("responses out of order: %v", ids)
		}
	}
	if len(logs.events("match")) != 0 {
		t.Fatal("no rule, no event")
	}
}

func TestHoldForTimeoutIsHeadOfLineOnItsConnectionOnly(t *testing.T) {
	b := newFakeBroker(t)
	p, addr, logs := startProxy(t, b)
	if _, err := p.Rules.Add(RuleSpec{APIs: []string{"EndTxn"}, Action: ActHold, HoldMs: 300}); err != nil {
		t.Fatal(err)
	}
	c, r := dial(t, addr)
	start := time.Now()
	_, _ = c.Write(endTxn(1, 1, true))
	_, _ = c.Write(metadata(2)) // behind the held EndTxn on the same connection
	other, or := dial(t, addr)
	_, _ = other.Write(metadata(3)) // another connection flows
	if ids, _ := responses(t, other, or, 1, time.Second); ids[0] != 3 || time.Since(start) > 200*time.Millisecond {
		t.Fatalf("another connection waited: %v after %v", ids, time.Since(start))
	}
	ids, _ := responses(t, c, r, 2, 3*time.Second)
	if ids[0] != 1 || ids[1] != 2 {
		t.Fatalf("order %v", ids)
	}
	at1, _ := b.when(1)
	at2, _ := b.when(2)
	if at1.Sub(start) < 280*time.Millisecond || at2.Before(at1) {
		t.Fatalf("EndTxn reached the broker after %v, Metadata at %v", at1.Sub(start), at2.Sub(start))
	}
	if d := logs.events("deliver"); len(d) != 1 || d[0]["client_gone"] != false || d[0]["api"] != "EndTxn" {
		t.Fatalf("deliver events %v", d)
	}
}

func TestHoldUntilClientGoneDeliversAfterTheClientClosed(t *testing.T) {
	b := newFakeBroker(t)
	p, addr, logs := startProxy(t, b)
	if _, err := p.Rules.Add(RuleSpec{APIs: []string{"EndTxn"}, Action: ActHold, Until: UntilClientGone, HoldMs: 100}); err != nil {
		t.Fatal(err)
	}
	c, _ := dial(t, addr)
	_, _ = c.Write(endTxn(3, 11, true))
	waitFor(t, "the match", func() bool { return len(logs.events("match")) == 1 })
	time.Sleep(200 * time.Millisecond) // longer than hold_ms: the client is still there, so it waits
	if _, ok := b.when(11); ok {
		t.Fatal("delivered while the client was still connected")
	}
	closed := time.Now()
	_ = c.Close()
	waitFor(t, "late delivery", func() bool { _, ok := b.when(11); return ok })
	at, _ := b.when(11)
	if at.Sub(closed) < 90*time.Millisecond {
		t.Fatalf("delivered %v after the close, want >= 100ms", at.Sub(closed))
	}
	waitFor(t, "the broker's response to be read", func() bool { return len(logs.events("response")) == 1 })
	ev := logs.events("deliver")[0]
	if ev["client_gone"] != true || ev["details"].(map[string]any)["committed"] != true {
		t.Fatalf("deliver event %v", ev)
	}
	if resp := logs.events("response")[0]; resp["to_client"] != false || resp["error"] != "NONE" {
		t.Fatalf("response event %v", resp)
	}
}

func TestResetReleasesEverythingHeld(t *testing.T) {
	b := newFakeBroker(t)
	p, addr, _ := startProxy(t, b)
	_, _ = p.Rules.Add(RuleSpec{APIs: []string{"EndTxn"}, Action: ActHold, Until: UntilClientGone})
	c, r := dial(t, addr)
	_, _ = c.Write(endTxn(1, 1, true))
	waitFor(t, "the hold", func() bool { _, held := p.Rules.Snapshot(); return held == 1 })
	if n, held := p.Rules.Reset(); n != 1 || held != 1 {
		t.Fatalf("reset: %d rules, %d held", n, held)
	}
	if ids, _ := responses(t, c, r, 1, 2*time.Second); ids[0] != 1 {
		t.Fatal(ids)
	}
	if rules, held := p.Rules.Snapshot(); len(rules) != 0 || held != 0 {
		t.Fatalf("after reset: %v rules, %d held", rules, held)
	}
}

func TestDropResponseSilencesTheConnection(t *testing.T) {
	b := newFakeBroker(t)
	p, addr, logs := startProxy(t, b)
	_, _ = p.Rules.Add(RuleSpec{APIs: []string{"EndTxn"}, Action: ActDropResponse, Count: 1})
	c, r := dial(t, addr)
	_, _ = c.Write(metadata(1))
	_, _ = c.Write(endTxn(1, 2, true))
	_, _ = c.Write(metadata(3))
	if ids, _ := responses(t, c, r, 1, time.Second); ids[0] != 1 {
		t.Fatal(ids)
	}
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := ReadFrame(r, nil); err == nil {
		t.Fatal("a response after the dropped one reached the client")
	}
	waitFor(t, "both drops logged", func() bool { return len(logs.events("drop-response")) == 2 })
	if _, ok := b.when(2); !ok {
		t.Fatal("the request itself must reach the broker")
	}
	other, or := dial(t, addr) // a new connection works (count 1 is used up)
	_, _ = other.Write(endTxn(1, 4, true))
	if ids, _ := responses(t, other, or, 1, time.Second); ids[0] != 4 {
		t.Fatal(ids)
	}
}

func TestErrorIsAnsweredInOrderAfterEarlierResponses(t *testing.T) {
	b := newFakeBroker(t)
	b.delay = func(h Header) time.Duration {
		if h.CorrelationID == 1 {
			return 200 * time.Millisecond
		}
		return 0
	}
	p, addr, logs := startProxy(t, b)
	_, _ = p.Rules.Add(RuleSpec{APIs: []string{"EndTxn"}, Action: ActError, Error: "CONCURRENT_TRANSACTIONS"})
	c, r := dial(t, addr)
	_, _ = c.Write(metadata(1))        // slow at the broker
	_, _ = c.Write(endTxn(3, 2, true)) // answered by the proxy, but only after 1
	_, _ = c.Write(metadata(3))
	ids, codes := responses(t, c, r, 3, 2*time.Second)
	if ids[0] != 1 || ids[1] != 2 || ids[2] != 3 || codes[1] != 51 || codes[0] != 0 {
		t.Fatalf("ids %v codes %v", ids, codes)
	}
	if _, ok := b.when(2); ok {
		t.Fatal("an answered request must not reach the broker")
	}
	if ev := logs.events("match")[0]; ev["error"] != "CONCURRENT_TRANSACTIONS" {
		t.Fatal(ev)
	}
}

func TestAPI(t *testing.T) {
	b := newFakeBroker(t)
	p, _, _ := startProxy(t, b)
	srv := httptestServer(t, p)
	code, body := call(t, "POST", srv+"/rules", `{"apis": ["Metadata"], "action": "error", "error": "NOT_COORDINATOR"}`)
	if code != 400 || !strings.Contains(body, "cannot synthesize a Metadata response") {
		t.Fatalf("%d %s", code, body)
	}
	code, body = call(t, "POST", srv+"/rules", `{"apis": ["EndTxn"], "action": "hold", "hold_ms": 5, "colour": 1}`)
	if code != 400 || !strings.Contains(body, "colour") {
		t.Fatalf("unknown field: %d %s", code, body)
	}
	code, body = call(t, "POST", srv+"/rules", `{"apis": ["EndTxn"], "action": "hold", "hold_ms": 5}`)
	if code != 201 || !strings.Contains(body, `"id":1`) {
		t.Fatalf("%d %s", code, body)
	}
	if code, body = call(t, "GET", srv+"/stats", ""); code != 200 || !strings.Contains(body, `"client-to-n1"`) {
		t.Fatalf("%d %s", code, body)
	}
	if code, _ = call(t, "DELETE", srv+"/rules/1", ""); code != 200 {
		t.Fatal(code)
	}
	if code, _ = call(t, "DELETE", srv+"/rules/1", ""); code != 404 {
		t.Fatal(code)
	}
	if code, body = call(t, "POST", srv+"/reset", ""); code != 200 || !strings.Contains(body, `"rules":0`) {
		t.Fatalf("%d %s", code, body)
	}
}
