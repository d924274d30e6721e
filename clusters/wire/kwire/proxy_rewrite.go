// The proxy's side of address rewriting (rewrite.go): the per-link counters, the events, and what
// happens to a response that cannot be rewritten.
package main

import (
	"fmt"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
)

// RewriteStats counts, per link, what the rewriting did.
type RewriteStats struct {
	// Rewritten: responses with at least one address replaced (or an API hidden)
	Rewritten int64 `json:"rewritten"`
	// Unmapped: responses that named a node id the map does not have
	Unmapped int64 `json:"unmapped"`
	// Failed: responses that did not decode (the client's connection was closed instead)
	Failed int64 `json:"failed"`
}

type rewriteCounters struct{ rewritten, unmapped, failed atomic.Int64 }

// rewriteState is the proxy's rewriting: the map and every link's counters.
type rewriteState struct {
	Advertise Advertised
	mu        sync.Mutex
	links     map[string]*rewriteCounters
}

// parse sets the map from -advertise flags (none: rewriting stays off); a node given twice is an error.
func (st *rewriteState) parse(flags []string) error {
	for _, f := range flags {
		node, hp, err := ParseAdvertise(f)
		if err != nil {
			return err
		}
		if st.Advertise == nil {
			st.Advertise = Advertised{}
		}
		if prev, dup := st.Advertise[node]; dup {
			return fmt.Errorf("-advertise %q: node %d is already advertised as %s", f, node, prev)
		}
		st.Advertise[node] = hp
	}
	return nil
}

func (st *rewriteState) counters(link string) *rewriteCounters {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.links == nil {
		st.links = map[string]*rewriteCounters{}
	}
	if st.links[link] == nil {
		st.links[link] = &rewriteCounters{}
	}
	return st.links[link]
}

// Stats are the counters of every link that has seen a response, and the map ("node": "host:port").
func (st *rewriteState) Stats() (map[string]RewriteStats, map[string]string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := map[string]RewriteStats{}
	for name, c := range st.links {
		out[name] = RewriteStats{c.rewritten.Load(), c.unmapped.Load(), c.failed.Load()}
	}
	adv := map[string]string{}
	for node, hp := range st.Advertise {
		adv[strconv.Itoa(int(node))] = hp.String()
	}
	return out, adv
}

// rewrite is the response the client gets for r: frame with the brokers' addresses replaced. false:
// it did not decode; the caller closes the client's connection (a response the proxy cannot read
// might carry a real address: the client reconnects through the proxy instead).
func (c *conn) rewrite(r *request, frame []byte) ([]byte, bool) {
	st := &c.p.Rewrite
	n := st.counters(c.link.Name)
	res, err := st.Advertise.Rewrite(r.h, frame)
	if err != nil {
		n.failed.Add(1)
		c.event(r, "rewrite-failed", map[string]any{"decode_error": err.Error()})
		return nil, false
	}
	if res.Changed {
		n.rewritten.Add(1)
		if r.h.APIKey == apiApiVersions {
			c.event(r, "api-hidden", map[string]any{"hidden": []string{"ShareFetch", "ShareAcknowledge"}})
		}
	}
	if len(res.Unmapped) > 0 {
		n.unmapped.Add(1)
		nodes := append([]int32(nil), res.Unmapped...)
		sort.Slice(nodes, func(i, j int) bool { return nodes[i] < nodes[j] })
		c.event(r, "unmapped-broker", map[string]any{"nodes": nodes})
	}
	return res.Frame, true
}
