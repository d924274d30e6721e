// Kafka wire framing: a 4-byte big-endian size, then a request (or response) header and body.
//
// Only what the proxy needs is decoded: the request header (api key, version, correlation id,
// client id, and the tagged fields of header v2) for every request, and the bodies of the few APIs
// whose responses it synthesizes or whose details it logs. Everything else passes as opaque bytes.
package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// MaxFrame bounds a frame we accept (the broker's socket.request.max.bytes default is 100 MiB).
const MaxFrame = 100 << 20

// API keys the proxy knows by name (the event log names every key it matched).
const (
	apiProduce            int16 = 0
	apiMetadata           int16 = 3
	apiFindCoordinator    int16 = 10
	apiApiVersions        int16 = 18
	apiInitProducerId     int16 = 22
	apiAddPartitionsToTxn int16 = 24
	apiAddOffsetsToTxn    int16 = 25
	apiEndTxn             int16 = 26
	apiTxnOffsetCommit    int16 = 28
)

// APINames maps the names rules may use to API keys (the client APIs a transaction touches, and a
// few more useful to hold or probe).
var APINames = map[string]int16{
	"Produce": 0, "Fetch": 1, "ListOffsets": 2, "Metadata": 3, "OffsetCommit": 8, "OffsetFetch": 9,
	"FindCoordinator": 10, "JoinGroup": 11, "Heartbeat": 12, "LeaveGroup": 13, "SyncGroup": 14,
	"ApiVersions": 18, "InitProducerId": 22, "AddPartitionsToTxn": 24, "AddOffsetsToTxn": 25,
	"EndTxn": 26, "TxnOffsetCommit": 28, "DescribeProducers": 61, "DescribeTransactions": 65,
	"ListTransactions": 66, "ConsumerGroupHeartbeat": 68,
	// between brokers, and brokers to the controller quorum
	"WriteTxnMarkers": 27, "Vote": 52, "BeginQuorumEpoch": 53, "EndQuorumEpoch": 54, "AlterPartition": 56,
	"FetchSnapshot": 59, "BrokerRegistration": 62, "BrokerHeartbeat": 63,
}

// APIName is the name of key ("api-<key>" for one not in APINames).
func APIName(key int16) string { return nameOf(APINames, key, "api-%d") }

// nameOf is the name table gives value, or format filled with the value.
func nameOf(table map[string]int16, value int16, format string) string {
	for n, v := range table {
		if v == value {
			return n
		}
	}
	return fmt.Sprintf(format, value)
}

// flexibleFrom: the first version of each API whose request uses header v2 and whose response uses
// header v1 (tagged fields, compact strings and arrays). Only APIs whose bodies we decode or
// synthesize are listed: for every other API the header's first 8 bytes are all we read.
var flexibleFrom = map[int16]int16{
	apiProduce: 9, apiInitProducerId: 2, apiAddPartitionsToTxn: 3, apiAddOffsetsToTxn: 3,
	apiEndTxn: 3, apiTxnOffsetCommit: 3, apiWriteTxnMarkers: 1,
}

// Flexible reports whether version ver of api uses the flexible encoding; known is false when the
// table above does not have api.
func Flexible(api, ver int16) (flex, known bool) {
	from, ok := flexibleFrom[api]
	return ok && ver >= from, ok
}

// ResponseHeaderVersion: 1 (correlation id + tagged fields) for flexible versions, else 0. ApiVersions
// responses always use header v0, whatever the version, so that a client that does not yet know
// the broker's versions can parse the answer (KIP-511).
func ResponseHeaderVersion(api, ver int16) int {
	if api == apiApiVersions {
		return 0
	}
	if flex, _ := Flexible(api, ver); flex {
		return 1
	}
	return 0
}

// ReadFrame reads one size-prefixed frame; buf is reused when big enough.
func ReadFrame(r io.Reader, buf []byte) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := int(int32(binary.BigEndian.Uint32(size[:])))
	if n < 0 || n > MaxFrame {
		return nil, fmt.Errorf("frame size %d out of range 0..%d", n, MaxFrame)
	}
	if cap(buf) < n+4 {
		buf = make([]byte, n+4)
	}
	buf = buf[:n+4]
	copy(buf, size[:])
	if _, err := io.ReadFull(r, buf[4:]); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}

// Header is a request header (v1 or v2).
type Header struct {
	APIKey        int16
	APIVersion    int16
	CorrelationID int32
	ClientID      *string
	// BodyAt is the offset of the body in the frame (after the size prefix), when decoded.
	BodyAt int
}

// ParseHeader decodes the fixed part (api key, version, correlation id) of a frame with its size
// prefix; full also decodes the client id and, for flexible versions, the header's tagged fields.
func ParseHeader(frame []byte, full bool) (Header, error) {
	if len(frame) < 12 {
		return Header{}, fmt.Errorf("request of %d bytes is shorter than a request header", len(frame)-4)
	}
	h := Header{
		APIKey:        int16(binary.BigEndian.Uint16(frame[4:])),
		APIVersion:    int16(binary.BigEndian.Uint16(frame[6:])),
		CorrelationID: int32(binary.BigEndian.Uint32(frame[8:])),
	}
	if !full {
		return h, nil
	}
	d := &Decoder{b: frame[12:]}
	h.ClientID = d.NullableString() // never compact, even in header v2
	if flex, _ := Flexible(h.APIKey, h.APIVersion); flex {
		d.SkipTags()
	}
	if d.Err != nil {
		return h, fmt.Errorf("request header: %w", d.Err)
	}
	h.BodyAt = 12 + d.pos
	return h, nil
}

// Decoder reads Kafka primitives; the first error sticks and later reads return zero values.
type Decoder struct {
	b   []byte
	pos int
	Err error
}

func (d *Decoder) need(n int) bool {
	if d.Err != nil {
		return false
	}
	if n < 0 || d.pos+n > len(d.b) {
		d.Err = fmt.Errorf("truncated at byte %d (need %d more, %d left)", d.pos, n, len(d.b)-d.pos)
		return false
	}
	return true
}

func (d *Decoder) Int8() int8 {
	if !d.need(1) {
		return 0
	}
	d.pos++
	return int8(d.b[d.pos-1])
}

func (d *Decoder) Int16() int16 {
	if !d.need(2) {
		return 0
	}
	d.pos += 2
	return int16(binary.BigEndian.Uint16(d.b[d.pos-2:]))
}

func (d *Decoder) Int32() int32 {
	if !d.need(4) {
		return 0
	}
	d.pos += 4
	return int32(binary.BigEndian.Uint32(d.b[d.pos-4:]))
}

func (d *Decoder) Int64() int64 {
	if !d.need(8) {
		return 0
	}
	d.pos += 8
	return int64(binary.BigEndian.Uint64(d.b[d.pos-8:]))
}

func (d *Decoder) UUID() [16]byte {
	var u [16]byte
	if d.need(16) {
		copy(u[:], d.b[d.pos:])
		d.pos += 16
	}
	return u
}

func (d *Decoder) Uvarint() uint64 {
	if d.Err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.pos:])
	if n <= 0 {
		d.Err = fmt.Errorf("bad varint at byte %d", d.pos)
		return 0
	}
	d.pos += n
	return v
}

func (d *Decoder) Skip(n int) {
	if d.need(n) {
		d.pos += n
	}
}

// NullableString: int16 length (-1 = null), then bytes.
func (d *Decoder) NullableString() *string { return d.str(int(d.Int16())) }

// str reads n bytes as a string (nil for n < 0: null).
func (d *Decoder) str(n int) *string {
	if d.Err != nil || n < 0 || !d.need(n) {
		return nil
	}
	s := string(d.b[d.pos : d.pos+n])
	d.pos += n
	return &s
}

// String reads a (non-null) string, compact in flexible versions.
func (d *Decoder) String(flex bool) string {
	var s *string
	if flex {
		s = d.CompactNullableString()
	} else {
		s = d.NullableString()
	}
	if s == nil {
		return ""
	}
	return *s
}

// CompactNullableString: uvarint length+1 (0 = null), then bytes.
func (d *Decoder) CompactNullableString() *string { return d.str(int(d.Uvarint()) - 1) }

// OptString reads a nullable string, compact in flexible versions.
func (d *Decoder) OptString(flex bool) *string {
	if flex {
		return d.CompactNullableString()
	}
	return d.NullableString()
}

// SkipBytes skips nullable bytes (records): int32 length, or uvarint length+1 when flexible.
func (d *Decoder) SkipBytes(flex bool) {
	var n int
	if flex {
		n = int(d.Uvarint()) - 1
	} else {
		n = int(d.Int32())
	}
	if n > 0 {
		d.Skip(n)
	}
}

// ArrayLen: int32 count (-1 = null), or uvarint count+1 when flexible; a null array is empty.
func (d *Decoder) ArrayLen(flex bool) int {
	var n int
	if flex {
		n = int(d.Uvarint()) - 1
	} else {
		n = int(d.Int32())
	}
	if n < 0 || d.Err != nil {
		return 0
	}
	if n > len(d.b) { // every element takes at least a byte: a bigger count is corrupt
		d.Err = fmt.Errorf("array of %d elements in %d bytes", n, len(d.b))
		return 0
	}
	return n
}

// SkipTags skips a tagged-field section: uvarint count, then (tag, size, bytes) each.
func (d *Decoder) SkipTags() {
	n := int(d.Uvarint())
	for i := 0; i < n && d.Err == nil; i++ {
		d.Uvarint()
		d.Skip(int(d.Uvarint()))
	}
}

// Encoder builds a frame; Frame() prefixes the size.
type Encoder struct{ b []byte }

func (e *Encoder) Int8(v int8)   { e.b = append(e.b, byte(v)) }
func (e *Encoder) Int16(v int16) { e.b = binary.BigEndian.AppendUint16(e.b, uint16(v)) }
func (e *Encoder) Int32(v int32) { e.b = binary.BigEndian.AppendUint32(e.b, uint32(v)) }
func (e *Encoder) Int64(v int64) { e.b = binary.BigEndian.AppendUint64(e.b, uint64(v)) }
func (e *Encoder) Uvarint(v uint64) {
	e.b = binary.AppendUvarint(e.b, v)
}
func (e *Encoder) UUID(u [16]byte) { e.b = append(e.b, u[:]...) }

// Tags writes an empty tagged-field section (flexible versions only).
func (e *Encoder) Tags(flex bool) {
	if flex {
		e.Uvarint(0)
	}
}

func (e *Encoder) ArrayLen(n int, flex bool) {
	if flex {
		e.Uvarint(uint64(n) + 1)
	} else {
		e.Int32(int32(n))
	}
}

func (e *Encoder) String(s string, flex bool) {
	if flex {
		e.Uvarint(uint64(len(s)) + 1)
	} else {
		e.Int16(int16(len(s)))
	}
	e.b = append(e.b, s...)
}

// NullString writes a null nullable string.
func (e *Encoder) NullString(flex bool) {
	if flex {
		e.Uvarint(0)
	} else {
		e.Int16(-1)
	}
}

// Frame is the encoded bytes with the 4-byte size in front.
func (e *Encoder) Frame() []byte {
	out := binary.BigEndian.AppendUint32(make([]byte, 0, len(e.b)+4), uint32(len(e.b)))
	return append(out, e.b...)
}
