// go-copier: an exactly-once consume-transform-produce service in Go, shipped with eos-chaos to be
// put under test as an `app` workload (docs/APPS.md). It reads --input in consumer group --group
// from the earliest offset, read_committed, and writes one record per input record to --output:
// the same key, the value "<input value>:go". Each batch is one transaction that also commits the
// consumed offsets (franz-go's GroupTransactSession, transactional.id --txn-id).
//
// --unsafe is the negative control: no transactions at all (a plain producer, read_uncommitted,
// offsets auto-committed every 5 s), so a kill -9 duplicates outputs and aborted inputs get copied.
//
// It prints "ready: assigned <topic-partition,...>" when partitions are assigned to it and
// "copied N" (outputs written so far by this process; committed ones without --unsafe) at most
// once a second. SIGTERM or SIGINT: it ends the transaction in flight (cut short, so aborted,
// past 3 s), flushes, leaves the group (past 2 s it leaves it to its session timeout) and exits 0,
// in milliseconds unless a rebalance holds it, 10 s at most.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	// Suffix is appended to every input value (harness/apps/functions.py: go_suffix says the same).
	Suffix = ":go"
	// a killed instance's partitions move to the others within this (the library's default 45 s
	// would stall the group for most of a short scenario after each kill); the broker's
	// group.min.session.timeout.ms is 6 s
	sessionTimeout = 10 * time.Second
	// after SIGTERM: how long the transaction in flight may take to end before it is cancelled
	// (it takes milliseconds, unless a rebalance holds it: then it is aborted, which is safe)
	drainTimeout = 3 * time.Second
	// after SIGTERM: leaving the group gets this long; past it the session times out instead
	leaveTimeout = 2 * time.Second
	// after SIGTERM: the whole shutdown's deadline, past which the process exits 1 regardless
	shutdownDeadline = 10 * time.Second
	// a session that failed beyond retrying (fenced, a transaction that could not end) is
	// replaced by a new one after this pause; a new one re-reads the group's committed offsets
	restartPause  = time.Second
	progressEvery = time.Second
)

type config struct {
	bootstrap []string
	input     string
	output    string
	group     string
	txnID     string
	unsafe    bool
}

// setupError is a client the options given cannot make (bad flags the parser let through): exit 2.
type setupError struct{ err error }

func (e setupError) Error() string { return e.err.Error() }
func (e setupError) Unwrap() error { return e.err }

// usageError is a bad command line: the message names the flag and what is allowed.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// parseArgs reads the command line; a usageError (or flag.ErrHelp) when it is not usable.
func parseArgs(args []string, out io.Writer) (config, error) {
	fs := flag.NewFlagSet("go-copier", flag.ContinueOnError)
	fs.SetOutput(out)
	var c config
	var bootstrap string
	fs.StringVar(&bootstrap, "bootstrap", "", "Kafka bootstrap servers, host:port[,host:port...] (required)")
	fs.StringVar(&c.input, "input", "", "the topic to read (required)")
	fs.StringVar(&c.output, "output", "", "the topic to write (required, not the input)")
	fs.StringVar(&c.group, "group", "", "the consumer group id (required)")
	fs.StringVar(&c.txnID, "txn-id", "", "the transactional.id (required unless --unsafe; unique per instance)")
	fs.BoolVar(&c.unsafe, "unsafe", false, "the negative control: no transactions, read_uncommitted, auto-committed offsets")
	fs.Usage = func() {
		fmt.Fprintln(out, "usage: go-copier --bootstrap HOST:PORT[,...] --input TOPIC --output TOPIC --group GROUP (--txn-id ID | --unsafe)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return c, err // the flag package printed what was wrong and the usage
	}
	bad := func(msg string) (config, error) {
		fmt.Fprintf(out, "go-copier: %s\n", msg)
		fs.Usage()
		return c, usageError{msg}
	}
	if fs.NArg() > 0 {
		return bad(fmt.Sprintf("unexpected argument %q: every setting is a flag", fs.Arg(0)))
	}
	for _, req := range []struct{ name, value string }{
		{"bootstrap", bootstrap}, {"input", c.input}, {"output", c.output}, {"group", c.group},
	} {
		if strings.TrimSpace(req.value) == "" {
			return bad(fmt.Sprintf("--%s is required and must not be empty", req.name))
		}
	}
	for _, s := range strings.Split(bootstrap, ",") {
		s = strings.TrimSpace(s)
		host, port, err := net.SplitHostPort(s)
		if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			return bad(fmt.Sprintf("--bootstrap %q: each server must be host:port, comma-separated", bootstrap))
		}
		c.bootstrap = append(c.bootstrap, s)
	}
	if c.input == c.output {
		return bad(fmt.Sprintf("--input and --output are both %q: the copier would read its own output", c.input))
	}
	if !c.unsafe && c.txnID == "" {
		return bad("--txn-id is required (the transactional.id, one per instance) unless --unsafe")
	}
	return c, nil
}

// progress counts outputs (from produce callbacks too, concurrently) and prints "copied N" at
// most once a second, when it changed.
type progress struct {
	copied  atomic.Int64
	printed int64 // only the printing goroutine, then final, touch it
}

func (p *progress) add(n int) { p.copied.Add(int64(n)) }

// print prints the count if it changed since the last line.
func (p *progress) print() {
	if total := p.copied.Load(); total != p.printed {
		fmt.Printf("copied %d\n", total)
		p.printed = total
	}
}

// every prints the count each second until done is closed.
func (p *progress) every(done <-chan struct{}) {
	t := time.NewTicker(progressEvery)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			p.print()
		}
	}
}

func onAssigned(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
	var parts []string
	for topic, ps := range assigned {
		for _, p := range ps {
			parts = append(parts, fmt.Sprintf("%s-%d", topic, p))
		}
	}
	if len(parts) == 0 {
		return // a cooperative rebalance that gave this instance nothing new
	}
	sort.Strings(parts)
	fmt.Printf("ready: assigned %s\n", strings.Join(parts, ","))
}

// transform is the contract: same key, the value with the suffix (a null value counts as empty).
func transform(in *kgo.Record, output string) *kgo.Record {
	value := make([]byte, 0, len(in.Value)+len(Suffix))
	value = append(append(value, in.Value...), Suffix...)
	return &kgo.Record{Topic: output, Key: in.Key, Value: value}
}

func commonOpts(c config) []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(c.bootstrap...),
		kgo.ConsumerGroup(c.group),
		kgo.ConsumeTopics(c.input),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(sessionTimeout),
		kgo.OnPartitionsAssigned(onAssigned),
		kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelWarn, nil)),
	}
}

// logFetchErrors prints a poll's errors; whether the poll ended because we are stopping.
func logFetchErrors(fetches kgo.Fetches) (stopping bool) {
	fetches.EachError(func(topic string, partition int32, err error) {
		if errors.Is(err, context.Canceled) || errors.Is(err, kgo.ErrClientClosed) {
			stopping = true
			return
		}
		fmt.Fprintf(os.Stderr, "go-copier: fetch error %s-%d: %v\n", topic, partition, err)
	})
	return stopping
}

// runSession copies in transactions until stop is done (nil) or the session fails beyond
// retrying (the error). work bounds the transaction in flight: it outlives stop by drainTimeout.
func runSession(stop, work context.Context, c config, prog *progress) error {
	opts := append(commonOpts(c),
		kgo.TransactionalID(c.txnID),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
	)
	sess, err := kgo.NewGroupTransactSession(opts...)
	if err != nil {
		return setupError{fmt.Errorf("creating the transactional session: %w", err)}
	}
	defer closeClient(sess.Client())
	for stop.Err() == nil {
		fetches := sess.PollFetches(stop)
		if logFetchErrors(fetches) || fetches.IsClientClosed() {
			break
		}
		n := fetches.NumRecords()
		if n == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			return fmt.Errorf("beginning a transaction: %w", err)
		}
		// the first produce error aborts the transaction; End then rewinds to the committed offsets
		e := kgo.AbortingFirstErrPromise(sess.Client())
		fetches.EachRecord(func(r *kgo.Record) {
			sess.Produce(work, transform(r, c.output), e.Promise())
		})
		produceErr := e.Err()
		committed, err := sess.End(work, produceErr == nil)
		if produceErr != nil {
			fmt.Fprintf(os.Stderr, "go-copier: aborted a transaction of %d records: %v\n", n, produceErr)
		}
		if err != nil {
			return fmt.Errorf("ending a transaction: %w", err)
		}
		if committed {
			prog.add(n)
		}
	}
	return nil
}

// runUnsafe copies without transactions until stop is done.
func runUnsafe(stop, work context.Context, c config, prog *progress) error {
	opts := append(commonOpts(c), kgo.FetchIsolationLevel(kgo.ReadUncommitted()))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return setupError{fmt.Errorf("creating the client: %w", err)}
	}
	defer closeClient(cl)
	for stop.Err() == nil {
		fetches := cl.PollFetches(stop)
		if logFetchErrors(fetches) || fetches.IsClientClosed() {
			break
		}
		fetches.EachRecord(func(r *kgo.Record) {
			cl.Produce(work, transform(r, c.output), func(_ *kgo.Record, err error) {
				if err != nil {
					fmt.Fprintf(os.Stderr, "go-copier: produce error: %v\n", err)
					return
				}
				prog.add(1)
			})
		})
	}
	return cl.Flush(work)
}

// closeClient leaves the group and closes the client. A rebalance under way (one waiting for a
// killed member's session to time out) holds the leave: past leaveTimeout the group drops this
// member by its session timeout instead, and the client closes in the background, so that a
// SIGTERM is not held up by it.
func closeClient(cl *kgo.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), leaveTimeout)
	defer cancel()
	if err := cl.LeaveGroupContext(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "go-copier: leaving the group: %v (the group drops this member after its session timeout)\n", err)
		go cl.Close()
		return
	}
	cl.Close()
}

func main() {
	c, err := parseArgs(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		os.Exit(2)
	}
	stop, stopped := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stopped()
	work, cancelWork := context.WithCancel(context.Background())
	defer cancelWork()
	var signalled atomic.Int64 // when the signal came (UnixNano), for the line saying how long stopping took
	go func() {
		<-stop.Done()
		signalled.Store(time.Now().UnixNano())
		fmt.Fprintln(os.Stderr, "go-copier: stopping (signal)")
		time.AfterFunc(drainTimeout, cancelWork)
		time.AfterFunc(shutdownDeadline, func() {
			fmt.Fprintf(os.Stderr, "go-copier: shutdown did not finish within %s: exiting\n", shutdownDeadline)
			os.Exit(1)
		})
	}()
	prog := &progress{}
	printing, printed := make(chan struct{}), make(chan struct{})
	go func() { prog.every(printing); close(printed) }()
	if c.unsafe {
		err = runUnsafe(stop, work, c, prog)
	} else {
		for {
			err = runSession(stop, work, c, prog)
			var bad setupError
			if err == nil || stop.Err() != nil || errors.As(err, &bad) {
				break
			}
			fmt.Fprintf(os.Stderr, "go-copier: the session failed, starting a new one: %v\n", err)
			select {
			case <-stop.Done():
			case <-time.After(restartPause):
			}
			if stop.Err() != nil {
				err = nil
				break
			}
		}
	}
	close(printing)
	<-printed
	prog.print()
	var bad setupError
	if err != nil && stop.Err() != nil && !errors.As(err, &bad) {
		// cut short by the drain deadline: what was in flight is not committed (its transaction is
		// aborted when this transactional.id starts again, or by its timeout): still a clean stop
		fmt.Fprintf(os.Stderr, "go-copier: the work in flight was cut short: %v\n", err)
		err = nil
	}
	if at := signalled.Load(); at != 0 {
		fmt.Fprintf(os.Stderr, "go-copier: stopped %.1fs after the signal\n", time.Since(time.Unix(0, at)).Seconds())
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "go-copier: %v\n", err)
		if errors.As(err, &bad) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}
