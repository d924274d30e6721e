// Error responses the proxy synthesizes instead of forwarding a request, and the request details
// it decodes (for the event log, and Produce's acks: acks=0 has no response).
package main

import (
	"fmt"
)

// Synthesizable lists the APIs whose error responses the proxy can write, with why each can: a
// response that is only an error code (EndTxn, AddOffsetsToTxn, InitProducerId), or one that
// echoes the request's topics and partitions, each with the error (AddPartitionsToTxn,
// TxnOffsetCommit, Produce).
var Synthesizable = []int16{apiProduce, apiInitProducerId, apiAddPartitionsToTxn, apiAddOffsetsToTxn, apiEndTxn, apiTxnOffsetCommit}

func canSynthesize(api int16) bool {
	for _, a := range Synthesizable {
		if a == api {
			return true
		}
	}
	return false
}

// ErrorCodes names the error codes a rule may ask for (Kafka's Errors enum; a number works too).
var ErrorCodes = map[string]int16{
	"UNKNOWN_SERVER_ERROR": -1, "NONE": 0, "CORRUPT_MESSAGE": 2, "UNKNOWN_TOPIC_OR_PARTITION": 3,
	"LEADER_NOT_AVAILABLE": 5, "NOT_LEADER_OR_FOLLOWER": 6, "REQUEST_TIMED_OUT": 7,
	"NETWORK_EXCEPTION": 13, "COORDINATOR_LOAD_IN_PROGRESS": 14, "COORDINATOR_NOT_AVAILABLE": 15,
	"NOT_COORDINATOR": 16, "NOT_ENOUGH_REPLICAS": 19, "NOT_ENOUGH_REPLICAS_AFTER_APPEND": 20,
	"INVALID_PRODUCER_EPOCH": 47, "INVALID_TXN_STATE": 48, "INVALID_PRODUCER_ID_MAPPING": 49,
	"INVALID_TRANSACTION_TIMEOUT": 50, "CONCURRENT_TRANSACTIONS": 51,
	"TRANSACTION_COORDINATOR_FENCED": 52, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED": 53,
	"OUT_OF_ORDER_SEQUENCE_NUMBER": 45, "DUPLICATE_SEQUENCE_NUMBER": 46, "PRODUCER_FENCED": 90,
	"UNKNOWN_PRODUCER_ID": 59, "KAFKA_STORAGE_ERROR": 56, "THROTTLING_QUOTA_EXCEEDED": 89,
	"TRANSACTION_ABORTABLE": 120, "INVALID_RECORD": 87,
}

// ErrorName is the name of code ("code-<n>" for one not in ErrorCodes).
func ErrorName(code int16) string { return nameOf(ErrorCodes, code, "code-%d") }

type partitions struct {
	name string   // topic name (versions that name topics)
	id   [16]byte // topic id (Produce v13+, TxnOffsetCommit v6+)
	idx  []int32
}

// Details is what the event log says about a request beyond its header.
type Details map[string]any

// requestBody decodes what we use of a request's body: details for the log, whether a response
// comes (Produce acks=0 has none), and the topics and partitions a synthesized response echoes.
func requestBody(h Header, frame []byte) (details Details, noResponse bool, topics []partitions, err error) {
	flex, _ := Flexible(h.APIKey, h.APIVersion)
	d := &Decoder{b: frame[h.BodyAt:]}
	v := h.APIVersion
	details = Details{}
	switch h.APIKey {
	case apiEndTxn:
		details["transactional_id"] = d.String(flex)
		details["producer_id"] = d.Int64()
		details["producer_epoch"] = d.Int16()
		details["committed"] = d.Int8() != 0
	case apiInitProducerId:
		if s := d.OptString(flex); s != nil {
			details["transactional_id"] = *s
		}
	case apiAddOffsetsToTxn:
		details["transactional_id"] = d.String(flex)
		details["producer_id"] = d.Int64()
		details["producer_epoch"] = d.Int16()
		details["group_id"] = d.String(flex)
	case apiWriteTxnMarkers:
		batchBody(h, d, flex, details)
	case apiAddPartitionsToTxn:
		if v >= 4 { // broker-to-broker batches (KIP-890 verification); clients send v3 and below
			batchBody(h, d, flex, details)
			break
		}
		details["transactional_id"] = d.String(flex)
		details["producer_id"] = d.Int64()
		details["producer_epoch"] = d.Int16()
		for i, n := 0, d.ArrayLen(flex); i < n && d.Err == nil; i++ {
			t := partitions{name: d.String(flex)}
			for j, m := 0, d.ArrayLen(flex); j < m && d.Err == nil; j++ {
				t.idx = append(t.idx, d.Int32())
			}
			if flex {
				d.SkipTags()
			}
			topics = append(topics, t)
		}
	case apiTxnOffsetCommit:
		details["transactional_id"] = d.String(flex)
		details["group_id"] = d.String(flex)
		details["producer_id"] = d.Int64()
		details["producer_epoch"] = d.Int16()
		if v >= 3 {
			d.Int32()
			d.String(flex)
			d.OptString(flex)
		}
		for i, n := 0, d.ArrayLen(flex); i < n && d.Err == nil; i++ {
			var t partitions
			if v >= 6 {
				t.id = d.UUID()
			} else {
				t.name = d.String(flex)
			}
			for j, m := 0, d.ArrayLen(flex); j < m && d.Err == nil; j++ {
				t.idx = append(t.idx, d.Int32())
				d.Int64()
				if v >= 2 {
					d.Int32()
				}
				d.OptString(flex)
				if flex {
					d.SkipTags()
				}
			}
			if flex {
				d.SkipTags()
			}
			topics = append(topics, t)
		}
	case apiProduce:
		if v >= 3 {
			if s := d.OptString(flex); s != nil {
				details["transactional_id"] = *s
			}
		}
		acks := d.Int16()
		details["acks"] = acks
		noResponse = acks == 0
		d.Int32()
		for i, n := 0, d.ArrayLen(flex); i < n && d.Err == nil; i++ {
			var t partitions
			if v >= 13 {
				t.id = d.UUID()
			} else {
				t.name = d.String(flex)
			}
			for j, m := 0, d.ArrayLen(flex); j < m && d.Err == nil; j++ {
				t.idx = append(t.idx, d.Int32())
				d.SkipBytes(flex)
				if flex {
					d.SkipTags()
				}
			}
			if flex {
				d.SkipTags()
			}
			topics = append(topics, t)
		}
	}
	if d.Err != nil {
		return details, noResponse, nil, fmt.Errorf("%s v%d request body: %w", APIName(h.APIKey), v, d.Err)
	}
	return details, noResponse, topics, nil
}

// Synthesize is the response to request h (whose body decoded to topics) carrying error code, in
// the response header version the client expects for h's API and version.
func Synthesize(h Header, topics []partitions, code int16) ([]byte, error) {
	if !canSynthesize(h.APIKey) {
		return nil, fmt.Errorf("cannot synthesize a %s response", APIName(h.APIKey))
	}
	flex, _ := Flexible(h.APIKey, h.APIVersion)
	v := h.APIVersion
	e := &Encoder{}
	e.Int32(h.CorrelationID)
	if ResponseHeaderVersion(h.APIKey, v) == 1 {
		e.Tags(true)
	}
	switch h.APIKey {
	case apiEndTxn:
		e.Int32(0)
		e.Int16(code)
		if v >= 5 {
			e.Int64(-1)
			e.Int16(-1)
		}
	case apiAddOffsetsToTxn:
		e.Int32(0)
		e.Int16(code)
	case apiInitProducerId:
		e.Int32(0)
		e.Int16(code)
		e.Int64(-1)
		e.Int16(-1)
		if v >= 6 {
			e.Int64(-1)
			e.Int16(-1)
		}
	case apiAddPartitionsToTxn:
		e.Int32(0)
		if v >= 4 { // a top-level error; no per-transaction results
			e.Int16(code)
			e.ArrayLen(0, flex)
		} else {
			echoPartitions(e, topics, flex, func(*Encoder) {}, code, false)
		}
	case apiTxnOffsetCommit:
		e.Int32(0)
		echoPartitions(e, topics, flex, func(*Encoder) {}, code, v >= 6)
	case apiProduce:
		echoPartitions(e, topics, flex, func(e *Encoder) {
			e.Int64(-1) // base offset
			if v >= 2 {
				e.Int64(-1) // log append time
			}
			if v >= 5 {
				e.Int64(-1) // log start offset
			}
			if v >= 8 {
				e.ArrayLen(0, flex) // record errors
				e.NullString(flex)  // error message
			}
		}, code, v >= 13)
		e.Int32(0) // throttle time (v1+; we decode v3+ only)
	}
	e.Tags(flex)
	return e.Frame(), nil
}

// echoPartitions writes [topic, [partition, error, rest...]] for every partition of the request.
func echoPartitions(e *Encoder, topics []partitions, flex bool, rest func(*Encoder), code int16, byID bool) {
	e.ArrayLen(len(topics), flex)
	for _, t := range topics {
		if byID {
			e.UUID(t.id)
		} else {
			e.String(t.name, flex)
		}
		e.ArrayLen(len(t.idx), flex)
		for _, p := range t.idx {
			e.Int32(p)
			e.Int16(code)
			rest(e)
			e.Tags(flex)
		}
		e.Tags(flex)
	}
}

// responseDetails is what the event log says about the response to h: the top-level error code
// (for the APIs whose response starts with throttle time and error code: EndTxn, AddOffsetsToTxn,
// InitProducerId), and the producer id and epoch InitProducerId and EndTxn v5+ answer (KIP-890:
// the epoch the client goes on with). ok is false when there is no error code to read.
func responseDetails(h Header, frame []byte) (details map[string]any, ok bool) {
	switch h.APIKey {
	case apiEndTxn, apiAddOffsetsToTxn, apiInitProducerId:
	default:
		return nil, false
	}
	d := &Decoder{b: frame[4:]}
	d.Int32() // correlation id
	if ResponseHeaderVersion(h.APIKey, h.APIVersion) == 1 {
		d.SkipTags()
	}
	d.Int32() // throttle time
	code := d.Int16()
	if d.Err != nil {
		return nil, false
	}
	details = map[string]any{"error": ErrorName(code)}
	if h.APIKey == apiInitProducerId || (h.APIKey == apiEndTxn && h.APIVersion >= 5) {
		id, epoch := d.Int64(), d.Int16()
		if d.Err == nil {
			details["producer_id"], details["producer_epoch"] = id, epoch
		}
	}
	return details, true
}
