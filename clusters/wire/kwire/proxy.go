// The proxy: one listener per link, two TCP connections per client connection (client side and
// broker side), requests forwarded in order and responses returned in order.
//
// Per connection three goroutines share two ordered queues:
//
//	reader    client -> frames; decides each request's action; queues it to `toUp` (if it goes to
//	          the broker) and to `pending` (if the client is owed a response)
//	writer    `toUp` -> broker, in order; a held request blocks the ones behind it (head-of-line,
//	          as on one slow TCP path)
//	sequencer `pending` -> client, in order: a forwarded request's response is read from the broker
//	          (correlation ids must match), a synthesized one is written as it comes up, a dropped
//	          one is read and discarded (and so is every later one on that connection)
//
// When the client closes, the reader closes both queues; the writer still delivers what it holds,
// and the sequencer reads (and discards) the responses owed, then closes the broker side. That late
// delivery after the client gave up is what KAFKA-17754 needs.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// drainTimeout bounds how long the broker side stays open for responses nobody will read, once
// every request of a closed client connection was delivered.
const drainTimeout = 30 * time.Second

// queueDepth bounds requests in flight per connection (clients keep a handful).
const queueDepth = 1024

// Events writes the event log: one JSON object per line.
type Events struct {
	mu sync.Mutex
	w  io.Writer
}

func (e *Events) Write(ev map[string]any) {
	now := time.Now()
	ev["time"] = now.UTC().Format(time.RFC3339Nano)
	ev["unix_us"] = now.UnixMicro()
	b, err := json.Marshal(ev)
	if err != nil {
		log.Printf("event not logged: %v", err)
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_, _ = e.w.Write(append(b, '\n'))
	if f, ok := e.w.(*os.File); ok {
		_ = f.Sync()
	}
}

// LinkStats are one link's counters.
type LinkStats struct {
	Listen      string `json:"listen"`
	Upstream    string `json:"upstream"`
	Connections int64  `json:"connections"`
	Open        int64  `json:"open"`
	Requests    int64  `json:"requests"`
	Matched     int64  `json:"matched"`
}

// Link is one proxied link.
type Link struct {
	Name     string
	Listen   string
	Upstream string
	stats    struct{ conns, open, reqs, matched atomic.Int64 }
}

func (l *Link) Stats() LinkStats {
	return LinkStats{l.Listen, l.Upstream, l.stats.conns.Load(), l.stats.open.Load(), l.stats.reqs.Load(), l.stats.matched.Load()}
}

// Proxy serves every link.
type Proxy struct {
	Links  []*Link
	Rules  *Rules
	Events *Events
	// Rewrite: broker addresses in responses (rewrite.go); off while Rewrite.Advertise is nil
	Rewrite rewriteState
	connID  atomic.Int64
}

// Serve accepts on l's listener until it fails.
func (p *Proxy) Serve(l *Link, ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				log.Printf("%s: accept: %v", l.Name, err)
			}
			return
		}
		go p.handle(l, c)
	}
}

type request struct {
	h          Header
	frame      []byte
	rule       *Rule
	held       *heldReq
	arrived    time.Time
	synth      []byte
	noResponse bool
	details    Details
	// the body is decoded at most once: for a filtered rule's Match, or for apply
	decoded   bool
	filtered  bool // a filtered rule asked for the body
	topics    []partitions
	decodeErr error
}

// decode reads r's full header and body (details, acks, topics) once.
func (r *request) decode() {
	if r.decoded {
		return
	}
	r.decoded = true
	full, err := ParseHeader(r.frame, true)
	if err == nil {
		r.h = full
		r.details, r.noResponse, r.topics, err = requestBody(full, r.frame)
	}
	r.decodeErr = err
}

// filterDetails: the decoded body for a filtered rule's Match; nil when it does not decode.
func (r *request) filterDetails() Details {
	r.filtered = true
	r.decode()
	if r.decodeErr != nil {
		return nil
	}
	return r.details
}

type conn struct {
	p          *Proxy
	link       *Link
	id         int64
	client     net.Conn
	up         net.Conn
	toUp       chan *request
	pending    chan *request
	clientGone chan struct{}
	goneMu     sync.Mutex
	goneAt     time.Time
}

func (c *conn) gone() time.Time {
	c.goneMu.Lock()
	defer c.goneMu.Unlock()
	return c.goneAt
}

func (c *conn) isGone() bool {
	select {
	case <-c.clientGone:
		return true
	default:
		return false
	}
}

func (p *Proxy) handle(l *Link, client net.Conn) {
	up, err := net.DialTimeout("tcp", l.Upstream, 10*time.Second)
	if err != nil {
		log.Printf("%s: cannot reach %s: %v", l.Name, l.Upstream, err)
		_ = client.Close()
		return
	}
	for _, s := range []net.Conn{client, up} {
		if tc, ok := s.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
	}
	c := &conn{p: p, link: l, id: p.connID.Add(1), client: client, up: up,
		toUp: make(chan *request, queueDepth), pending: make(chan *request, queueDepth), clientGone: make(chan struct{})}
	l.stats.conns.Add(1)
	l.stats.open.Add(1)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); c.write() }()
	go func() { defer wg.Done(); c.sequence() }()
	c.read()
	wg.Wait()
	_ = up.Close()
	_ = client.Close()
	l.stats.open.Add(-1)
}

func (c *conn) event(r *request, what string, extra map[string]any) {
	ev := map[string]any{
		"event": what, "link": c.link.Name, "conn": c.id, "api": APIName(r.h.APIKey), "api_key": r.h.APIKey,
		"version": r.h.APIVersion, "correlation_id": r.h.CorrelationID, "client_gone": c.isGone(),
	}
	if r.h.ClientID != nil {
		ev["client_id"] = *r.h.ClientID
	}
	if r.rule != nil {
		ev["rule"] = r.rule.ID
		ev["action"] = r.rule.Spec.Action
	}
	if len(r.details) > 0 {
		ev["details"] = r.details
	}
	for k, v := range extra {
		ev[k] = v
	}
	c.p.Events.Write(ev)
}

// read: client -> queues. Ends when the client closes (or breaks the framing).
func (c *conn) read() {
	defer func() {
		c.goneMu.Lock()
		c.goneAt = time.Now()
		c.goneMu.Unlock()
		close(c.clientGone)
		close(c.toUp)
		close(c.pending)
	}()
	br := bufio.NewReaderSize(c.client, 64<<10)
	for {
		frame, err := ReadFrame(br, nil)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				log.Printf("%s conn %d: client side: %v", c.link.Name, c.id, err)
			}
			return
		}
		h, err := ParseHeader(frame, false)
		if err != nil {
			log.Printf("%s conn %d: %v; closing", c.link.Name, c.id, err)
			return
		}
		c.link.stats.reqs.Add(1)
		r := &request{h: h, frame: frame, arrived: time.Now()}
		if h.APIKey == apiProduce {
			// acks=0 has no response: the sequencer must not wait for one.
			r.decode()
		}
		rule := c.p.Rules.Match(c.link.Name, h.APIKey, r.filterDetails)
		if r.filtered && r.decodeErr != nil && rule == nil {
			// a filtered rule could not look at the body: say why the request passed
			c.event(r, "undecoded", map[string]any{"decode_error": r.decodeErr.Error()})
		}
		if rule != nil {
			c.link.stats.matched.Add(1)
			if !c.apply(r, rule) {
				return
			}
		}
		if r.synth != nil {
			c.pending <- r
			continue
		}
		if !r.noResponse {
			c.pending <- r
		}
		c.toUp <- r
	}
}

// apply decides what rule does with r (logging the match); false closes the connection (a request
// whose response cannot be synthesized: never happens for validated rules, but a broken body can).
func (c *conn) apply(r *request, rule *Rule) bool {
	r.rule = rule
	r.decode()
	err, topics := r.decodeErr, r.topics
	extra := map[string]any{}
	if err != nil {
		extra["decode_error"] = err.Error()
	}
	switch rule.Spec.Action {
	case ActHold:
		r.held = c.p.Rules.Hold(rule.ID)
		extra["hold_ms"] = rule.Spec.HoldMs
		extra["until"] = rule.Spec.Until
	case ActError:
		if err == nil {
			r.synth, err = Synthesize(r.h, topics, rule.errorCode)
		}
		if err != nil {
			// Forward it instead: better a request untouched than a connection broken by the proxy.
			extra["decode_error"] = err.Error()
			extra["forwarded"] = true
		} else {
			extra["error"] = ErrorName(rule.errorCode)
			extra["error_code"] = rule.errorCode
		}
	}
	c.event(r, "match", extra)
	return true
}

// write: toUp -> broker, in order, holding where a rule says so.
func (c *conn) write() {
	bw := bufio.NewWriterSize(c.up, 64<<10)
	broken := false
	for r := range c.toUp {
		if r.held != nil {
			waitHold(r.rule, r.held, r.arrived, c.clientGone, c.gone)
			c.p.Rules.Done(r.held)
		}
		if !broken {
			_, err := bw.Write(r.frame)
			if err == nil && len(c.toUp) == 0 {
				err = bw.Flush() // flush when nothing else is queued: one syscall for a burst
			}
			if err != nil {
				broken = true
				log.Printf("%s conn %d: broker side: %v", c.link.Name, c.id, err)
			}
		}
		if r.rule != nil && r.rule.Spec.Action == ActHold {
			what := "deliver"
			if broken {
				what = "undeliverable"
			}
			c.event(r, what, map[string]any{"held_ms": float64(time.Since(r.arrived).Microseconds()) / 1000})
		}
	}
	if !broken {
		_ = bw.Flush()
	}
	if broken {
		_ = c.up.Close() // the sequencer's read fails at once
	} else {
		// everything delivered: the responses still owed get drainTimeout to come back
		_ = c.up.SetReadDeadline(time.Now().Add(drainTimeout))
	}
}

// sequence: responses -> client, in request order.
func (c *conn) sequence() {
	br := bufio.NewReaderSize(c.up, 64<<10)
	var buf []byte
	dropping := false // after a dropped response, no later one on this connection can be delivered
	clientBroken := false
	send := func(b []byte) {
		if clientBroken || c.isGone() {
			return
		}
		if _, err := c.client.Write(b); err != nil {
			clientBroken = true
		}
	}
	for r := range c.pending {
		if r.synth != nil {
			if dropping {
				continue
			}
			send(r.synth)
			c.event(r, "respond", map[string]any{"synthesized": true})
			continue
		}
		frame, err := ReadFrame(br, buf)
		if err != nil {
			if !c.isGone() {
				log.Printf("%s conn %d: broker side closed: %v", c.link.Name, c.id, err)
			}
			_ = c.client.Close() // the client sees the broker's close
			c.discardRest(r)
			return
		}
		buf = frame
		if corr := int32(uint32(frame[4])<<24 | uint32(frame[5])<<16 | uint32(frame[6])<<8 | uint32(frame[7])); corr != r.h.CorrelationID {
			log.Printf("%s conn %d: response correlation id %d, expected %d (%s); closing", c.link.Name, c.id, corr, r.h.CorrelationID, APIName(r.h.APIKey))
			_ = c.client.Close()
			c.discardRest(r)
			return
		}
		if c.p.Rewrite.Advertise != nil {
			var ok bool
			if frame, ok = c.rewrite(r, frame); !ok {
				_ = c.client.Close()
				c.discardRest(r)
				return
			}
		}
		if r.rule != nil && r.rule.Spec.Action == ActDropResponse {
			dropping = true
			c.event(r, "drop-response", nil)
			continue
		}
		if dropping {
			c.event(r, "drop-response", map[string]any{"behind_dropped": true})
			continue
		}
		if r.rule != nil {
			// the broker's answer to a matched request: whether the client got it, and its error
			extra := map[string]any{"to_client": !c.isGone() && !clientBroken}
			if more, ok := responseDetails(r.h, frame); ok {
				for k, v := range more {
					extra[k] = v
				}
			}
			c.event(r, "response", extra)
		}
		send(frame)
	}
}

// discardRest empties pending after the broker side failed, logging matched requests never answered.
func (c *conn) discardRest(first *request) {
	for r := first; r != nil; {
		if r.rule != nil {
			c.event(r, "unanswered", nil)
		}
		next, ok := <-c.pending
		if !ok {
			return
		}
		r = next
	}
}
