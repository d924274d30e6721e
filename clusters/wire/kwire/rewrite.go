// Broker address rewriting (docs/WIRE-FAULTS.md, "Address rewriting"): in front of a cluster that
// advertises its own addresses, every response that names a broker's host and port is rewritten to
// name the proxy's listener of that broker instead, so that a client bootstrapped at the proxies
// makes every later connection through them too (Kroxylicious's BrokerAddressFilter does the same).
//
// Responses that carry a broker's address, by API (versions the pinned Kafka releases speak):
//
//	Metadata (3)          Brokers[]{NodeId, Host, Port, Rack}                          every version
//	FindCoordinator (10)  NodeId, Host, Port (v0-3); Coordinators[]{Key, NodeId, ...}  every version
//	DescribeCluster (60)  Brokers[]{BrokerId, Host, Port, ...}, when EndpointType is 1 (brokers)
//	Produce (0)           top-level tagged field 0 NodeEndpoints[] (KIP-951)           v10+
//	Fetch (1)             top-level tagged field 0 NodeEndpoints[] (KIP-951)           v16+
//	ApiVersions (18)      ShareFetch (78) and ShareAcknowledge (79) also answer with NodeEndpoints:
//	                      they are removed from the versions the proxy forwards, so no client uses them
//
// Only the bytes of hosts and ports change (and the lengths in front of them: a string's length, the
// size of the tagged field that holds them, the frame size); every other byte is copied as the
// broker wrote it.
package main

import (
	"encoding/binary"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// API keys only the rewriter names.
const (
	apiFetch            int16 = 1
	apiDescribeCluster  int16 = 60
	apiShareFetch       int16 = 78
	apiShareAcknowledge int16 = 79
)

// hiddenAPIs are answered with broker addresses the proxy does not rewrite: a rewriting proxy
// removes them from the ApiVersions responses it forwards (share groups are not under test).
var hiddenAPIs = []int16{apiShareFetch, apiShareAcknowledge}

// responseFlexFrom: the first flexible version of each response the rewriter walks (the request
// side's table, flexibleFrom, lists only what the proxy decodes or synthesizes).
var responseFlexFrom = map[int16]int16{
	apiProduce: 9, apiFetch: 12, apiMetadata: 9, apiFindCoordinator: 3, apiDescribeCluster: 0, apiApiVersions: 3,
}

// nodeEndpointsFrom: the first version of Produce and Fetch whose response has the NodeEndpoints tag.
var nodeEndpointsFrom = map[int16]int16{apiProduce: 10, apiFetch: 16}

// HostPort is an address a client connects to.
type HostPort struct {
	Host string
	Port int32
}

func (h HostPort) String() string { return net.JoinHostPort(h.Host, strconv.Itoa(int(h.Port))) }

// Advertised maps a node id to the address clients must use for it (the proxy's listener of that
// broker). A nil map rewrites nothing: the built-in backends' brokers advertise the proxies themselves.
type Advertised map[int32]HostPort

// ParseAdvertise reads NODE=HOST:PORT (the -advertise flag).
func ParseAdvertise(s string) (int32, HostPort, error) {
	node, addr, ok := strings.Cut(s, "=")
	id, err := strconv.ParseInt(node, 10, 32)
	if !ok || err != nil || id < 0 {
		return 0, HostPort{}, fmt.Errorf("-advertise %q: expected NODE=HOST:PORT with NODE a broker id (0 or more)", s)
	}
	host, port, err := net.SplitHostPort(addr)
	p, perr := strconv.ParseUint(port, 10, 16)
	if err != nil || perr != nil || host == "" || p == 0 {
		return 0, HostPort{}, fmt.Errorf("-advertise %q: expected NODE=HOST:PORT with a port 1-65535", s)
	}
	return int32(id), HostPort{host, int32(p)}, nil
}

// UnmappedHost is the host written for a node id the map does not have (a broker added after the
// proxy started): a name that never resolves (RFC 2606), so the client cannot go around the proxies.
func UnmappedHost(node int32) string { return fmt.Sprintf("unmapped-node-%d.invalid", node) }

// Rewritten is what Rewrite did to one response.
type Rewritten struct {
	Frame    []byte  // the response to send (the input itself when nothing changed)
	Changed  bool    // some address was replaced
	Unmapped []int32 // node ids not in the map, given UnmappedHost
}

// Rewrite returns the response frame (size prefix included) to h's request with every broker
// address replaced. An error means the body did not decode: the caller must not forward it.
func (a Advertised) Rewrite(h Header, frame []byte) (Rewritten, error) {
	walk, ok := rewriters[h.APIKey]
	if !ok || h.APIVersion < nodeEndpointsFrom[h.APIKey] {
		return Rewritten{Frame: frame}, nil
	}
	flex := h.APIVersion >= responseFlexFrom[h.APIKey]
	s := &splice{a: a, d: &Decoder{b: frame, pos: 8}, flex: flex}
	if flex && h.APIKey != apiApiVersions { // ApiVersions answers with header v0 at every version
		s.d.SkipTags()
	}
	walk(s, h.APIVersion)
	if s.d.Err == nil && s.d.pos != len(frame) {
		s.d.Err = fmt.Errorf("%d bytes left after the body", len(frame)-s.d.pos)
	}
	if s.d.Err != nil {
		return Rewritten{Frame: frame}, fmt.Errorf("%s v%d response: %w", APIName(h.APIKey), h.APIVersion, s.d.Err)
	}
	if !s.changed {
		return Rewritten{Frame: frame, Unmapped: s.unmapped}, nil
	}
	out := s.finish()
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	return Rewritten{Frame: out, Changed: true, Unmapped: s.unmapped}, nil
}

// rewriters walk one API's response body from the decoder's position to its end.
var rewriters = map[int16]func(s *splice, v int16){
	apiMetadata: rewriteMetadata, apiFindCoordinator: rewriteFindCoordinator,
	apiDescribeCluster: rewriteDescribeCluster, apiProduce: rewriteProduce, apiFetch: rewriteFetch,
	apiApiVersions: hideAPIs,
}

// splice builds the output: src copied up to a position, replacement bytes, src again from after the
// bytes they replace. Until the first replacement nothing is copied (out stays nil).
type splice struct {
	a        Advertised
	d        *Decoder // reads src (d.b)
	flex     bool
	out      []byte
	at       int // src[:at] is in out (once changed)
	changed  bool
	unmapped []int32
}

// replace puts b in place of src[from:to].
func (s *splice) replace(from, to int, b []byte) {
	if !s.changed {
		s.changed = true
		s.out = make([]byte, 0, len(s.d.b)+64)
	}
	s.out = append(s.out, s.d.b[s.at:from]...)
	s.out = append(s.out, b...)
	s.at = to
}

// finish is out with the rest of src copied (src itself when nothing changed).
func (s *splice) finish() []byte {
	if !s.changed {
		return s.d.b
	}
	return append(s.out, s.d.b[s.at:]...)
}

// broker reads NodeId, Host, Port and replaces the host and port with the node's advertised address
// (only a node id of 0 or more: -1 with an empty host is "no coordinator", left alone).
func (s *splice) broker() {
	node := s.d.Int32()
	from := s.d.pos
	host := s.strBytes()
	port := s.d.Int32()
	if s.d.Err != nil || node < 0 {
		return
	}
	to, ok := s.a[node]
	if !ok {
		s.unmapped = append(s.unmapped, node)
		to = HostPort{UnmappedHost(node), port}
	}
	if string(host) == to.Host && to.Port == port { // compared without a copy
		return
	}
	s.replace(from, s.d.pos, nil)
	e := Encoder{b: s.out} // appended in place: no buffer of its own
	e.String(to.Host, s.flex)
	e.Int32(to.Port)
	s.out = e.b
}

// array runs each once per element of an array (count read first).
func (s *splice) array(each func()) {
	n := s.d.ArrayLen(s.flex)
	for i := 0; i < n && s.d.Err == nil; i++ {
		each()
	}
}

// tags skips a tagged-field section (flexible versions only).
func (s *splice) tags() {
	if s.flex {
		s.d.SkipTags()
	}
}

func (s *splice) skip(n int) { s.d.Skip(n) }

// str skips a (nullable) string, compact in flexible versions.
func (s *splice) str() { s.strBytes() }

// strBytes reads a (nullable) string's bytes in place (nil for null or empty).
func (s *splice) strBytes() []byte {
	var n int
	if s.flex {
		n = int(s.d.Uvarint()) - 1
	} else {
		n = int(s.d.Int16())
	}
	if n <= 0 || !s.d.need(n) {
		return nil
	}
	s.d.pos += n
	return s.d.b[s.d.pos-n : s.d.pos]
}

// rest skips to the end of the body: what follows the last address is copied untouched.
func (s *splice) rest() { s.d.pos = len(s.d.b) }

func rewriteMetadata(s *splice, v int16) {
	if v >= 3 {
		s.skip(4) // ThrottleTimeMs
	}
	s.array(func() {
		s.broker()
		if v >= 1 {
			s.str() // Rack
		}
		s.tags()
	})
	s.rest() // ClusterId, ControllerId, Topics, ... (no address)
}

func rewriteFindCoordinator(s *splice, v int16) {
	if v >= 1 {
		s.skip(4) // ThrottleTimeMs
	}
	if v <= 3 {
		s.skip(2) // ErrorCode
		if v >= 1 {
			s.str() // ErrorMessage
		}
		s.broker()
		s.rest()
		return
	}
	s.array(func() {
		s.str() // Key
		s.broker()
		s.skip(2) // ErrorCode
		s.str()   // ErrorMessage
		s.tags()
	})
	s.rest()
}

func rewriteDescribeCluster(s *splice, v int16) {
	s.skip(4 + 2) // ThrottleTimeMs, ErrorCode
	s.str()       // ErrorMessage
	if v >= 1 && s.d.Int8() != 1 {
		s.rest() // EndpointType 2: the controllers, not a connection a client of the brokers makes
		return
	}
	s.str()   // ClusterId
	s.skip(4) // ControllerId
	s.array(func() {
		s.broker()
		s.str() // Rack
		if v >= 2 {
			s.skip(1) // IsFenced
		}
		s.tags()
	})
	s.rest()
}

func rewriteProduce(s *splice, v int16) {
	s.array(func() {
		if v >= 13 {
			s.skip(16) // TopicId
		} else {
			s.str() // Name
		}
		s.array(func() {
			s.skip(4 + 2 + 8 + 8 + 8) // Index, ErrorCode, BaseOffset, LogAppendTimeMs, LogStartOffset
			s.array(func() {          // RecordErrors
				s.skip(4) // BatchIndex
				s.str()   // BatchIndexErrorMessage
				s.tags()
			})
			s.str()  // ErrorMessage
			s.tags() // CurrentLeader (tag 0): a leader id and epoch, no address
		})
		s.tags()
	})
	s.skip(4) // ThrottleTimeMs
	s.nodeEndpoints()
}

func rewriteFetch(s *splice, v int16) {
	s.skip(4 + 2 + 4) // ThrottleTimeMs, ErrorCode, SessionId
	s.array(func() {
		if v >= 13 {
			s.skip(16) // TopicId
		} else {
			s.str() // Topic
		}
		s.array(func() {
			s.skip(4 + 2 + 8 + 8 + 8) // PartitionIndex, ErrorCode, HighWatermark, LastStableOffset, LogStartOffset
			s.array(func() {          // AbortedTransactions
				s.skip(8 + 8)
				s.tags()
			})
			s.skip(4)             // PreferredReadReplica
			s.d.SkipBytes(s.flex) // Records: skipped by their length, never looked at
			s.tags()              // DivergingEpoch, CurrentLeader, SnapshotId: no address
		})
		s.tags()
	})
	s.nodeEndpoints()
}

// nodeEndpoints walks the top-level tagged fields of a Produce or Fetch response: tag 0 is
// NodeEndpoints[]{NodeId, Host, Port, Rack}; its entries are rewritten and its size written anew.
func (s *splice) nodeEndpoints() {
	n := int(s.d.Uvarint())
	for i := 0; i < n && s.d.Err == nil; i++ {
		tag := s.d.Uvarint()
		sizeAt := s.d.pos
		size := int(s.d.Uvarint())
		end := s.d.pos + size
		if tag != 0 || !s.d.need(size) {
			s.d.Skip(size)
			continue
		}
		// the field's own bytes, rewritten on their own, then put back behind their new size
		sub := &splice{a: s.a, d: &Decoder{b: s.d.b[:end], pos: s.d.pos}, flex: true, at: s.d.pos}
		sub.array(func() {
			sub.broker()
			sub.str() // Rack
			sub.tags()
		})
		s.d.pos, s.d.Err = sub.d.pos, sub.d.Err
		if s.d.Err == nil && s.d.pos != end {
			s.d.Err = fmt.Errorf("NodeEndpoints: %d bytes of its %d left over", end-s.d.pos, size)
		}
		s.unmapped = append(s.unmapped, sub.unmapped...)
		if s.d.Err == nil && sub.changed {
			body := sub.out[:len(sub.out):len(sub.out)]
			body = append(body, sub.d.b[sub.at:end]...)
			s.replace(sizeAt, end, append(binary.AppendUvarint(nil, uint64(len(body))), body...))
		}
	}
}

// hideAPIs removes ShareFetch and ShareAcknowledge from an ApiVersions response's ApiKeys.
func hideAPIs(s *splice, v int16) {
	if s.d.Int16() != 0 {
		s.rest() // an error answer (UNSUPPORTED_VERSION is encoded at v0 whatever was asked): left alone
		return
	}
	countAt := s.d.pos
	n := s.d.ArrayLen(s.flex)
	kept := 0
	for i := 0; i < n && s.d.Err == nil; i++ {
		from := s.d.pos
		key := s.d.Int16()
		s.skip(2 + 2) // MinVersion, MaxVersion
		s.tags()
		hide := false
		for _, k := range hiddenAPIs {
			hide = hide || k == key
		}
		if !hide {
			kept++
			continue
		}
		s.replace(from, s.d.pos, nil)
	}
	if s.changed && s.d.Err == nil {
		// out starts with src up to the entries: swap the count there for the new one
		e := Encoder{}
		e.ArrayLen(kept, s.flex)
		countEnd := countAt + len(binary.AppendUvarint(nil, uint64(n)+1))
		if !s.flex {
			countEnd = countAt + 4
		}
		s.out = append(append(s.out[:countAt:countAt], e.b...), s.out[countEnd:]...)
	}
	s.rest()
}
