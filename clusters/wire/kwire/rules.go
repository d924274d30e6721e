// Rules: which requests (link, API) get which action, and the registry of held requests that a
// rule's removal or a heal releases.
package main

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Actions a rule can take on the requests it matches.
const (
	ActHold         = "hold"
	ActDropResponse = "drop-response"
	ActError        = "error"
	UntilTimeout    = "timeout"
	UntilClientGone = "client-gone"
	maxHoldMs       = 24 * 3600 * 1000
)

// RuleSpec is a rule as the API takes it (JSON).
type RuleSpec struct {
	// Links the rule applies to (link names such as client-to-n1); empty = every link.
	Links []string `json:"links"`
	// APIs by name (EndTxn) or number ("26").
	APIs   []string `json:"apis"`
	Action string   `json:"action"`
	// hold: how long, from when the request arrived (until=timeout) or from when the client closed
	// its connection (until=client-gone).
	HoldMs int64  `json:"hold_ms"`
	Until  string `json:"until"`
	// error: the error code, by name (NOT_COORDINATOR) or number.
	Error string `json:"error"`
	// At most this many requests are matched (0: no limit).
	Count int `json:"count"`
	// Filters on the request's body (empty or null: any). A request whose body does not decode
	// matches no filtered rule.
	// Only requests of this transactional.id.
	TransactionalID string `json:"transactional_id"`
	// Only requests whose producer epoch is at least this.
	MinProducerEpoch *int32 `json:"min_producer_epoch"`
	// EndTxn: commit, abort, or any (default).
	Result string `json:"result"`
}

// Results an EndTxn filter takes.
const (
	ResultAny    = "any"
	ResultCommit = "commit"
	ResultAbort  = "abort"
)

// filterAPIs: the APIs whose decoded request bodies (requestBody) carry what each filter reads.
// The brokers' batched requests (WriteTxnMarkers, AddPartitionsToTxn v4+) pass when any entry does.
var filterAPIs = map[string][]int16{
	"transactional_id":   {apiEndTxn, apiAddOffsetsToTxn, apiAddPartitionsToTxn, apiTxnOffsetCommit, apiInitProducerId, apiProduce},
	"min_producer_epoch": {apiEndTxn, apiAddOffsetsToTxn, apiAddPartitionsToTxn, apiTxnOffsetCommit, apiWriteTxnMarkers},
	"result":             {apiEndTxn, apiWriteTxnMarkers},
}

// Rule is a validated rule.
type Rule struct {
	ID        int      `json:"id"`
	Spec      RuleSpec `json:"spec"`
	Matched   int      `json:"matched"`
	apis      map[int16]bool
	links     map[string]bool
	errorCode int16
}

// Validate checks spec against what the proxy can do and the links it has.
func Validate(spec RuleSpec, known map[string]bool) (*Rule, error) {
	r := &Rule{Spec: spec, apis: map[int16]bool{}, links: map[string]bool{}}
	var keys []int16 // the APIs in the order the spec names them (the first a filter cannot take is named)
	if len(spec.APIs) == 0 {
		return nil, fmt.Errorf("apis: name at least one API (e.g. EndTxn)")
	}
	for _, a := range spec.APIs {
		key, ok := APINames[a]
		if !ok {
			n, err := strconv.Atoi(a)
			if err != nil || n < 0 || n > 32767 {
				return nil, fmt.Errorf("apis: unknown API %q; use a number or one of %v", a, sortedKeys(APINames))
			}
			key = int16(n)
		}
		if spec.Action == ActError && !canSynthesize(key) {
			names := []string{}
			for _, k := range Synthesizable {
				names = append(names, APIName(k))
			}
			return nil, fmt.Errorf("apis: cannot synthesize a %s response; action error supports %v", APIName(key), names)
		}
		r.apis[key] = true
		keys = append(keys, key)
	}
	for _, l := range spec.Links {
		if !known[l] {
			return nil, fmt.Errorf("links: no link %q; links: %v", l, sortedKeys(known))
		}
		r.links[l] = true
	}
	switch spec.Action {
	case ActHold:
		if spec.Until == "" {
			r.Spec.Until = UntilTimeout
		} else if spec.Until != UntilTimeout && spec.Until != UntilClientGone {
			return nil, fmt.Errorf("until: %q; allowed: %s, %s", spec.Until, UntilTimeout, UntilClientGone)
		}
		if spec.HoldMs < 0 || spec.HoldMs > maxHoldMs {
			return nil, fmt.Errorf("hold_ms: %d; allowed 0..%d", spec.HoldMs, maxHoldMs)
		}
	case ActDropResponse:
	case ActError:
		code, ok := ErrorCodes[spec.Error]
		if !ok {
			n, err := strconv.Atoi(spec.Error)
			if err != nil || n < -1 || n > 32767 {
				return nil, fmt.Errorf("error: %q is not an error name or code; names: %v", spec.Error, sortedKeys(ErrorCodes))
			}
			code = int16(n)
		}
		r.errorCode = code
	default:
		return nil, fmt.Errorf("action: %q; allowed: %s, %s, %s", spec.Action, ActHold, ActDropResponse, ActError)
	}
	if spec.Count < 0 {
		return nil, fmt.Errorf("count: %d; allowed: 0 (no limit) or more", spec.Count)
	}
	switch spec.Result {
	case "", ResultAny:
		r.Spec.Result = ""
	case ResultCommit, ResultAbort:
	default:
		return nil, fmt.Errorf("result: %q; allowed: %s, %s, %s", spec.Result, ResultCommit, ResultAbort, ResultAny)
	}
	if e := spec.MinProducerEpoch; e != nil && (*e < 0 || *e > 32767) {
		return nil, fmt.Errorf("min_producer_epoch: %d; allowed 0..32767", *e)
	}
	for _, f := range []struct {
		name string
		set  bool
	}{{"transactional_id", spec.TransactionalID != ""}, {"min_producer_epoch", spec.MinProducerEpoch != nil},
		{"result", r.Spec.Result != ""}} {
		filter := f.name
		if !f.set {
			continue
		}
		for _, key := range keys {
			if !slices.Contains(filterAPIs[filter], key) {
				names := []string{}
				for _, k := range filterAPIs[filter] {
					names = append(names, APIName(k))
				}
				return nil, fmt.Errorf("%s: %s requests do not carry it; it filters %v", filter, APIName(key), names)
			}
		}
	}
	return r, nil
}

// idMatches: a transactional_id filter names one id, or with a trailing "*" every id that starts with
// what precedes it (a Kafka Streams app's ids: its application.id, then a process id it draws).
func idMatches(filter, id string) bool {
	if prefix, ok := strings.CutSuffix(filter, "*"); ok {
		return strings.HasPrefix(id, prefix)
	}
	return id == filter
}

// Filtered: the rule looks at request bodies.
func (r *Rule) Filtered() bool {
	return r.Spec.TransactionalID != "" || r.Spec.MinProducerEpoch != nil || r.Spec.Result != ""
}

// accepts: the decoded request (requestBody's details) passes every filter of the rule; a batched
// request (brokers.go) when one of its entries does.
func (r *Rule) accepts(d Details) bool {
	if entries, ok := d[batchKey].([]Details); ok {
		return slices.ContainsFunc(entries, r.acceptsOne)
	}
	return r.acceptsOne(d)
}

func (r *Rule) acceptsOne(d Details) bool {
	if s := r.Spec.TransactionalID; s != "" {
		if id, ok := d["transactional_id"].(string); !ok || !idMatches(s, id) {
			return false
		}
	}
	if m := r.Spec.MinProducerEpoch; m != nil {
		if e, ok := d["producer_epoch"].(int16); !ok || int32(e) < *m {
			return false
		}
	}
	if res := r.Spec.Result; res != "" {
		if committed, ok := d["committed"].(bool); !ok || committed != (res == ResultCommit) {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// heldReq is a request held by a rule: closed release delivers it at once.
type heldReq struct {
	rule    int
	release chan struct{}
	once    sync.Once
}

func (h *heldReq) free() { h.once.Do(func() { close(h.release) }) }

// Rules is the proxy's rule set and its held requests.
type Rules struct {
	mu    sync.Mutex
	next  int
	rules []*Rule
	held  map[*heldReq]bool
	known map[string]bool
}

func NewRules(links []string) *Rules {
	known := map[string]bool{}
	for _, l := range links {
		known[l] = true
	}
	return &Rules{next: 1, held: map[*heldReq]bool{}, known: known}
}

// Add validates and installs a rule.
func (rs *Rules) Add(spec RuleSpec) (*Rule, error) {
	r, err := Validate(spec, rs.known)
	if err != nil {
		return nil, err
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r.ID = rs.next
	rs.next++
	rs.rules = append(rs.rules, r)
	return r, nil
}

// Match is the first rule that takes a request of api on link (counting it), or nil. details is
// called (at most once is up to the caller) only when a rule with filters is considered: the
// request's decoded body, or nil when it does not decode, which no filtered rule takes.
func (rs *Rules) Match(link string, api int16, details func() Details) *Rule {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, r := range rs.rules {
		if !r.apis[api] || (len(r.links) > 0 && !r.links[link]) || (r.Spec.Count > 0 && r.Matched >= r.Spec.Count) {
			continue
		}
		if r.Filtered() {
			if d := details(); d == nil || !r.accepts(d) {
				continue
			}
		}
		r.Matched++
		cp := *r
		return &cp
	}
	return nil
}

// Hold registers a held request of rule id; nil when the rule is gone (deliver at once).
func (rs *Rules) Hold(id int) *heldReq {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, r := range rs.rules {
		if r.ID == id {
			h := &heldReq{rule: id, release: make(chan struct{})}
			rs.held[h] = true
			return h
		}
	}
	return nil
}

// Done forgets a held request (delivered or given up).
func (rs *Rules) Done(h *heldReq) {
	rs.mu.Lock()
	delete(rs.held, h)
	rs.mu.Unlock()
}

// Remove drops rule id and releases what it holds; false if there is no such rule.
func (rs *Rules) Remove(id int) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for i, r := range rs.rules {
		if r.ID == id {
			rs.rules = append(rs.rules[:i], rs.rules[i+1:]...)
			for h := range rs.held {
				if h.rule == id {
					h.free()
				}
			}
			return true
		}
	}
	return false
}

// Reset drops every rule and releases every held request; returns how many rules and held requests.
func (rs *Rules) Reset() (int, int) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	n, h := len(rs.rules), len(rs.held)
	rs.rules = nil
	for hr := range rs.held {
		hr.free()
	}
	return n, h
}

// Snapshot: the rules and how many requests are held now.
func (rs *Rules) Snapshot() ([]Rule, int) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out := make([]Rule, 0, len(rs.rules))
	for _, r := range rs.rules {
		out = append(out, *r)
	}
	return out, len(rs.held)
}

// waitHold blocks until a held request may go: hold_ms after arrival (until=timeout), or hold_ms
// after the client closed (until=client-gone), or at once when released (rule removed, heal).
func waitHold(r *Rule, h *heldReq, arrived time.Time, clientGone <-chan struct{}, goneAt func() time.Time) {
	if h == nil {
		return
	}
	hold := time.Duration(r.Spec.HoldMs) * time.Millisecond
	if r.Spec.Until == UntilClientGone {
		select {
		case <-clientGone:
		case <-h.release:
			return
		}
		arrived = goneAt()
	}
	t := time.NewTimer(time.Until(arrived.Add(hold)))
	defer t.Stop()
	select {
	case <-t.C:
	case <-h.release:
	}
}
