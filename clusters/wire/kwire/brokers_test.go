package main

import "testing"

// marker is one WriteTxnMarkers entry: a transaction's producer id, epoch and result.
type marker struct {
	pid    int64
	epoch  int16
	commit bool
}

// writeTxnMarkers is the request a coordinator sends a partition leader, one entry per marker.
func writeTxnMarkers(ver int16, corr int32, markers ...marker) []byte {
	return mkRequest(apiWriteTxnMarkers, ver, corr, "broker-2-txn-marker-sender", func(e *Encoder, flex bool) {
		e.ArrayLen(len(markers), flex)
		for _, m := range markers {
			e.Int64(m.pid)
			e.Int16(m.epoch)
			if m.commit {
				e.Int8(1)
			} else {
				e.Int8(0)
			}
			e.ArrayLen(1, flex)
			e.String("eos-a", flex)
			e.ArrayLen(2, flex)
			e.Int32(0)
			e.Int32(3)
			e.Tags(flex)
			e.Int32(11) // coordinator epoch
			if ver >= 2 {
				e.Int8(2)
			}
			e.Tags(flex)
		}
		e.Tags(flex)
	})
}

// verifyTxn is a partition leader's AddPartitionsToTxn v4+ to the coordinator (KIP-890 verification).
func verifyTxn(ver int16, corr int32, id string, epoch int16) []byte {
	return mkRequest(apiAddPartitionsToTxn, ver, corr, "broker-1-txn-verifier", func(e *Encoder, flex bool) {
		e.ArrayLen(1, flex)
		e.String(id, flex)
		e.Int64(77)
		e.Int16(epoch)
		e.Int8(1) // verify only
		e.ArrayLen(1, flex)
		e.String("eos-a", flex)
		e.ArrayLen(1, flex)
		e.Int32(2)
		e.Tags(flex)
		e.Tags(flex)
		e.Tags(flex)
	})
}

func TestWriteTxnMarkersDecodeEveryMarker(t *testing.T) {
	for _, ver := range []int16{1, 2} {
		r := &request{frame: writeTxnMarkers(ver, 3, marker{5, 1, true}, marker{6, 4, false})}
		d := r.filterDetails()
		if d == nil {
			t.Fatalf("v%d: %v", ver, r.decodeErr)
		}
		entries := d[batchKey].([]Details)
		if len(entries) != 2 || entries[1]["producer_id"] != int64(6) || entries[1]["committed"] != false ||
			entries[0]["coordinator_epoch"] != int32(11) || len(entries[0]["topics"].(map[string][]int32)["eos-a"]) != 2 {
			t.Fatalf("v%d: %v", ver, entries)
		}
	}
}

func TestARuleBetweenBrokersTakesTheMarkerItsFiltersPick(t *testing.T) {
	rs := NewRules([]string{"n2-to-n1-internal", "n2-to-n2-internal"})
	spec := RuleSpec{Links: []string{"n2-to-n1-internal"}, APIs: []string{"WriteTxnMarkers"}, Action: ActHold,
		HoldMs: 1000, Result: ResultAbort, MinProducerEpoch: epochPtr(3)}
	if _, err := rs.Add(spec); err != nil {
		t.Fatal(err)
	}
	for what, f := range map[string][]byte{
		"commits only":        writeTxnMarkers(1, 1, marker{5, 9, true}),
		"an abort at epoch 2": writeTxnMarkers(1, 2, marker{5, 2, false}, marker{6, 9, true}),
		"a truncated body":    truncated(writeTxnMarkers(1, 3, marker{5, 9, false}), 3),
	} {
		if rs.Match("n2-to-n1-internal", apiWriteTxnMarkers, bodyOf(f)) != nil {
			t.Errorf("%s matched", what)
		}
	}
	batch := writeTxnMarkers(2, 4, marker{5, 9, true}, marker{6, 3, false})
	if rs.Match("n2-to-n2-internal", apiWriteTxnMarkers, bodyOf(batch)) != nil {
		t.Error("a rule on n2-to-n1-internal matched the coordinator's link to itself")
	}
	if rs.Match("n2-to-n1-internal", apiWriteTxnMarkers, bodyOf(batch)) == nil {
		t.Error("a batch with one abort at epoch 3 must match")
	}
}

func TestVerificationBetweenBrokersFiltersOnTheTransactionalID(t *testing.T) {
	rs := NewRules([]string{"n1-to-n2-internal"})
	if _, err := rs.Add(RuleSpec{APIs: []string{"AddPartitionsToTxn"}, Action: ActDropResponse,
		TransactionalID: "eos-txn-producer-0"}); err != nil {
		t.Fatal(err)
	}
	if rs.Match("n1-to-n2-internal", apiAddPartitionsToTxn, bodyOf(verifyTxn(4, 1, "other", 0))) != nil {
		t.Error("another id's verification matched")
	}
	if rs.Match("n1-to-n2-internal", apiAddPartitionsToTxn, bodyOf(verifyTxn(5, 2, "eos-txn-producer-0", 0))) == nil {
		t.Error("the id's verification (v5) must match")
	}
}

func TestWriteTxnMarkersTakesNoTransactionalIDFilter(t *testing.T) {
	_, err := Validate(RuleSpec{APIs: []string{"WriteTxnMarkers"}, Action: ActHold, TransactionalID: "x"}, nil)
	if err == nil {
		t.Fatal("a transactional_id filter on WriteTxnMarkers (which carries no id) was accepted")
	}
}
