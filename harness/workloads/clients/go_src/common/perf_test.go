package main

// The perf mode against a fake library: the transactions it makes, the lines it prints (in the
// form harness/bench/window.py reads: its PERIODIC pattern, copied), its bad input and failures.
// These tests run in a module of common/ and one client's files (tests/unit/test_go_perf.py).

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// periodic is harness/bench/window.py's PERIODIC.
var periodic = regexp.MustCompile(`^(\d+) records sent, ([\d.]+) records/sec \([\d.]+ MB/sec\), ([\d.]+) ms avg latency, ` +
	`([\d.]+) ms max latency\.$`)

type fakeLib struct {
	conf     config
	producer *fakeProducer
}

func (l *fakeLib) hello() map[string]any { return map[string]any{"client": "fake", "version": "0.0.1"} }
func (l *fakeLib) openProducer(c config, group consumer) (producer, error) {
	l.conf = c
	return l.producer, nil
}
func (l *fakeLib) openConsumer(config, []topicPartition, []string) (consumer, error) {
	return nil, errors.New("no consumers")
}
func (l *fakeLib) facts(err error, op string, p producer) Facts {
	return Facts{Name: "FAKE_ERROR", Message: err.Error() + " during " + op}
}
func (l *fakeLib) example(map[string]any) (error, error) { return nil, errors.New("no examples") }

// fakeProducer acknowledges every record at once, from another goroutine (as the clients do).
type fakeProducer struct {
	mu                       sync.Mutex
	inits, begins, commits   int
	open                     int // records of the open transaction
	perTxn                   []int
	parts                    map[int32]int
	sizes                    map[int]int
	values                   map[string]bool
	failSend, failCommit     error
	hangInit, closed, copied bool
}

func newFake() *fakeProducer {
	return &fakeProducer{parts: map[int32]int{}, sizes: map[int]int{}, values: map[string]bool{}}
}

func (p *fakeProducer) initTxn(ctx context.Context) error {
	p.inits++
	if p.hangInit {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}
func (p *fakeProducer) begin() error { p.begins++; p.open = 0; return nil }
func (p *fakeProducer) send(r record, done func(int64, error)) error {
	p.mu.Lock()
	p.open++
	p.parts[r.partition]++
	p.sizes[len(r.value)]++
	if p.values[string(r.value)] {
		p.copied = true
	}
	p.values[string(r.value)] = true
	err := p.failSend
	p.mu.Unlock()
	go done(7, err)
	return nil
}
func (p *fakeProducer) sendOffsets(context.Context, []offset, consumer, int) error { return nil }
func (p *fakeProducer) commit(context.Context) error {
	if p.failCommit != nil {
		return p.failCommit
	}
	p.commits++
	p.perTxn = append(p.perTxn, p.open)
	return nil
}
func (p *fakeProducer) abort(context.Context) error { return nil }
func (p *fakeProducer) close()                      { p.closed = true }

var spec = perfSpec{conf: config{"linger.ms": "5"}, topic: "t", partitions: 6, perTxn: 50, size: 100,
	seconds: 300 * time.Millisecond, interval: 50 * time.Millisecond, timeout: time.Second}

func TestEveryTransactionHoldsExactlyItsRecordsAndTheLinesReadAsProducerPerformances(t *testing.T) {
	lib := &fakeLib{producer: newFake()}
	var out bytes.Buffer
	if err := runPerf(lib, spec, &out, time.Now); err != nil {
		t.Fatal(err)
	}
	p := lib.producer
	if p.inits != 1 || p.commits < 2 || p.begins != p.commits || !p.closed {
		t.Fatalf("inits %d, begins %d, commits %d, closed %v", p.inits, p.begins, p.commits, p.closed)
	}
	for i, n := range p.perTxn {
		if n != spec.perTxn {
			t.Fatalf("transaction %d held %d records, not %d", i, n, spec.perTxn)
		}
	}
	if len(p.parts) != spec.partitions || p.sizes[spec.size] != p.commits*spec.perTxn || len(p.sizes) != 1 || p.copied {
		t.Fatalf("partitions %v, value sizes %v, a value sent twice: %v", p.parts, p.sizes, p.copied)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	periodicRecords := 0
	for _, line := range lines[1 : len(lines)-1] {
		m := periodic.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("not a periodic line: %q", line)
		}
		n, _ := strconv.Atoi(m[1])
		if n == 0 || n%spec.perTxn != 0 {
			t.Fatalf("a line counts %d records: whole transactions only, never none: %q", n, line)
		}
		periodicRecords += n
	}
	last := lines[len(lines)-1]
	if periodic.MatchString(last) || !strings.HasSuffix(last, ", "+strconv.Itoa(p.commits)+" transactions committed.") {
		t.Fatalf("the total line must not read as a periodic one, and count the commits: %q", last)
	}
	if !strings.HasPrefix(last, strconv.Itoa(p.commits*spec.perTxn)+" records sent") || periodicRecords > p.commits*spec.perTxn {
		t.Fatalf("total %q against %d periodic records", last, periodicRecords)
	}
	if !strings.HasPrefix(lines[0], "fake 0.0.1 perf: transactions of 50 records of 100 bytes to t (6 partitions)") {
		t.Fatalf("first line %q", lines[0])
	}
	if lib.conf["linger.ms"] != "5" {
		t.Fatalf("the settings did not reach the library as given: %v", lib.conf)
	}
}

// clock is a test's clock: every reading moves it on by step.
type clock struct {
	at   time.Time
	step time.Duration
}

func (c *clock) now() time.Time { c.at = c.at.Add(c.step); return c.at }

func TestALineIsPrintedOnceItsIntervalPassedAndItsElapsedTimeIsItsOwn(t *testing.T) {
	var out bytes.Buffer
	t0 := time.Unix(1000, 0)
	w := &perfWindow{out: &out, interval: time.Second, size: 100, start: t0, from: t0}
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	w.committed(ms(300), 500, 500*time.Millisecond, 3*time.Millisecond)
	w.committed(ms(700), 500, 1500*time.Millisecond, 7*time.Millisecond)
	if out.Len() != 0 {
		t.Fatalf("a line before its interval passed: %q", out.String())
	}
	w.committed(ms(1250), 500, 1000*time.Millisecond, 2*time.Millisecond) // the line: 1500 records over 1.25 s
	w.committed(ms(1500), 500, 0, 0)
	w.total(ms(1600))
	want := "1500 records sent, 1200.0 records/sec (0.11 MB/sec), 2.0 ms avg latency, 7.0 ms max latency.\n" +
		"2000 records sent, 1250.0 records/sec (0.12 MB/sec), 1.5 ms avg latency, 7.0 ms max latency, 4 transactions committed.\n"
	if out.String() != want {
		t.Fatalf("got\n%swant\n%s", out.String(), want)
	}
}

func TestTheRunLastsItsSecondsFromTheEndOfInit(t *testing.T) {
	lib := &fakeLib{producer: newFake()}
	c := &clock{at: time.Unix(0, 0), step: 10 * time.Millisecond}
	var out bytes.Buffer
	s := spec
	s.perTxn, s.seconds = 1, time.Second
	if err := runPerf(lib, s, &out, c.now); err != nil {
		t.Fatal(err)
	}
	// each transaction reads the clock 3 times (loop, send, ack) and the commit once: 40 ms each
	if got := lib.producer.commits; got != 25 {
		t.Fatalf("%d transactions in 1 s of 40 ms each", got)
	}
}

func TestBadInputExits2NamingTheFlagAndWhatItAllows(t *testing.T) {
	good := []string{"--config", `{"bootstrap.servers": "b:1", "linger.ms": 5}`, "--topic", "t", "--partitions", "6",
		"--records-per-txn", "500", "--record-size", "100"}
	s, err := parsePerf(good)
	if err != nil || s.conf["linger.ms"] != "5" || s.seconds != 60*time.Second || s.interval != time.Second || s.perTxn != 500 {
		t.Fatalf("%+v %v", s, err)
	}
	for _, c := range []struct {
		args []string
		says string
	}{
		{append(good, "--records-per-txn", "0"), "--records-per-txn: at least 1"},
		{append(good, "--record-size", "-5"), "--record-size: at least 1 byte"},
		{append(good, "--seconds", "NaN"), "--seconds: more than 0"},
		{append(good, "--partitions", "x"), `invalid value "x" for flag -partitions`},
		{append(good, "--config", "[1]"), `--config "[1]": not a JSON object of client settings`},
		{append(good, "--linger", "5"), "flag provided but not defined: -linger"},
		{append(good, "extra"), `unexpected argument "extra"`},
		{good[2:], "--config: a JSON object of client settings"},
	} {
		var stdout, stderr bytes.Buffer
		code := perfMain(&fakeLib{producer: newFake()}, c.args, &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), c.says) || !strings.Contains(stderr.String(), perfUsage) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, stderr.String(), c.says)
		}
	}
}

func TestAFailureEndsTheRunWithExit1NamingTheCallAndTheError(t *testing.T) {
	args := []string{"--config", "{}", "--topic", "t", "--partitions", "1", "--records-per-txn", "3", "--record-size", "10"}
	failing := newFake()
	failing.failSend = errors.New("record refused")
	var stdout, stderr bytes.Buffer
	if code := perfMain(&fakeLib{producer: failing}, args, &stdout, &stderr); code != 1 ||
		stderr.String() != "perf: flush failed: FAKE_ERROR: record refused during producer.flush (0 transactions committed before it)\n" {
		t.Fatalf("exit %d: %q", code, stderr.String())
	}
	failing = newFake()
	failing.failCommit = errors.New("fenced")
	stderr.Reset()
	if code := perfMain(&fakeLib{producer: failing}, args, &stdout, &stderr); code != 1 ||
		stderr.String() != "perf: commit failed: FAKE_ERROR: fenced during producer.commit (0 transactions committed before it)\n" {
		t.Fatalf("exit %d: %q", code, stderr.String())
	}
}

func TestEveryWaitHasItsDeadlineAndSaysWhatItWaitedFor(t *testing.T) {
	hanging := newFake()
	hanging.hangInit = true
	s := spec
	s.timeout = 20 * time.Millisecond
	err := runPerf(&fakeLib{producer: hanging}, s, &bytes.Buffer{}, time.Now)
	if err == nil || err.Error() != "init did not complete within 20ms (0 transactions committed before it)" {
		t.Fatalf("%v", err)
	}
	if err := within(s.timeout, func(context.Context) error { select {} }); err == nil || err.Error() != "did not complete within 20ms" {
		t.Fatalf("a call that ignores its context: %v", err)
	}
	acks := &txnAcks{}
	acks.wg.Add(3)
	acks.done(7*time.Millisecond, nil)
	acks.done(3*time.Millisecond, errors.New("refused"))
	if err := acks.wait(s.timeout); err == nil || err.Error() != "did not complete within 20ms" {
		t.Fatalf("two acknowledgements of three: %v", err)
	}
	acks.done(2*time.Millisecond, errors.New("later"))
	if err := acks.wait(s.timeout); err == nil || err.Error() != "refused" || acks.sum != 12*time.Millisecond ||
		acks.max != 7*time.Millisecond {
		t.Fatalf("all three: %v, latency sum %s, max %s", err, acks.sum, acks.max)
	}
}
