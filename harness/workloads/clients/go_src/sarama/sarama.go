// IBM/sarama (github.com/IBM/sarama) behind the bridge's library interface.
//
// sarama's transactional producer is an AsyncProducer: records go into its input channel and come
// back on its Successes and Errors channels, where one goroutine hands each its result. Its
// transaction manager's state (TxnStatus) says whether an error left the producer abortable or dead,
// as Java's does. Its consumer group is callback-based (ConsumeClaim per partition); the group
// reader here turns it into polls: claims hand their messages over to the polls, and a rewind
// replays what the workload got since its offsets were last committed (sarama has no seek).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/IBM/sarama"
)

const module = "github.com/IBM/sarama"

var known = []string{"bootstrap.servers", "transactional.id", "transaction.timeout.ms", "linger.ms",
	"socket.connection.setup.timeout.ms", "request.timeout.ms", "isolation.level", "group.id",
	"session.timeout.ms", "auto.offset.reset", "enable.auto.commit", "sarama.version"}

type saramaLib struct{}

func newLibrary() library { return saramaLib{} }

func (saramaLib) hello() map[string]any {
	return map[string]any{"client": "sarama", "version": moduleVersion(module)}
}

// saramaConfig is the sarama config of a request's settings, and the seed brokers. sarama has no
// delivery timeout (a record is retried Producer.Retry.Max times), so none is offered.
func saramaConfig(c config) (*sarama.Config, []string, error) {
	cfg := sarama.NewConfig()
	// the newest protocol versions this release knows: a team on a recent cluster sets it so
	cfg.Version = sarama.MaxVersion
	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	cfg.Consumer.Return.Errors = true
	var brokers []string
	ms := func(key string, set func(time.Duration)) error {
		if v, ok := c.take(key); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("%s: %q is not a number of milliseconds", key, v)
			}
			set(time.Duration(n) * time.Millisecond)
		}
		return nil
	}
	if v, ok := c.take("bootstrap.servers"); ok {
		brokers = strings.Split(v, ",")
	}
	if v, ok := c.take("transactional.id"); ok {
		cfg.Producer.Transaction.ID = v
		cfg.Producer.Idempotent = true // required by transactions, with acks=all and one request in flight
		cfg.Producer.RequiredAcks = sarama.WaitForAll
		cfg.Net.MaxOpenRequests = 1
		// records name their partition: the workloads decide where each goes
		cfg.Producer.Partitioner = sarama.NewManualPartitioner
	}
	for key, set := range map[string]func(time.Duration){
		"transaction.timeout.ms":             func(d time.Duration) { cfg.Producer.Transaction.Timeout = d },
		"linger.ms":                          func(d time.Duration) { cfg.Producer.Flush.Frequency = d },
		"socket.connection.setup.timeout.ms": func(d time.Duration) { cfg.Net.DialTimeout = d },
		// how long sarama waits for a response before it gives up on the connection
		"request.timeout.ms": func(d time.Duration) { cfg.Net.ReadTimeout = d },
		"session.timeout.ms": func(d time.Duration) { cfg.Consumer.Group.Session.Timeout = d },
	} {
		if err := ms(key, set); err != nil {
			return nil, nil, err
		}
	}
	if v, ok := c.take("isolation.level"); ok {
		switch v {
		case "read_committed":
			cfg.Consumer.IsolationLevel = sarama.ReadCommitted
		case "read_uncommitted":
			cfg.Consumer.IsolationLevel = sarama.ReadUncommitted
		default:
			return nil, nil, fmt.Errorf("isolation.level: %q is neither read_committed nor read_uncommitted", v)
		}
	}
	if v, ok := c.take("auto.offset.reset"); ok {
		if v != "earliest" {
			return nil, nil, fmt.Errorf("auto.offset.reset: only earliest is offered, not %q", v)
		}
		cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	}
	if v, ok := c.take("enable.auto.commit"); ok {
		if v != "false" {
			return nil, nil, fmt.Errorf("enable.auto.commit: only false is offered, not %q", v)
		}
		cfg.Consumer.Offsets.AutoCommit.Enable = false
	}
	if v, ok := c.take("sarama.version"); ok {
		version, err := sarama.ParseKafkaVersion(v)
		if err != nil {
			return nil, nil, fmt.Errorf("sarama.version: %w", err)
		}
		cfg.Version = version
	}
	c.take("group.id") // the consumer group's own argument (openConsumer reads it first)
	if err := c.unknown("sarama", known); err != nil {
		return nil, nil, err
	}
	return cfg, brokers, cfg.Validate()
}

// txnProducer is made at init: sarama's NewAsyncProducer runs InitProducerId itself (fencing older
// instances), which the workloads record as init, not as opening the client.
type txnProducer struct {
	cfg     *sarama.Config
	brokers []string
	ap      sarama.AsyncProducer
	drained chan struct{}
	// the open transaction's offsets and their consumer, told when the commit went through
	group   *groupConsumer
	offsets []offset
}

func (saramaLib) openProducer(c config, group consumer) (producer, error) {
	cfg, brokers, err := saramaConfig(c)
	if err != nil {
		return nil, err
	}
	return &txnProducer{cfg: cfg, brokers: brokers}, nil
}

func (p *txnProducer) initTxn(context.Context) error {
	if p.ap != nil {
		return bug{"producer.init called twice"}
	}
	ap, err := sarama.NewAsyncProducer(p.brokers, p.cfg)
	if err != nil {
		return err
	}
	p.ap, p.drained = ap, make(chan struct{})
	go p.results()
	return nil
}

// results hands each record its result until the producer is closed.
func (p *txnProducer) results() {
	defer close(p.drained)
	successes, errs := p.ap.Successes(), p.ap.Errors()
	for successes != nil || errs != nil {
		select {
		case m, ok := <-successes:
			if !ok {
				successes = nil
				continue
			}
			m.Metadata.(func(int64, error))(m.Offset, nil)
		case e, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			e.Msg.Metadata.(func(int64, error))(-1, e.Err)
		}
	}
}

func (p *txnProducer) ready() error {
	if p.ap == nil {
		return bug{"a sarama producer is used before producer.init"}
	}
	return nil
}

func (p *txnProducer) begin() error {
	if err := p.ready(); err != nil {
		return err
	}
	p.group, p.offsets = nil, nil
	return p.ap.BeginTxn()
}

func (p *txnProducer) send(r record, done func(int64, error)) error {
	if err := p.ready(); err != nil {
		return err
	}
	m := &sarama.ProducerMessage{Topic: r.topic, Partition: r.partition, Value: sarama.ByteEncoder(r.value), Metadata: done}
	if r.key != nil {
		m.Key = sarama.ByteEncoder(r.key)
	}
	p.ap.Input() <- m
	return nil
}

// sendOffsets only records the offsets: sarama sends them (AddOffsetsToTxn, TxnOffsetCommit) at commit.
func (p *txnProducer) sendOffsets(_ context.Context, offsets []offset, group consumer, token int) error {
	if err := p.ready(); err != nil {
		return err
	}
	g, ok := group.(*groupConsumer)
	if !ok {
		return bug{"send_offsets names a consumer that is not a sarama group member"}
	}
	snap, ok := g.tokens[token]
	if !ok {
		return bug{fmt.Sprintf("no group metadata snapshot %d", token)}
	}
	byTopic := map[string][]*sarama.PartitionOffsetMetadata{}
	for _, o := range offsets {
		byTopic[o.topic] = append(byTopic[o.topic], &sarama.PartitionOffsetMetadata{Partition: o.partition, Offset: o.offset})
	}
	if err := addOffsets(p.ap, byTopic, g.groupID, snap); err != nil {
		return err
	}
	p.group, p.offsets = g, offsets
	return nil
}

func (p *txnProducer) commit(context.Context) error {
	if err := p.ready(); err != nil {
		return err
	}
	if err := p.ap.CommitTxn(); err != nil {
		return err
	}
	if p.group != nil {
		p.group.committed(p.offsets)
	}
	return nil
}

func (p *txnProducer) abort(context.Context) error {
	if err := p.ready(); err != nil {
		return err
	}
	return p.ap.AbortTxn()
}

func (p *txnProducer) close() {
	if p.ap != nil {
		p.ap.AsyncClose() // without waiting: a fenced or broken producer is dropped anyway
	}
}

// feed is the messages of a consumer's partitions, one by one, and its errors.
type feed struct {
	msgs chan delivery
	errs chan error
}

type delivery struct {
	m   *sarama.ConsumerMessage
	gen int // the group session it came from (0: no group)
}

// feedBuffer: messages ready for the next polls. What the workload got is what polls returned (the
// positions), never what waits here; a rewind drops what waits (it comes again from the committed offsets).
const feedBuffer = 4096

func newFeed() feed { return feed{msgs: make(chan delivery, feedBuffer), errs: make(chan error, 16)} }

// take waits for one message up to the poll's deadline, then takes what else is ready, up to max;
// messages of a session before gen are dropped (handed out before a rewind or a rebalance).
func (f feed) take(ctx context.Context, max, gen int) ([]delivery, error) {
	var out []delivery
	for len(out) < max {
		var d delivery
		if len(out) == 0 {
			select {
			case d = <-f.msgs:
			case err := <-f.errs:
				return nil, err
			case <-ctx.Done():
				return nil, nil
			}
		} else {
			select {
			case d = <-f.msgs:
			default:
				return out, nil
			}
		}
		if d.gen >= gen {
			out = append(out, d)
		}
	}
	return out, nil
}

// report hands a consumer's error to the next poll, unless sarama goes on by itself after it (a
// lost connection, a leader moving: it retries those and only tells): those are logged instead.
func (f feed) report(err error) {
	if transient(err) {
		fmt.Fprintf(os.Stderr, "sarama consumer (it retries): %v\n", err)
		return
	}
	select {
	case f.errs <- err:
	default: // a poll has enough to report already
	}
}

func transient(err error) bool {
	var ke sarama.KError
	var ne net.Error
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, sarama.ErrOutOfBrokers) || errors.Is(err, sarama.ErrNotConnected) ||
		(errors.As(err, &ke) && retriableCodes[ke]) || errors.As(err, &ne)
}

func toReceived(ds []delivery) []received {
	out := make([]received, 0, len(ds))
	for _, d := range ds {
		headers := d.m.Headers
		out = append(out, received{topicPartition{d.m.Topic, d.m.Partition}, d.m.Offset, valueOrID(d.m.Value, func(k string) ([]byte, bool) {
			for _, h := range headers {
				if h != nil && string(h.Key) == k {
					return h.Value, true
				}
			}
			return nil, false
		})})
	}
	return out
}

// assigned reads given partitions from offset 0.
type assigned struct {
	c   sarama.Consumer
	pcs []sarama.PartitionConsumer
	feed
	stop chan struct{}
}

// groupConsumer is a member of a consumer group, its sessions run by Consume in a goroutine.
//
// sarama cannot seek within a session (ResetOffset only moves what is marked for commit), and ending
// the session to start again from the committed offsets costs a rebalance and reads offsets a
// transaction may still be committing (sarama's OffsetFetch never asks for stable offsets, KIP-447).
// So a rewind replays what the workload got since the last commit of its offsets, as a seek to the
// committed offsets would: the producer tells the consumer what its commits committed.
type groupConsumer struct {
	group   sarama.ConsumerGroup
	groupID string
	topics  []string
	feed
	cancel context.CancelFunc

	mu      sync.Mutex
	session sarama.ConsumerGroupSession // the current one
	gen     int                         // sessions started so far
	// what the workload got: the session it came from, the next offset of each partition, and
	// the messages since the last commit of their offsets (replayed by a rewind)
	handed    sarama.ConsumerGroupSession
	handedGen int
	next      map[topicPartition]int64
	since     map[topicPartition][]delivery
	replay    []delivery
	tokens    map[int]sarama.ConsumerGroupSession
	token     int
}

func (saramaLib) openConsumer(c config, assign []topicPartition, subscribe []string) (consumer, error) {
	groupID := c["group.id"]
	cfg, brokers, err := saramaConfig(c)
	if err != nil {
		return nil, err
	}
	if len(subscribe) > 0 {
		g, err := sarama.NewConsumerGroup(brokers, groupID, cfg)
		if err != nil {
			return nil, err
		}
		gc := &groupConsumer{group: g, groupID: groupID, topics: subscribe, feed: newFeed(), tokens: map[int]sarama.ConsumerGroupSession{}}
		gc.start()
		return gc, nil
	}
	sc, err := sarama.NewConsumer(brokers, cfg)
	if err != nil {
		return nil, err
	}
	a := &assigned{c: sc, feed: newFeed(), stop: make(chan struct{})}
	for _, tp := range assign {
		pc, err := sc.ConsumePartition(tp.topic, tp.partition, sarama.OffsetOldest)
		if err != nil {
			a.close()
			return nil, err
		}
		a.pcs = append(a.pcs, pc)
		go a.forward(pc)
	}
	return a, nil
}

func (a *assigned) forward(pc sarama.PartitionConsumer) {
	for {
		select {
		case m, ok := <-pc.Messages():
			if !ok {
				return
			}
			select {
			case a.msgs <- delivery{m: m}:
			case <-a.stop:
				return
			}
		case e, ok := <-pc.Errors():
			if ok {
				a.report(e.Err)
			}
		case <-a.stop:
			return
		}
	}
}

func (a *assigned) poll(ctx context.Context, max int) ([]received, error) {
	ms, err := a.take(ctx, max, 0)
	return toReceived(ms), err
}
func (a *assigned) positions(context.Context) ([]offset, error) {
	return nil, bug{"positions of an assign-mode reader"}
}
func (a *assigned) groupMetadata() (int, error) {
	return 0, bug{"group metadata of an assign-mode reader"}
}
func (a *assigned) rewind(context.Context) error { return bug{"rewind of an assign-mode reader"} }
func (a *assigned) close() {
	close(a.stop)
	for _, pc := range a.pcs {
		pc.AsyncClose()
	}
	a.c.Close()
}

// start runs the session loop: Consume returns at every rebalance and is called again.
func (g *groupConsumer) start() {
	ctx, cancel := context.WithCancel(context.Background())
	g.cancel = cancel
	go func() {
		for ctx.Err() == nil {
			if err := g.group.Consume(ctx, g.topics, g); err != nil {
				g.report(err)
				time.Sleep(100 * time.Millisecond) // no spin on a broken group; the poll reports it
			}
		}
	}()
	go func() {
		for err := range g.group.Errors() {
			g.report(err)
		}
	}()
}

func (g *groupConsumer) Setup(s sarama.ConsumerGroupSession) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.session = s
	g.gen++
	return nil
}

func (g *groupConsumer) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (g *groupConsumer) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	g.mu.Lock()
	gen := g.gen
	g.mu.Unlock()
	for m := range claim.Messages() {
		select {
		case g.msgs <- delivery{m: m, gen: gen}:
		case <-s.Context().Done():
			return nil
		}
	}
	return nil
}

func (g *groupConsumer) poll(ctx context.Context, max int) ([]received, error) {
	g.mu.Lock()
	gen, ds := g.gen, g.replay
	if len(ds) > max {
		ds = ds[:max]
	}
	g.replay = g.replay[len(ds):]
	g.mu.Unlock()
	var err error
	if len(ds) == 0 {
		ds, err = g.take(ctx, max, gen)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	// a new session may have begun while waiting: only its messages are handed out (the old one's
	// come again from the committed offsets), and from the first of them on, positions and group
	// metadata are the new session's
	kept := ds[:0]
	for _, d := range ds {
		if d.gen != g.gen {
			continue
		}
		if g.handedGen != g.gen {
			g.handed, g.handedGen = g.session, g.gen
			g.next, g.since, g.replay = map[topicPartition]int64{}, map[topicPartition][]delivery{}, nil
		}
		tp := topicPartition{d.m.Topic, d.m.Partition}
		kept = append(kept, d)
		g.next[tp] = d.m.Offset + 1
		g.since[tp] = append(g.since[tp], d)
	}
	return toReceived(kept), err
}

// positions are the next offsets of what the workload got (of the partitions it got records of).
func (g *groupConsumer) positions(context.Context) ([]offset, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]offset, 0, len(g.next))
	for tp, o := range g.next {
		out = append(out, offset{tp, o})
	}
	return out, nil
}

// groupMetadata snapshots the session (generation and member id) the workload's records came from:
// if the group rebalanced since, committing their offsets under it is refused (sarama 1.50.2+).
func (g *groupConsumer) groupMetadata() (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.handed == nil {
		return 0, bug{"group metadata before anything was polled"}
	}
	g.token++
	g.tokens = map[int]sarama.ConsumerGroupSession{g.token: g.handed} // only the latest is ever used
	return g.token, nil
}

// committed: a transaction committed these offsets; what lies before them is never replayed.
func (g *groupConsumer) committed(offsets []offset) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, o := range offsets {
		ds := g.since[o.topicPartition]
		for len(ds) > 0 && ds[0].m.Offset < o.offset {
			ds = ds[1:]
		}
		g.since[o.topicPartition] = ds
	}
}

// rewind goes back to the committed offsets: what the workload got since is handed out again first.
func (g *groupConsumer) rewind(context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	var again []delivery
	for tp, ds := range g.since {
		if len(ds) > 0 {
			g.next[tp] = ds[0].m.Offset
			again = append(again, ds...)
		}
	}
	g.since = map[topicPartition][]delivery{}
	g.replay = append(again, g.replay...)
	return nil
}

func (g *groupConsumer) close() {
	g.cancel()
	done := make(chan struct{})
	go func() { g.group.Close(); close(done) }() // leaves the group
	select {
	case <-done:
	case <-time.After(5 * time.Second): // bounded, like the Java bridge's close
	}
}

// retriableCodes are Kafka's retriable errors (its RetriableException subclasses).
var retriableCodes = map[sarama.KError]bool{
	sarama.ErrNotLeaderForPartition: true, sarama.ErrLeaderNotAvailable: true, sarama.ErrRequestTimedOut: true,
	sarama.ErrNetworkException: true, sarama.ErrNotEnoughReplicas: true, sarama.ErrNotEnoughReplicasAfterAppend: true,
	sarama.ErrConsumerCoordinatorNotAvailable: true, sarama.ErrNotCoordinatorForConsumer: true,
	sarama.ErrOffsetsLoadInProgress: true, sarama.ErrConcurrentTransactions: true, sarama.ErrUnknownTopicOrPartition: true,
	sarama.ErrKafkaStorageError: true, sarama.ErrFencedLeaderEpoch: true,
	sarama.ErrUnknownLeaderEpoch: true, sarama.ErrOffsetNotAvailable: true, sarama.ErrPreferredLeaderNotAvailable: true,
}

// fatalCodes are the errors Java documents as fatal, for a call without a producer to ask.
var fatalCodes = map[sarama.KError]bool{
	sarama.ErrProducerFenced: true, sarama.ErrOutOfOrderSequenceNumber: true, sarama.ErrTransactionalIDAuthorizationFailed: true,
	sarama.ErrClusterAuthorizationFailed: true, sarama.ErrUnsupportedVersion: true,
}

// facts: sarama's errors are Kafka's codes (KError) or its own. fatal and txn_requires_abort are
// the transaction manager's state after the call (TxnStatus), as Java's state is read: the error
// alone does not say whether it left the producer abortable or dead.
func (saramaLib) facts(err error, op string, p producer) Facts {
	f := Facts{Message: err.Error(), Exception: fmt.Sprintf("%T", err), Name: "CLIENT_ERROR"}
	var ke sarama.KError
	var ne net.Error
	var pe *sarama.ProducerError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	switch {
	case errors.As(err, &ke):
		f.Name, f.Exception, f.Retriable = kafkaName(ke), "sarama.KError", retriableCodes[ke]
		f.Fatal = fatalCodes[ke]
		f.Message = strings.TrimPrefix(err.Error(), "kafka server: ")
		if strings.HasPrefix(f.Message, "Unknown error") { // a code this sarama has no text for
			f.Message = fmt.Sprintf("Kafka error code %d (%s)", int16(ke), f.Name)
		}
	case errors.As(err, &ne) && ne.Timeout():
		f.Name, f.Retriable, f.TimedOut = "NETWORK_TIMEOUT", true, true
	case errors.Is(err, sarama.ErrOutOfBrokers), errors.Is(err, sarama.ErrNotConnected):
		f.Name, f.Retriable = "OUT_OF_BROKERS", true
	case transient(err): // a connection refused or lost: sarama dials again on the next call
		f.Name, f.Retriable = "NETWORK_EXCEPTION", true
	case errors.Is(err, sarama.ErrTransactionNotReady):
		f.Name = "TRANSACTION_NOT_READY"
	}
	f.TimedOut = f.TimedOut || errors.Is(err, sarama.ErrRequestTimedOut)
	f.Fenced = errors.Is(err, sarama.ErrProducerFenced) || errors.Is(err, sarama.ErrInvalidProducerEpoch)
	if tp, ok := p.(*txnProducer); ok && tp.ap != nil {
		status := tp.ap.TxnStatus()
		f.Fatal = status&sarama.ProducerTxnFlagFatalError != 0
		f.TxnRequiresAbort = !f.Fatal && status&sarama.ProducerTxnFlagAbortableError != 0
	}
	if op == "producer.flush" && !f.Fatal && !f.Fenced {
		// a record that failed in a transaction leaves only an abort, whatever the state says yet
		f.TxnRequiresAbort = true
	}
	return f
}

// kafkaName is the protocol's name of a code (sarama has descriptions only); the ones a
// transactional workload meets, else ERROR_<code>.
func kafkaName(k sarama.KError) string {
	if n, ok := names[k]; ok {
		return n
	}
	return "ERROR_" + strconv.Itoa(int(k))
}

var names = map[sarama.KError]string{
	sarama.ErrUnknown: "UNKNOWN_SERVER_ERROR", sarama.ErrUnknownTopicOrPartition: "UNKNOWN_TOPIC_OR_PARTITION",
	sarama.ErrLeaderNotAvailable: "LEADER_NOT_AVAILABLE", sarama.ErrNotLeaderForPartition: "NOT_LEADER_OR_FOLLOWER",
	sarama.ErrRequestTimedOut: "REQUEST_TIMED_OUT", sarama.ErrNetworkException: "NETWORK_EXCEPTION",
	sarama.ErrOffsetsLoadInProgress: "COORDINATOR_LOAD_IN_PROGRESS", sarama.ErrConsumerCoordinatorNotAvailable: "COORDINATOR_NOT_AVAILABLE",
	sarama.ErrNotCoordinatorForConsumer: "NOT_COORDINATOR", sarama.ErrNotEnoughReplicas: "NOT_ENOUGH_REPLICAS",
	sarama.ErrNotEnoughReplicasAfterAppend: "NOT_ENOUGH_REPLICAS_AFTER_APPEND", sarama.ErrIllegalGeneration: "ILLEGAL_GENERATION",
	sarama.ErrUnknownMemberId: "UNKNOWN_MEMBER_ID", sarama.ErrRebalanceInProgress: "REBALANCE_IN_PROGRESS",
	sarama.ErrClusterAuthorizationFailed: "CLUSTER_AUTHORIZATION_FAILED", sarama.ErrUnsupportedVersion: "UNSUPPORTED_VERSION",
	sarama.ErrOutOfOrderSequenceNumber: "OUT_OF_ORDER_SEQUENCE_NUMBER", sarama.ErrDuplicateSequenceNumber: "DUPLICATE_SEQUENCE_NUMBER",
	sarama.ErrInvalidProducerEpoch: "INVALID_PRODUCER_EPOCH", sarama.ErrInvalidTxnState: "INVALID_TXN_STATE",
	sarama.ErrInvalidProducerIDMapping: "INVALID_PRODUCER_ID_MAPPING", sarama.ErrInvalidTransactionTimeout: "INVALID_TRANSACTION_TIMEOUT",
	sarama.ErrConcurrentTransactions: "CONCURRENT_TRANSACTIONS", sarama.ErrTransactionCoordinatorFenced: "TRANSACTION_COORDINATOR_FENCED",
	sarama.ErrTransactionalIDAuthorizationFailed: "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", sarama.ErrUnknownProducerID: "UNKNOWN_PRODUCER_ID",
	sarama.ErrKafkaStorageError: "KAFKA_STORAGE_ERROR", sarama.ErrFencedLeaderEpoch: "FENCED_LEADER_EPOCH",
	sarama.ErrProducerFenced: "PRODUCER_FENCED", sarama.ErrFencedInstancedId: "FENCED_INSTANCE_ID",
}

// example: {"code": N} is Kafka's error code N as sarama has it; {"kind": "not-ready"} one of its own.
func (saramaLib) example(spec map[string]any) (error, error) {
	if code, ok := spec["code"].(float64); ok {
		return sarama.KError(int16(code)), nil
	}
	if spec["kind"] == "not-ready" {
		return sarama.ErrTransactionNotReady, nil
	}
	return nil, fmt.Errorf("no error %v", spec)
}
