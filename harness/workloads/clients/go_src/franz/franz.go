// franz-go (github.com/twmb/franz-go) behind the bridge's library interface.
//
// franz-go commits a consumer's offsets in a transaction only through that consumer's own client
// (GroupTransactSession.End: offsets and EndTxn together, aborting instead if the group rebalanced
// since the transaction began). So a producer the Python side paired with a group consumer (the
// copier's) and that consumer are one GroupTransactSession; send_offsets checks that the offsets
// are the ones the session will commit, and commit ends the session's transaction.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

const module = "github.com/twmb/franz-go"

// errSessionAborted: GroupTransactSession.End ended the transaction with an abort of its own
// (the group rebalanced, or committing the offsets met an error it aborts on).
var errSessionAborted = errors.New("the group transact session aborted the transaction instead of committing " +
	"(the group rebalanced since it began, or its offset commit failed)")

var known = []string{"bootstrap.servers", "transactional.id", "transaction.timeout.ms", "linger.ms",
	"socket.connection.setup.timeout.ms", "delivery.timeout.ms", "request.timeout.ms", "isolation.level", "group.id",
	"session.timeout.ms", "auto.offset.reset", "enable.auto.commit"}

type franz struct{}

func newLibrary() library { return franz{} }

func (franz) hello() map[string]any {
	return map[string]any{"client": "franz-go", "version": moduleVersion(module)}
}

// options are the kgo options of a request's settings.
func options(c config) ([]kgo.Opt, error) {
	var opts []kgo.Opt
	ms := func(key string, opt func(time.Duration) kgo.Opt) error {
		if v, ok := c.take(key); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("%s: %q is not a number of milliseconds", key, v)
			}
			opts = append(opts, opt(time.Duration(n)*time.Millisecond))
		}
		return nil
	}
	if v, ok := c.take("bootstrap.servers"); ok {
		opts = append(opts, kgo.SeedBrokers(strings.Split(v, ",")...))
	}
	if v, ok := c.take("transactional.id"); ok {
		// records name their partition: the workloads decide where each goes
		opts = append(opts, kgo.TransactionalID(v), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	for key, opt := range map[string]func(time.Duration) kgo.Opt{
		"transaction.timeout.ms":             func(d time.Duration) kgo.Opt { return kgo.TransactionTimeout(d) },
		"linger.ms":                          func(d time.Duration) kgo.Opt { return kgo.ProducerLinger(d) },
		"socket.connection.setup.timeout.ms": kgo.DialTimeout,
		"delivery.timeout.ms":                func(d time.Duration) kgo.Opt { return kgo.RecordDeliveryTimeout(d) },
		// franz-go has no request timeout of its own: a request waits for its response the
		// request's own timeout field (a Produce's, a fetch's wait) plus this overhead, and a
		// request without one (EndTxn, AddPartitionsToTxn, InitProducerId) this long
		"request.timeout.ms": kgo.RequestTimeoutOverhead,
		"session.timeout.ms": func(d time.Duration) kgo.Opt { return kgo.SessionTimeout(d) },
	} {
		if err := ms(key, opt); err != nil {
			return nil, err
		}
	}
	if v, ok := c.take("isolation.level"); ok {
		switch v {
		case "read_committed":
			opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
		case "read_uncommitted":
			opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadUncommitted()))
		default:
			return nil, fmt.Errorf("isolation.level: %q is neither read_committed nor read_uncommitted", v)
		}
	}
	if v, ok := c.take("group.id"); ok {
		// committed offsets of a transaction in flight are not handed out (KIP-447)
		opts = append(opts, kgo.ConsumerGroup(v), kgo.RequireStableFetchOffsets())
	}
	if v, ok := c.take("auto.offset.reset"); ok {
		if v != "earliest" {
			return nil, fmt.Errorf("auto.offset.reset: only earliest is offered, not %q", v)
		}
		opts = append(opts, kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	}
	if v, ok := c.take("enable.auto.commit"); ok {
		if v != "false" {
			return nil, fmt.Errorf("enable.auto.commit: only false is offered, not %q", v)
		}
		opts = append(opts, kgo.DisableAutoCommit())
	}
	return opts, c.unknown("franz-go", known)
}

// shared is one kgo client a producer and a group consumer may both use; closed once.
type shared struct {
	cl      *kgo.Client
	session *kgo.GroupTransactSession // when a producer and a group consumer share it
	once    sync.Once
}

func (s *shared) close() {
	s.once.Do(func() {
		if s.session != nil {
			s.session.Close()
		} else {
			s.cl.Close()
		}
	})
}

type txnProducer struct {
	*shared
	group *groupConsumer // the paired group consumer, if any
}

func (franz) openProducer(c config, group consumer) (producer, error) {
	opts, err := options(c)
	if err != nil {
		return nil, err
	}
	p := &txnProducer{shared: &shared{}}
	if group != nil {
		g, ok := group.(*groupConsumer)
		if !ok || g.shared != nil {
			return nil, bug{"franz-go pairs a producer only with a group consumer of its own that has not polled yet"}
		}
		if p.session, err = kgo.NewGroupTransactSession(append(g.opts, opts...)...); err != nil {
			return nil, err
		}
		p.cl = p.session.Client()
		g.shared, p.group = p.shared, g
		return p, nil
	}
	p.cl, err = kgo.NewClient(opts...)
	return p, err
}

// initTxn loads the producer ID (InitProducerID): franz-go does that at first use, and loading it
// now fences an older instance of the transactional.id, as initTransactions does.
func (p *txnProducer) initTxn(ctx context.Context) error {
	_, _, err := p.cl.ProducerID(ctx)
	return err
}

func (p *txnProducer) begin() error {
	if p.session != nil {
		return p.session.Begin()
	}
	return p.cl.BeginTransaction()
}

func (p *txnProducer) send(r record, done func(int64, error)) error {
	rec := &kgo.Record{Topic: r.topic, Partition: r.partition, Key: r.key, Value: r.value}
	p.cl.Produce(context.Background(), rec, func(rec *kgo.Record, err error) { done(rec.Offset, err) })
	return nil
}

func (p *txnProducer) sendOffsets(ctx context.Context, offsets []offset, group consumer, token int) error {
	if p.session == nil || group != consumer(p.group) {
		return bug{"franz-go commits offsets in a transaction only through the group consumer's own client: " +
			"this producer was not opened paired with that consumer"}
	}
	want := p.cl.UncommittedOffsets()
	for _, o := range offsets {
		if got, ok := want[o.topic][o.partition]; !ok || got.Offset != o.offset {
			return bug{fmt.Sprintf("send_offsets %s/%d@%d: the session commits %v, what its consumer handed out",
				o.topic, o.partition, o.offset, want[o.topic])}
		}
	}
	return nil // committed by commit (GroupTransactSession.End)
}

func (p *txnProducer) commit(ctx context.Context) error {
	if p.session != nil {
		committed, err := p.session.End(ctx, kgo.TryCommit)
		if err == nil && !committed {
			return errSessionAborted
		}
		return err
	}
	// EndTransaction neither flushes nor waits: what was produced must be acknowledged first
	if err := p.cl.Flush(ctx); err != nil {
		return err
	}
	return p.cl.EndTransaction(ctx, kgo.TryCommit)
}

func (p *txnProducer) abort(ctx context.Context) error {
	if p.session != nil {
		_, err := p.session.End(ctx, kgo.TryAbort) // also rewinds the consumer to the committed offsets
		return err
	}
	if err := p.cl.AbortBufferedRecords(ctx); err != nil {
		return err
	}
	return p.cl.EndTransaction(ctx, kgo.TryAbort)
}

// assigned is an assign-mode reader from offset 0.
type assigned struct{ cl *kgo.Client }

// groupConsumer is a group member; its client is made when paired with a producer, or at its first
// poll (a group reader alone).
type groupConsumer struct {
	*shared
	opts []kgo.Opt
}

func (franz) openConsumer(c config, assign []topicPartition, subscribe []string) (consumer, error) {
	opts, err := options(c)
	if err != nil {
		return nil, err
	}
	if len(subscribe) > 0 {
		return &groupConsumer{opts: append(opts, kgo.ConsumeTopics(subscribe...))}, nil
	}
	parts := map[string]map[int32]kgo.Offset{}
	for _, tp := range assign {
		if parts[tp.topic] == nil {
			parts[tp.topic] = map[int32]kgo.Offset{}
		}
		parts[tp.topic][tp.partition] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(append(opts, kgo.ConsumePartitions(parts))...)
	return &assigned{cl}, err
}

func poll(ctx context.Context, cl *kgo.Client, max int) ([]received, error) {
	fetches := cl.PollRecords(ctx, max)
	var out []received
	fetches.EachRecord(func(r *kgo.Record) {
		out = append(out, received{topicPartition{r.Topic, r.Partition}, r.Offset, valueOrID(r.Value, func(k string) ([]byte, bool) {
			for _, h := range r.Headers {
				if h.Key == k {
					return h.Value, true
				}
			}
			return nil, false
		})})
	})
	for _, fe := range fetches.Errors() {
		// the poll's own deadline is an empty poll, not an error
		if !errors.Is(fe.Err, context.DeadlineExceeded) && !errors.Is(fe.Err, context.Canceled) {
			return out, fe.Err
		}
	}
	return out, nil
}

func (a *assigned) poll(ctx context.Context, max int) ([]received, error) {
	return poll(ctx, a.cl, max)
}
func (a *assigned) positions(context.Context) ([]offset, error) {
	return nil, bug{"positions of an assign-mode reader"}
}
func (a *assigned) groupMetadata() (int, error) {
	return 0, bug{"group metadata of an assign-mode reader"}
}
func (a *assigned) rewind(ctx context.Context) error { return bug{"rewind of an assign-mode reader"} }
func (a *assigned) close()                           { a.cl.Close() }

func (g *groupConsumer) client() (*kgo.Client, error) {
	if g.shared == nil {
		cl, err := kgo.NewClient(g.opts...)
		if err != nil {
			return nil, err
		}
		g.shared = &shared{cl: cl}
	}
	return g.cl, nil
}

func (g *groupConsumer) poll(ctx context.Context, max int) ([]received, error) {
	cl, err := g.client()
	if err != nil {
		return nil, err
	}
	return poll(ctx, cl, max)
}

// positions are the next offsets of what was handed out: what the session's End commits.
func (g *groupConsumer) positions(context.Context) ([]offset, error) {
	cl, err := g.client()
	if err != nil {
		return nil, err
	}
	var out []offset
	for t, ps := range cl.UncommittedOffsets() {
		for p, eo := range ps {
			out = append(out, offset{topicPartition{t, p}, eo.Offset})
		}
	}
	return out, nil
}

// groupMetadata has nothing to snapshot: the session itself aborts a transaction across a rebalance.
func (g *groupConsumer) groupMetadata() (int, error) { return 1, nil }

// rewind goes back to the committed offsets. After a paired session's abort this is what End did
// already; setting them again changes nothing.
func (g *groupConsumer) rewind(context.Context) error {
	cl, err := g.client()
	if err != nil {
		return err
	}
	cl.SetOffsets(cl.CommittedOffsets())
	return nil
}

func (g *groupConsumer) close() {
	if g.shared != nil {
		g.shared.close()
	}
}

func (p *txnProducer) close() { p.shared.close() }

// fatalCodes leave franz-go's producer ID failed for good (only closing the client is left).
var fatalCodes = []error{kerr.ProducerFenced, kerr.TransactionalIDAuthorizationFailed, kerr.ClusterAuthorizationFailed,
	kerr.UnsupportedVersion, kerr.UnsupportedForMessageFormat, kerr.InvalidTxnState, kerr.InvalidTransactionTimeout}

// recoverable: an abort may recover the producer ID (KIP-360, KIP-588) or just end the transaction.
var recoverable = []error{kerr.UnknownProducerID, kerr.InvalidProducerIDMapping, kerr.TransactionAbortable,
	kerr.OperationNotAttempted}

func isAny(err error, targets []error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}

// facts: franz-go's errors are Kafka's codes (kerr) or a few of its own. What the error alone does
// not say is decided by where it was met (docs/CLIENTS.md, "franz-go"):
//   - a record's error in a transaction leaves only an abort (franz-go's docs: abort on any
//     failed record);
//   - EndTransaction must never be called again to resume a commit: it leaves the transaction
//     before sending EndTxn, so a second call returns nil having done nothing. Every error of
//     commit is therefore not retriable (the bridge's own timeout is: it waits on the same call).
func (franz) facts(err error, op string, _ producer) Facts {
	f := Facts{Message: err.Error(), Exception: fmt.Sprintf("%T", err)}
	var ke *kerr.Error
	var ne net.Error
	switch {
	case errors.As(err, &ke):
		f.Name, f.Retriable, f.Exception = ke.Message, ke.Retriable, "kerr."+ke.Message
	case errors.Is(err, kgo.ErrRecordTimeout):
		f.Name, f.TimedOut = "RECORD_TIMEOUT", true
	case errors.Is(err, kgo.ErrRecordRetries):
		f.Name = "RECORD_RETRIES"
	case errors.Is(err, context.DeadlineExceeded):
		f.Name, f.TimedOut, f.Retriable = "DEADLINE_EXCEEDED", true, true
	case errors.Is(err, kgo.ErrClientClosed):
		f.Name, f.Fatal = "CLIENT_CLOSED", true
	case errors.Is(err, errSessionAborted):
		f.Name = "SESSION_ABORTED"
	case errors.As(err, &ne):
		// a connection refused or lost (franz-go dials again on the next request)
		f.Name, f.Retriable, f.TimedOut = "NETWORK_EXCEPTION", true, ne.Timeout()
	default:
		f.Name = "CLIENT_ERROR"
	}
	f.Message = strings.TrimPrefix(f.Message, f.Name+": ") // NAME: message, the name said once
	f.TimedOut = f.TimedOut || errors.Is(err, kerr.RequestTimedOut)
	f.Fenced = errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch)
	f.Fatal = f.Fatal || isAny(err, fatalCodes) || strings.Contains(err.Error(), "fatal, unrecoverable")
	switch op {
	case "producer.flush", "producer.send":
		f.TxnRequiresAbort = !f.Fatal && !f.Fenced
	case "producer.commit":
		f.Retriable = false
		// an EndTxn the coordinator refused for good fails the producer ID, unless an abort can recover it
		f.Fatal = f.Fatal || (ke != nil && !ke.Retriable && !isAny(err, recoverable) && !errors.Is(err, kerr.UnknownServerError))
		f.TxnRequiresAbort = !f.Fatal && !f.Fenced && (isAny(err, recoverable) || errors.Is(err, errSessionAborted))
	default:
		f.TxnRequiresAbort = !f.Fatal && !f.Fenced && isAny(err, recoverable)
	}
	return f
}

// example: {"code": N} is Kafka's error code N as kerr has it; {"kind": "record-timeout" |
// "deadline" | "session-aborted"} one of franz-go's own.
func (franz) example(spec map[string]any) (error, error) {
	if code, ok := spec["code"].(float64); ok {
		err := kerr.ErrorForCode(int16(code))
		if err == nil {
			return nil, fmt.Errorf("code %v is no error", code)
		}
		return err, nil
	}
	switch spec["kind"] {
	case "record-timeout":
		return kgo.ErrRecordTimeout, nil
	case "deadline":
		return context.DeadlineExceeded, nil
	case "refused":
		return &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}, nil
	case "session-aborted":
		return errSessionAborted, nil
	}
	return nil, fmt.Errorf("no error %v", spec)
}
