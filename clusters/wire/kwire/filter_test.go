package main

import (
	"strings"
	"testing"
	"time"
)

// endTxnOf is an EndTxn request of transactional.id id at producer epoch epoch.
func endTxnOf(ver int16, corr int32, id string, epoch int16, commit bool) []byte {
	return mkRequest(apiEndTxn, ver, corr, "producer-1", func(e *Encoder, flex bool) {
		e.String(id, flex)
		e.Int64(9001)
		e.Int16(epoch)
		if commit {
			e.Int8(1)
		} else {
			e.Int8(0)
		}
		e.Tags(flex)
	})
}

// bodyOf is what Match's details callback gives for frame: its decoded body (nil if it does not decode).
func bodyOf(frame []byte) func() Details {
	return (&request{frame: frame}).filterDetails
}

func epochPtr(e int32) *int32 { return &e }

// truncated is frame without the last n bytes of its body, its size prefix fitted to what is left.
func truncated(frame []byte, n int) []byte {
	return (&Encoder{b: append([]byte{}, frame[4:len(frame)-n]...)}).Frame()
}

// The rule KAFKA-20090's scenario makes: only the abort of one transactional.id at 32766 or above.
var boundaryAbort = RuleSpec{APIs: []string{"EndTxn"}, Action: ActHold, HoldMs: 9000, Count: 1,
	TransactionalID: "eos-txn-producer-0", MinProducerEpoch: epochPtr(32766), Result: ResultAbort}

func TestAFilteredRuleTakesOnlyTheAbortOfItsIdAtTheBoundary(t *testing.T) {
	rs := NewRules([]string{"client-to-n1"})
	if _, err := rs.Add(boundaryAbort); err != nil {
		t.Fatal(err)
	}
	passes := map[string][]byte{
		"a commit at 32766":               endTxnOf(5, 1, "eos-txn-producer-0", 32766, true),
		"an abort at 32765":               endTxnOf(5, 2, "eos-txn-producer-0", 32765, false),
		"another id's abort at 32766":     endTxnOf(5, 3, "eos-txn-producer-1", 32766, false),
		"an abort at 32766, v1 (classic)": endTxnOf(1, 4, "eos-txn-producer-1", 32766, false),
	}
	for what, f := range passes {
		if rs.Match("client-to-n1", apiEndTxn, bodyOf(f)) != nil {
			t.Errorf("%s matched", what)
		}
	}
	if rules, _ := rs.Snapshot(); rules[0].Matched != 0 {
		t.Fatalf("requests the filter refused were counted: %d", rules[0].Matched)
	}
	if rs.Match("client-to-n1", apiEndTxn, bodyOf(endTxnOf(5, 5, "eos-txn-producer-0", 32766, false))) == nil {
		t.Fatal("the abort at 32766 must match")
	}
	if rs.Match("client-to-n1", apiEndTxn, bodyOf(endTxnOf(5, 6, "eos-txn-producer-0", 32767, false))) != nil {
		t.Fatal("count 1: the abort at 32767 after it must not")
	}
}

func TestFiltersReadTheirFieldFromEveryApiTheyTake(t *testing.T) {
	addOffsets := mkRequest(apiAddOffsetsToTxn, 3, 1, "c", func(e *Encoder, flex bool) {
		e.String("t-1", flex)
		e.Int64(1)
		e.Int16(40)
		e.String("group", flex)
		e.Tags(flex)
	})
	initPid := mkRequest(apiInitProducerId, 4, 2, "c", func(e *Encoder, flex bool) {
		e.String("t-1", flex)
		e.Int32(60000)
		e.Int64(-1)
		e.Int16(-1)
		e.Tags(flex)
	})
	cases := []struct {
		spec  RuleSpec
		api   int16
		frame []byte
		want  bool
	}{
		{RuleSpec{APIs: []string{"AddOffsetsToTxn"}, TransactionalID: "t-1", MinProducerEpoch: epochPtr(40)}, apiAddOffsetsToTxn, addOffsets, true},
		{RuleSpec{APIs: []string{"AddOffsetsToTxn"}, MinProducerEpoch: epochPtr(41)}, apiAddOffsetsToTxn, addOffsets, false},
		{RuleSpec{APIs: []string{"InitProducerId"}, TransactionalID: "t-1"}, apiInitProducerId, initPid, true},
		{RuleSpec{APIs: []string{"InitProducerId"}, TransactionalID: "t-2"}, apiInitProducerId, initPid, false},
		{RuleSpec{APIs: []string{"InitProducerId"}, TransactionalID: "t-*"}, apiInitProducerId, initPid, true},
		{RuleSpec{APIs: []string{"InitProducerId"}, TransactionalID: "t-1*"}, apiInitProducerId, initPid, true},
		{RuleSpec{APIs: []string{"InitProducerId"}, TransactionalID: "u-*"}, apiInitProducerId, initPid, false},
		{RuleSpec{APIs: []string{"InitProducerId"}, TransactionalID: "t-1-*"}, apiInitProducerId, initPid, false},
		{RuleSpec{APIs: []string{"EndTxn"}, Result: ResultAny, MinProducerEpoch: epochPtr(0)}, apiEndTxn, endTxn(3, 3, true), true},
		{RuleSpec{APIs: []string{"EndTxn"}, Result: ResultCommit}, apiEndTxn, endTxn(3, 3, true), true},
		{RuleSpec{APIs: []string{"EndTxn"}, Result: ResultAbort}, apiEndTxn, endTxn(3, 3, true), false},
	}
	for i, c := range cases {
		c.spec.Action = ActDropResponse
		rs := NewRules(nil)
		if _, err := rs.Add(c.spec); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if got := rs.Match("client-to-n1", c.api, bodyOf(c.frame)) != nil; got != c.want {
			t.Errorf("case %d (%+v): matched %v, want %v", i, c.spec, got, c.want)
		}
	}
}

func TestABodyThatDoesNotDecodeMatchesNoFilteredRule(t *testing.T) {
	rs := NewRules(nil)
	_, _ = rs.Add(RuleSpec{APIs: []string{"EndTxn"}, Action: ActHold, Result: ResultAbort})
	// the epoch's second byte, committed and the tags are gone
	if rs.Match("", apiEndTxn, bodyOf(truncated(endTxnOf(3, 1, "t", 1, false), 3))) != nil {
		t.Fatal("a truncated EndTxn matched a filtered rule")
	}
}

func TestFiltersAreRefusedOnApisThatCannotCarryThem(t *testing.T) {
	bad := map[string]RuleSpec{
		"result: Produce requests do not carry it":                 {APIs: []string{"Produce"}, Action: ActHold, Result: ResultCommit},
		"result: AddOffsetsToTxn requests do not carry it":         {APIs: []string{"EndTxn", "AddOffsetsToTxn"}, Action: ActHold, Result: ResultAbort},
		"min_producer_epoch: InitProducerId requests do not carry": {APIs: []string{"InitProducerId"}, Action: ActHold, MinProducerEpoch: epochPtr(1)},
		"transactional_id: Metadata requests do not carry it":      {APIs: []string{"Metadata"}, Action: ActHold, TransactionalID: "t"},
		`result: "maybe"; allowed: commit, abort, any`:             {APIs: []string{"EndTxn"}, Action: ActHold, Result: "maybe"},
		"min_producer_epoch: -1; allowed 0..32767":                 {APIs: []string{"EndTxn"}, Action: ActHold, MinProducerEpoch: epochPtr(-1)},
		"min_producer_epoch: 40000; allowed 0..32767":              {APIs: []string{"EndTxn"}, Action: ActHold, MinProducerEpoch: epochPtr(40000)},
	}
	for want, spec := range bad {
		if _, err := Validate(spec, map[string]bool{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want %q", spec, err, want)
		}
	}
	if r, err := Validate(RuleSpec{APIs: []string{"EndTxn"}, Action: ActHold, Result: ResultAny}, nil); err != nil || r.Filtered() {
		t.Fatalf("result any is no filter: %+v %v", r, err)
	}
}

func TestTheProxyHoldsOnlyTheFilteredRequestAndLogsTheAnswer(t *testing.T) {
	b := newFakeBroker(t)
	p, addr, logs := startProxy(t, b)
	spec := boundaryAbort
	spec.HoldMs, spec.Count = 300, 0 // no count: the truncated request below is put to the filter too
	if _, err := p.Rules.Add(spec); err != nil {
		t.Fatal(err)
	}
	c, r := dial(t, addr)
	start := time.Now()
	_, _ = c.Write(endTxnOf(3, 1, "eos-txn-producer-0", 32766, true)) // a commit: passes at once
	if ids, _ := responses(t, c, r, 1, time.Second); ids[0] != 1 || time.Since(start) > 200*time.Millisecond {
		t.Fatalf("the commit waited: %v after %v", ids, time.Since(start))
	}
	_, _ = c.Write(endTxnOf(3, 2, "eos-txn-producer-0", 32766, false)) // the abort: held
	if ids, _ := responses(t, c, r, 1, 2*time.Second); ids[0] != 2 || time.Since(start) < 280*time.Millisecond {
		t.Fatalf("the abort was not held: %v after %v", ids, time.Since(start))
	}
	m := logs.events("match")
	if len(m) != 1 || m[0]["correlation_id"] != float64(2) || m[0]["details"].(map[string]any)["producer_epoch"] != float64(32766) {
		t.Fatalf("match events %v", m)
	}
	_, _ = c.Write(truncated(endTxnOf(3, 3, "eos-txn-producer-0", 32766, false), 3)) // no filter can read it
	if ids, _ := responses(t, c, r, 1, time.Second); ids[0] != 3 {
		t.Fatalf("the undecodable request did not pass: %v", ids)
	}
	if u := logs.events("undecoded"); len(u) != 1 || !strings.Contains(u[0]["decode_error"].(string), "EndTxn v3 request body") {
		t.Fatalf("undecoded events %v", u)
	}
}

func TestResponsesCarryTheProducerIdAndEpochTheyAnswer(t *testing.T) {
	resp := func(api, ver int16, body func(e *Encoder)) []byte {
		e := &Encoder{}
		e.Int32(7)
		e.Tags(ResponseHeaderVersion(api, ver) == 1)
		e.Int32(0)
		body(e)
		e.Tags(ResponseHeaderVersion(api, ver) == 1)
		return e.Frame()
	}
	endTxnV5 := resp(apiEndTxn, 5, func(e *Encoder) { e.Int16(0); e.Int64(9001); e.Int16(32767) })
	got, ok := responseDetails(Header{APIKey: apiEndTxn, APIVersion: 5}, endTxnV5)
	if !ok || got["error"] != "NONE" || got["producer_id"] != int64(9001) || got["producer_epoch"] != int16(32767) {
		t.Fatalf("EndTxn v5: %v %v", got, ok)
	}
	initPid := resp(apiInitProducerId, 4, func(e *Encoder) { e.Int16(51); e.Int64(-1); e.Int16(-1) })
	if got, _ = responseDetails(Header{APIKey: apiInitProducerId, APIVersion: 4}, initPid); got["error"] != "CONCURRENT_TRANSACTIONS" || got["producer_epoch"] != int16(-1) {
		t.Fatalf("InitProducerId v4: %v", got)
	}
	endTxnV3 := resp(apiEndTxn, 3, func(e *Encoder) { e.Int16(90) })
	if got, _ = responseDetails(Header{APIKey: apiEndTxn, APIVersion: 3}, endTxnV3); got["error"] != "PRODUCER_FENCED" || len(got) != 1 {
		t.Fatalf("EndTxn v3 has no producer id or epoch: %v", got)
	}
	if _, ok = responseDetails(Header{APIKey: apiMetadata, APIVersion: 1}, endTxnV3); ok {
		t.Fatal("Metadata has no top-level error here")
	}
}

func TestTheApiRefusesAFilterItsApisCannotCarryAndShowsTheFiltersOfARule(t *testing.T) {
	p, _, _ := startProxy(t, newFakeBroker(t))
	srv := httptestServer(t, p)
	code, body := call(t, "POST", srv+"/rules", `{"apis": ["Produce"], "action": "hold", "result": "abort"}`)
	if code != 400 || !strings.Contains(body, "result: Produce requests do not carry it; it filters [EndTxn WriteTxnMarkers]") {
		t.Fatalf("%d %s", code, body)
	}
	code, _ = call(t, "POST", srv+"/rules", `{"apis": ["EndTxn"], "action": "hold", "transactional_id": "t", "min_producer_epoch": 32766, "result": "abort"}`)
	if code != 201 {
		t.Fatal(code)
	}
	if _, body = call(t, "GET", srv+"/rules", ""); !strings.Contains(body, `"transactional_id":"t","min_producer_epoch":32766,"result":"abort"`) {
		t.Fatal(body)
	}
}
