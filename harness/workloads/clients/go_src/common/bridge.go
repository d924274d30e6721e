// The eos-chaos client bridge for a Go Kafka client, served over stdin/stdout: one JSON object per
// line each way, one request at a time ({"id", "op", arguments}), one answer per request ({"id",
// "ok"} or {"id", "error": facts}; {"bug"} for a failure of the bridge itself). It speaks the
// protocol of the Java bridge (harness/jvm/src/eoschaos/Bridge.java) so that the same Python
// workloads drive it (harness/workloads/clients/gobridge.py; docs/CLIENTS.md).
//
// This folder is the part every Go client shares: the protocol, handles, bulk sends with their
// offsets on flush, and the per-call timeouts. A client's own folder (../franz, ../sarama) adds one
// file that implements `library`; the build copies both into one package (clients/go_build.py).
//
// It lives exactly as long as its parent: at the end of stdin it exits at once, whatever call is in
// hand. Stdout carries the protocol only; the client's log, if any, goes to stderr. Run as
// `<bridge> perf ...` it is no bridge but the client's own producer loop (perf.go).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// ownTimeout bounds a blocking call that names no timeout of its own (the workloads always name one).
const ownTimeout = 30 * time.Second

// request is one line of stdin; which fields an op reads is the Java bridge's.
type request struct {
	ID        json.RawMessage `json:"id"`
	Op        string          `json:"op"`
	H         int             `json:"h"`
	Timeout   float64         `json:"timeout"`
	Config    map[string]any  `json:"config"`
	Records   [][]any         `json:"records"`
	Offsets   [][]any         `json:"offsets"`
	Group     int             `json:"group"`
	Token     int             `json:"token"`
	Max       int             `json:"max"`
	Assign    [][]any         `json:"assign"`
	Subscribe []string        `json:"subscribe"`
	Exception map[string]any  `json:"exception"`
}

// Facts are what the workloads' outcome rules read of a failed call (harness/workloads/client.py
// ErrorFacts); each library decides them from what it says itself (its facts function).
type Facts struct {
	Name             string `json:"name"`
	Message          string `json:"message"`
	Retriable        bool   `json:"retriable"`
	Fatal            bool   `json:"fatal"`
	TxnRequiresAbort bool   `json:"txn_requires_abort"`
	Fenced           bool   `json:"fenced"`
	TimedOut         bool   `json:"timed_out"`
	Exception        string `json:"exception"`
}

type topicPartition struct {
	topic     string
	partition int32
}

// record is one record to send: keys travel as Latin-1 text (any bytes), values as UTF-8.
type record struct {
	topicPartition
	key   []byte
	value []byte
}

// offset is a position: the next offset of a partition (send_offsets, positions).
type offset struct {
	topicPartition
	offset int64
}

// received is one record a consumer got: [topic, partition, offset, value] on the wire.
type received struct {
	topicPartition
	offset int64
	value  []byte
}

// FeederIDHeader is the header of an app feeder's record id (harness/history/model.py FEEDER_ID_HEADER):
// the record's value in the history, since its payload may repeat.
const FeederIDHeader = "eos-chaos-id"

// valueOrID is a consumed record's value as the history records it: its feeder id header when it has one.
func valueOrID(value []byte, header func(string) ([]byte, bool)) []byte {
	if id, ok := header(FeederIDHeader); ok {
		return id
	}
	return value
}

// config is a request's client settings, by their Java names (values as text, as a properties file
// has them); a library takes the ones it knows and refuses the rest, naming what it knows.
type config map[string]string

func (c config) take(key string) (string, bool) {
	v, ok := c[key]
	delete(c, key)
	return v, ok
}

// unknown is nil once every setting was taken; otherwise it names the rest and the known ones.
func (c config) unknown(lib string, known []string) error {
	if len(c) == 0 {
		return nil
	}
	rest := make([]string, 0, len(c))
	for k := range c {
		rest = append(rest, k)
	}
	return fmt.Errorf("%s: unknown client settings %s; known: %s", lib, strings.Join(rest, ", "), strings.Join(known, ", "))
}

// library is what a client's own file provides.
type library interface {
	// hello names the client and its version (read from the build, not assumed).
	hello() map[string]any
	// openProducer makes a transactional producer; group is the group consumer this producer
	// commits offsets for, if the Python side paired one (nil otherwise).
	openProducer(conf config, group consumer) (producer, error)
	// openConsumer makes a read_committed consumer: assign mode from offset 0, or subscribe mode in a group.
	openConsumer(conf config, assign []topicPartition, subscribe []string) (consumer, error)
	// facts maps an error of call op (e.g. "producer.commit") to facts; p is the producer, if any.
	facts(err error, op string, p producer) Facts
	// example builds an error of the library from a spec (the unit tests' "facts" op).
	example(spec map[string]any) (error, error)
}

// producer is one transactional producer. Blocking calls get a context that is cancelled only when
// the producer is closed: cancelling a transactional call half-way leaves a client in an unknown
// state, so the workload's timeout is kept by not waiting for the call (see bridge.blocking).
type producer interface {
	initTxn(ctx context.Context) error
	begin() error
	// send hands one record over without waiting; done is called once with its offset or error.
	send(r record, done func(int64, error)) error
	sendOffsets(ctx context.Context, offsets []offset, group consumer, token int) error
	commit(ctx context.Context) error
	abort(ctx context.Context) error
	close()
}

// consumer is one read_committed consumer.
type consumer interface {
	poll(ctx context.Context, max int) ([]received, error)
	positions(ctx context.Context) ([]offset, error)
	// groupMetadata snapshots the group generation; send_offsets names the snapshot by its token.
	groupMetadata() (int, error)
	rewind(ctx context.Context) error
	close()
}

// failure is a failed client call whose facts are known.
type failure struct{ facts Facts }

func (f failure) Error() string { return f.facts.Name + ": " + f.facts.Message }

// bug is a failure of the bridge or of its use, never a Kafka error: the workload stops on it.
type bug struct{ msg string }

func (b bug) Error() string { return b.msg }

// result is one record's fate, filled once by the library.
type result struct {
	done   chan struct{}
	offset int64
	err    error
}

// pendingCall is a blocking call still running after its caller's timeout.
type pendingCall struct {
	op   string
	done chan struct{}
	err  error
}

type openProducer struct {
	p       producer
	ctx     context.Context
	cancel  context.CancelFunc
	records []*result // sent since the last flush, in send order
	pending *pendingCall
}

type bridge struct {
	lib       library
	out       *bufio.Writer
	producers map[int]*openProducer
	consumers map[int]consumer
	next      int
	started   time.Time
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "perf" { // the client's own throughput, no protocol (perf.go)
		os.Exit(perfMain(newLibrary(), os.Args[2:], os.Stdout, os.Stderr))
	}
	b := &bridge{lib: newLibrary(), out: bufio.NewWriter(os.Stdout), producers: map[int]*openProducer{},
		consumers: map[int]consumer{}, next: 1, started: time.Now()}
	lines := make(chan []byte, 16)
	go readRequests(lines)
	for line := range lines {
		b.answer(line)
	}
}

// readRequests hands stdin's lines over until its end, then exits: the parent is gone (or closed
// the bridge on purpose) and nobody listens any more.
func readRequests(lines chan<- []byte) {
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			lines <- line
		}
		if err != nil {
			// without waiting for the call in hand: it has no one to answer
			os.Exit(0)
		}
	}
}

func (b *bridge) answer(line []byte) {
	ans := map[string]any{}
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		ans["bug"] = "unreadable request: " + err.Error()
		b.send(ans)
		return
	}
	ans["id"] = req.ID
	res, extra, err := b.handle(&req)
	var f failure
	var bg bug
	switch {
	case errors.As(err, &f):
		ans["error"] = f.facts
		for k, v := range extra {
			ans[k] = v
		}
	case errors.As(err, &bg):
		ans["bug"] = bg.msg
	case err != nil:
		ans["bug"] = fmt.Sprintf("%s: unmapped error %T: %v", req.Op, err, err)
	default:
		ans["ok"] = res
	}
	b.send(ans)
}

func (b *bridge) send(ans map[string]any) {
	line, err := json.Marshal(ans)
	if err != nil {
		line = []byte(`{"bug": "cannot serialise an answer"}`)
	}
	b.out.Write(append(line, '\n'))
	b.out.Flush()
}

// handle runs one request: its result, extra answer fields (a failed flush's offsets), its error.
func (b *bridge) handle(req *request) (any, map[string]any, error) {
	switch req.Op {
	case "hello":
		h := b.lib.hello()
		h["go"] = runtime.Version()
		h["uptime_ms"] = time.Since(b.started).Milliseconds()
		return h, nil, nil
	case "facts":
		e, err := b.lib.example(req.Exception)
		if err != nil {
			return nil, nil, bug{"facts: " + err.Error()}
		}
		op, _ := req.Exception["during"].(string)
		return b.lib.facts(e, op, nil), nil, nil
	case "producer.open":
		var group consumer
		if req.Group != 0 {
			if group = b.consumers[req.Group]; group == nil {
				return nil, nil, bug{fmt.Sprintf("producer.open: no consumer %d to pair with", req.Group)}
			}
		}
		p, err := b.lib.openProducer(settings(req.Config), group)
		if err != nil {
			return nil, nil, failure{b.lib.facts(err, req.Op, nil)}
		}
		ctx, cancel := context.WithCancel(context.Background())
		b.producers[b.next] = &openProducer{p: p, ctx: ctx, cancel: cancel}
		b.next++
		return b.next - 1, nil, nil
	case "consumer.open":
		assign, err := partitions(req.Assign)
		if err != nil {
			return nil, nil, bug{"consumer.open: " + err.Error()}
		}
		c, err := b.lib.openConsumer(settings(req.Config), assign, req.Subscribe)
		if err != nil {
			return nil, nil, failure{b.lib.facts(err, req.Op, nil)}
		}
		b.consumers[b.next] = c
		b.next++
		return b.next - 1, nil, nil
	case "close":
		if p := b.producers[req.H]; p != nil {
			p.cancel()
			p.p.close()
			delete(b.producers, req.H)
		}
		if c := b.consumers[req.H]; c != nil {
			c.close()
			delete(b.consumers, req.H)
		}
		return nil, nil, nil
	}
	if strings.HasPrefix(req.Op, "producer.") {
		p := b.producers[req.H]
		if p == nil {
			return nil, nil, bug{fmt.Sprintf("%s: no producer %d", req.Op, req.H)}
		}
		return b.producerCall(p, req)
	}
	if strings.HasPrefix(req.Op, "consumer.") {
		c := b.consumers[req.H]
		if c == nil {
			return nil, nil, bug{fmt.Sprintf("%s: no consumer %d", req.Op, req.H)}
		}
		res, err := b.consumerCall(c, req)
		return res, nil, b.mapped(err, req.Op, nil)
	}
	return nil, nil, bug{"unknown op " + req.Op}
}

func (b *bridge) producerCall(p *openProducer, req *request) (any, map[string]any, error) {
	switch req.Op {
	case "producer.init":
		return nil, nil, b.blocking(p, req, p.p.initTxn)
	case "producer.begin":
		p.records = nil // a new transaction: nothing of the last one is awaited any more
		return nil, nil, b.mapped(p.p.begin(), req.Op, p.p)
	case "producer.send":
		return nil, nil, b.mapped(b.sendAll(p, req.Records), req.Op, p.p)
	case "producer.flush":
		return b.flush(p, req)
	case "producer.send_offsets":
		offsets, err := positions(req.Offsets)
		if err != nil {
			return nil, nil, bug{"producer.send_offsets: " + err.Error()}
		}
		group := b.consumers[req.Group]
		if group == nil {
			return nil, nil, bug{fmt.Sprintf("producer.send_offsets: no consumer %d", req.Group)}
		}
		return nil, nil, b.blocking(p, req, func(ctx context.Context) error {
			return p.p.sendOffsets(ctx, offsets, group, req.Token)
		})
	case "producer.commit":
		return nil, nil, b.blocking(p, req, p.p.commit)
	case "producer.abort":
		return nil, nil, b.blocking(p, req, p.p.abort)
	}
	return nil, nil, bug{"unknown op " + req.Op}
}

func (b *bridge) consumerCall(c consumer, req *request) (any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), seconds(req.Timeout, ownTimeout))
	defer cancel()
	switch req.Op {
	case "consumer.poll":
		recs, err := c.poll(ctx, req.Max)
		rows := make([][]any, 0, len(recs))
		for _, r := range recs {
			rows = append(rows, []any{r.topic, r.partition, r.offset, string(r.value)})
		}
		return rows, err
	case "consumer.positions":
		pos, err := c.positions(ctx)
		rows := make([][]any, 0, len(pos))
		for _, o := range pos {
			rows = append(rows, []any{o.topic, o.partition, o.offset})
		}
		return rows, err
	case "consumer.group_metadata":
		return c.groupMetadata()
	case "consumer.rewind":
		return nil, c.rewind(ctx)
	}
	return nil, bug{"unknown op " + req.Op}
}

// mapped turns a library's error into a failure with its facts (a bug or a failure stays as it is).
func (b *bridge) mapped(err error, op string, p producer) error {
	var f failure
	var bg bug
	if err == nil || errors.As(err, &f) || errors.As(err, &bg) {
		return err
	}
	return failure{b.lib.facts(err, op, p)}
}

// blocking runs a transactional call, waiting at most the workload's timeout for it. A call that
// outlives it is left running and reported as timed out; calling the same op again waits for that
// same call (it resumes it, as Java and librdkafka resume a timed-out commit), and another op is
// refused while it runs (as both refuse an abort while a commit is in progress).
func (b *bridge) blocking(p *openProducer, req *request, fn func(context.Context) error) error {
	call := p.pending
	switch {
	case call == nil:
		call = &pendingCall{op: req.Op, done: make(chan struct{})}
		go func() {
			defer close(call.done)
			call.err = fn(p.ctx)
		}()
	case call.op != req.Op:
		return failure{Facts{Name: "CALL_PENDING", Exception: "gobridge.CallPending", Message: fmt.Sprintf(
			"cannot %s while %s, which timed out, is still running: call %s again to resume it",
			opName(req.Op), opName(call.op), opName(call.op))}}
	}
	wait := seconds(req.Timeout, ownTimeout)
	select {
	case <-call.done:
		p.pending = nil
		return b.mapped(call.err, req.Op, p.p)
	case <-time.After(wait):
		p.pending = call
		return failure{Facts{Name: "REQUEST_TIMED_OUT", Retriable: true, TimedOut: true, Exception: "gobridge.CallTimeout",
			Message: fmt.Sprintf("%s did not complete within %d ms (the workload's timeout for this call); it goes on "+
				"in the background, and calling it again resumes it", opName(req.Op), wait.Milliseconds())}}
	}
}

// sendAll hands records over; one the library refuses fails it and every later one of the batch,
// so that the results stay aligned with the records the Python side sent; its error is returned.
func (b *bridge) sendAll(p *openProducer, rows [][]any) error {
	var refused error
	for _, row := range rows {
		res := &result{done: make(chan struct{})}
		p.records = append(p.records, res)
		if refused == nil {
			var r record
			if r, refused = toRecord(row); refused != nil {
				refused = bug{"producer.send: " + refused.Error()}
			} else {
				refused = p.p.send(r, func(off int64, err error) {
					res.offset, res.err = off, err
					close(res.done)
				})
			}
		}
		if refused != nil {
			res.err = refused
			close(res.done)
		}
	}
	return refused
}

// flush sends records, then waits at most the timeout for every record sent since the last flush:
// their offsets in send order (nil: not acknowledged). The first failed record (or the timeout) is
// the call's error, and the offsets of the acknowledged ones go with it.
func (b *bridge) flush(p *openProducer, req *request) (any, map[string]any, error) {
	_ = b.sendAll(p, req.Records) // a refused record is one of the results below, in send order
	deadline := time.After(seconds(req.Timeout, ownTimeout))
	offsets := make([]any, len(p.records))
	var first error
	timedOut := false
	for i, res := range p.records {
		if !timedOut {
			select {
			case <-res.done:
			case <-deadline:
				timedOut = true
			}
		}
		select {
		case <-res.done:
			if res.err == nil {
				offsets[i] = res.offset
			} else if first == nil {
				first = b.mapped(res.err, req.Op, p.p)
			}
		default:
			if first == nil {
				first = failure{Facts{Name: "REQUEST_TIMED_OUT", Retriable: true, TimedOut: true, Exception: "gobridge.CallTimeout",
					Message: fmt.Sprintf("flush did not complete within %.0f ms (the workload's timeout for this call)", req.Timeout*1000)}}
			}
		}
	}
	p.records = nil
	if first != nil {
		return nil, map[string]any{"offsets": offsets}, first
	}
	return offsets, nil, nil
}

func opName(op string) string { return op[strings.IndexByte(op, '.')+1:] }

func seconds(s float64, otherwise time.Duration) time.Duration {
	if s <= 0 {
		return otherwise
	}
	return time.Duration(s * float64(time.Second))
}

// settings are a request's config as text, as the Java bridge reads them.
func settings(conf map[string]any) config {
	c := config{}
	for k, v := range conf {
		switch v := v.(type) {
		case string:
			c[k] = v
		case float64: // JSON numbers: 1000000, not 1e+06
			c[k] = strconv.FormatFloat(v, 'f', -1, 64)
		default:
			c[k] = fmt.Sprint(v)
		}
	}
	return c
}

func toRecord(row []any) (record, error) {
	if len(row) != 4 {
		return record{}, fmt.Errorf("a record is [topic, partition, key, value], not %v", row)
	}
	tp, err := toTopicPartition(row[:2])
	if err != nil {
		return record{}, err
	}
	value, _ := row[3].(string)
	r := record{topicPartition: tp, value: []byte(value)}
	if key, ok := row[2].(string); ok {
		r.key = make([]byte, 0, len(key))
		for _, c := range key { // Latin-1: one byte per character
			r.key = append(r.key, byte(c))
		}
	}
	return r, nil
}

func toTopicPartition(row []any) (topicPartition, error) {
	topic, ok := row[0].(string)
	part, ok2 := row[1].(float64)
	if !ok || !ok2 {
		return topicPartition{}, fmt.Errorf("not [topic, partition]: %v", row)
	}
	return topicPartition{topic, int32(part)}, nil
}

func partitions(rows [][]any) ([]topicPartition, error) {
	out := make([]topicPartition, 0, len(rows))
	for _, row := range rows {
		if len(row) != 2 {
			return nil, fmt.Errorf("not [topic, partition]: %v", row)
		}
		tp, err := toTopicPartition(row)
		if err != nil {
			return nil, err
		}
		out = append(out, tp)
	}
	return out, nil
}

func positions(rows [][]any) ([]offset, error) {
	out := make([]offset, 0, len(rows))
	for _, row := range rows {
		o, ok := row[len(row)-1].(float64)
		if len(row) != 3 || !ok {
			return nil, fmt.Errorf("not [topic, partition, offset]: %v", row)
		}
		tp, err := toTopicPartition(row[:2])
		if err != nil {
			return nil, err
		}
		out = append(out, offset{tp, int64(o)})
	}
	return out, nil
}

// moduleVersion is the version of module path this binary was built with ("" if unknown).
func moduleVersion(path string) string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path == path {
				return strings.TrimPrefix(d.Version, "v")
			}
		}
	}
	return ""
}
