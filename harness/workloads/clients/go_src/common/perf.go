// The perf mode: the client's own throughput at the shape `eos-chaos bench producer` measures,
// without the bridge's JSON-lines protocol and Python in the loop, so that what the bridge (and the
// workload behind it) costs per record can be stated (harness/bench/producer.py; docs/CLIENTS.md,
// "The perf mode").
//
//	<bridge> perf --config JSON --topic T --partitions P --records-per-txn N --record-size S
//	              [--seconds T] [--reporting-interval MS]
//
// It opens the producer the bridge would open, with the settings producer.open would get (--config:
// the same object, read by the same code), and makes the calls a workload's transaction makes:
// begin, send N records of S bytes to random partitions, wait for every acknowledgement (the
// workload's flush), commit; again until --seconds have passed. Every failure ends it (exit 1).
// It prints Kafka's ProducerPerformance's periodic line (harness/bench/window.py reads it): a
// transaction's records count when its commit completes, as the workload's figure counts them.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"sync"
	"time"
)

const perfUsage = "usage: perf --config JSON --topic TOPIC --partitions P --records-per-txn N --record-size BYTES " +
	"[--seconds S] [--reporting-interval MS]"

// perfSpec is what one perf run writes, and for how long.
type perfSpec struct {
	conf       config
	topic      string
	partitions int
	perTxn     int
	size       int
	seconds    time.Duration
	interval   time.Duration
	timeout    time.Duration // a call or a transaction's acknowledgements, at most (the bridge's own)
}

// usageError is bad input of the perf mode (exit 2): it names the flag and what the flag allows.
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

func perfMain(lib library, args []string, stdout, stderr io.Writer) int {
	s, err := parsePerf(args)
	if err == nil {
		err = runPerf(lib, s, stdout, time.Now)
	}
	var u usageError
	switch {
	case errors.As(err, &u):
		fmt.Fprintf(stderr, "perf: %s\n%s\n", err, perfUsage)
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "perf: %s\n", err)
		return 1
	}
	return 0
}

func parsePerf(args []string) (perfSpec, error) {
	fs := flag.NewFlagSet("perf", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	conf := fs.String("config", "", "")
	topic := fs.String("topic", "", "")
	partitions := fs.Int("partitions", 0, "")
	perTxn := fs.Int("records-per-txn", 0, "")
	size := fs.Int("record-size", 0, "")
	seconds := fs.Float64("seconds", 60, "")
	interval := fs.Int("reporting-interval", 1000, "")
	if err := fs.Parse(args); err != nil {
		return perfSpec{}, usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return perfSpec{}, usageError{fmt.Sprintf("unexpected argument %q: every value goes with its flag", fs.Arg(0))}
	}
	for _, c := range []struct {
		name string
		bad  bool
		want string
	}{
		{"--config", *conf == "", "a JSON object of client settings, as producer.open gets them"},
		{"--topic", *topic == "", "the topic to write to"},
		{"--partitions", *partitions < 1, "at least 1 (the topic's partitions)"},
		{"--records-per-txn", *perTxn < 1, "at least 1"},
		{"--record-size", *size < 1, "at least 1 byte"},
		{"--seconds", !(*seconds > 0), "more than 0"},
		{"--reporting-interval", *interval < 1, "at least 1 ms"},
	} {
		if c.bad {
			return perfSpec{}, usageError{fmt.Sprintf("%s: %s", c.name, c.want)}
		}
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(*conf), &raw); err != nil || raw == nil {
		return perfSpec{}, usageError{fmt.Sprintf("--config %q: not a JSON object of client settings", *conf)}
	}
	return perfSpec{conf: settings(raw), topic: *topic, partitions: *partitions, perTxn: *perTxn, size: *size,
		seconds: time.Duration(*seconds * float64(time.Second)), interval: time.Duration(*interval) * time.Millisecond,
		timeout: ownTimeout}, nil
}

// runPerf is the loop; now is the clock (a test's own).
func runPerf(lib library, s perfSpec, out io.Writer, now func() time.Time) error {
	h := lib.hello()
	fmt.Fprintf(out, "%v %v perf: transactions of %d records of %d bytes to %s (%d partitions) for %s\n",
		h["client"], h["version"], s.perTxn, s.size, s.topic, s.partitions, s.seconds)
	w := &perfWindow{out: out, interval: s.interval, size: s.size}
	p, err := lib.openProducer(s.conf, nil)
	if err != nil {
		return w.failed(lib, "producer.open", err, nil)
	}
	defer p.close()
	failed := func(op string, err error) error { return w.failed(lib, op, err, p) }
	if err := within(s.timeout, p.initTxn); err != nil {
		return failed("producer.init", err)
	}
	// the clock starts after init, as ProducerPerformance's does after initTransactions
	w.start = now()
	w.from = w.start
	for k := 0; now().Sub(w.start) < s.seconds; {
		if err := p.begin(); err != nil {
			return failed("producer.begin", err)
		}
		acks := &txnAcks{}
		acks.wg.Add(s.perTxn)
		for i := 0; i < s.perTxn; i++ {
			r := record{topicPartition: topicPartition{s.topic, int32(rand.Intn(s.partitions))}, value: perfValue(k, s.size)}
			k++
			sent := now()
			if err := p.send(r, func(_ int64, err error) { acks.done(now().Sub(sent), err) }); err != nil {
				return failed("producer.send", err)
			}
		}
		if err := acks.wait(s.timeout); err != nil {
			return failed("producer.flush", err)
		}
		if err := within(s.timeout, p.commit); err != nil {
			return failed("producer.commit", err)
		}
		w.committed(now(), s.perTxn, acks.sum, acks.max)
	}
	w.total(now())
	return nil
}

// perfValue is the k-th value, padded with dots to size bytes, as the txn-producer pads its own
// (harness/workloads/txn_producer.py): unique in the run, never shorter than asked.
func perfValue(k, size int) []byte {
	v := fmt.Appendf(make([]byte, 0, size), "perf-%d", k)
	for len(v) < size {
		v = append(v, '.')
	}
	return v
}

// txnAcks collects one transaction's acknowledgements: the first error, and the latencies.
type txnAcks struct {
	wg       sync.WaitGroup
	mu       sync.Mutex
	err      error
	sum, max time.Duration
}

func (a *txnAcks) done(took time.Duration, err error) {
	a.mu.Lock()
	if err != nil && a.err == nil {
		a.err = err
	}
	a.sum += took
	a.max = max(a.max, took)
	a.mu.Unlock()
	a.wg.Done()
}

// wait is the workload's flush: every record acknowledged, within timeout.
func (a *txnAcks) wait(timeout time.Duration) error {
	all := make(chan struct{})
	go func() { a.wg.Wait(); close(all) }()
	select {
	case <-all:
	case <-time.After(timeout):
		return waited{timeout}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

// waited: a call, or a transaction's acknowledgements, did not come within the timeout.
type waited struct{ after time.Duration }

func (w waited) Error() string { return fmt.Sprintf("did not complete within %s", w.after) }

// within runs a blocking call for at most timeout; sarama's calls take no context, so the wait
// is bounded here, not by the call (the process ends on the error anyway).
func within(timeout time.Duration, fn func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	select {
	case err := <-done:
		if errors.Is(err, context.DeadlineExceeded) {
			return waited{timeout}
		}
		return err
	case <-ctx.Done():
		return waited{timeout}
	}
}

// failed names the call, the error as the bridge would report it (its facts), and how far the run got.
func (w *perfWindow) failed(lib library, op string, err error, p producer) error {
	var wt waited
	what := ""
	if errors.As(err, &wt) {
		what = fmt.Sprintf("%s %s", opName(op), err)
	} else {
		f := lib.facts(err, op, p)
		what = fmt.Sprintf("%s failed: %s: %s", opName(op), f.Name, f.Message)
	}
	return fmt.Errorf("%s (%d transactions committed before it)", what, w.allTxns)
}

// perfWindow prints ProducerPerformance's periodic line (its Stats.printWindow) for the records of
// the transactions committed since the last line, once the line's interval has passed: a line is
// never empty, and the lines' own elapsed times add up to the time from the start to the last
// line, which is how harness/bench/window.py places them.
type perfWindow struct {
	out                 io.Writer
	interval            time.Duration
	size                int
	start, from         time.Time
	records, txns       int
	sum, max            time.Duration // latency, send to acknowledgement, of the window's records
	allRecords, allTxns int
	allSum, allMax      time.Duration
}

func (w *perfWindow) committed(at time.Time, records int, sum, top time.Duration) {
	w.records, w.txns, w.sum, w.max = w.records+records, w.txns+1, w.sum+sum, max(w.max, top)
	w.allRecords, w.allTxns, w.allSum, w.allMax = w.allRecords+records, w.allTxns+1, w.allSum+sum, max(w.allMax, top)
	if elapsed := at.Sub(w.from); elapsed >= w.interval {
		fmt.Fprintln(w.out, w.line(w.records, elapsed, w.sum, w.max)+".")
		w.from, w.records, w.txns, w.sum, w.max = at, 0, 0, 0, 0
	}
}

// total is the whole run's line: it goes on after "max latency", so it is not read as a periodic one.
func (w *perfWindow) total(at time.Time) {
	fmt.Fprintf(w.out, "%s, %d transactions committed.\n", w.line(w.allRecords, at.Sub(w.start), w.allSum, w.allMax), w.allTxns)
}

func (w *perfWindow) line(records int, elapsed, sum, top time.Duration) string {
	secs, ms := elapsed.Seconds(), func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	rate, avg := 0.0, 0.0
	if secs > 0 {
		rate = float64(records) / secs
	}
	if records > 0 {
		avg = ms(sum) / float64(records)
	}
	return fmt.Sprintf("%d records sent, %.1f records/sec (%.2f MB/sec), %.1f ms avg latency, %.1f ms max latency",
		records, rate, rate*float64(w.size)/1024/1024, avg, ms(top))
}
