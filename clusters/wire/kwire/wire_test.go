package main

import (
	"bytes"
	"encoding/hex"
	"testing"
)

// mkRequest builds a request frame: header v1 (or v2 with an empty tag section when flexible), then body.
func mkRequest(api, ver int16, corr int32, clientID string, body func(e *Encoder, flex bool)) []byte {
	flex, _ := Flexible(api, ver)
	e := &Encoder{}
	e.Int16(api)
	e.Int16(ver)
	e.Int32(corr)
	e.String(clientID, false) // client id is never compact
	e.Tags(flex)
	if body != nil {
		body(e, flex)
	}
	return e.Frame()
}

func endTxn(ver int16, corr int32, commit bool) []byte {
	return mkRequest(apiEndTxn, ver, corr, "rdkafka", func(e *Encoder, flex bool) {
		e.String("txn-1", flex)
		e.Int64(4242)
		e.Int16(7)
		if commit {
			e.Int8(1)
		} else {
			e.Int8(0)
		}
		e.Tags(flex)
	})
}

func TestReadFrameAndHeaderV1(t *testing.T) {
	f := endTxn(1, 99, true)
	got, err := ReadFrame(bytes.NewReader(f), nil)
	if err != nil || !bytes.Equal(got, f) {
		t.Fatalf("ReadFrame = %x, %v", got, err)
	}
	h, err := ParseHeader(got, true)
	if err != nil || h.APIKey != apiEndTxn || h.APIVersion != 1 || h.CorrelationID != 99 || *h.ClientID != "rdkafka" {
		t.Fatalf("header = %+v, %v", h, err)
	}
	if h.BodyAt != 12+2+7 {
		t.Fatalf("body at %d, want %d (v1 has no tag section)", h.BodyAt, 21)
	}
}

func TestHeaderV2SkipsTaggedFields(t *testing.T) {
	// EndTxn v3 is flexible: request header v2 carries a tag section after the (non-compact) client id.
	e := &Encoder{}
	e.Int16(apiEndTxn)
	e.Int16(3)
	e.Int32(5)
	e.String("c", false)
	e.Uvarint(1) // one tagged field
	e.Uvarint(0) // tag 0
	e.Uvarint(2) // 2 bytes
	e.Int16(-1)
	e.String("txn-1", true)
	e.Int64(1)
	e.Int16(2)
	e.Int8(1)
	e.Tags(true)
	f := e.Frame()
	h, err := ParseHeader(f, true)
	if err != nil {
		t.Fatal(err)
	}
	d, _, _, err := requestBody(h, f)
	if err != nil || d["transactional_id"] != "txn-1" || d["committed"] != true || d["producer_epoch"] != int16(2) {
		t.Fatalf("details %v, %v", d, err)
	}
}

func TestRejectsBadFrames(t *testing.T) {
	if _, err := ReadFrame(bytes.NewReader([]byte{0x7f, 0xff, 0xff, 0xff}), nil); err == nil {
		t.Fatal("a 2 GiB frame must be refused")
	}
	if _, err := ReadFrame(bytes.NewReader([]byte{0, 0, 0, 9, 1, 2}), nil); err == nil {
		t.Fatal("a truncated frame must fail")
	}
	if _, err := ParseHeader([]byte{0, 0, 0, 2, 0, 1}, false); err == nil {
		t.Fatal("a frame shorter than a header must fail")
	}
}

func TestResponseHeaderVersions(t *testing.T) {
	cases := []struct {
		api, ver int16
		want     int
	}{{apiEndTxn, 2, 0}, {apiEndTxn, 3, 1}, {apiInitProducerId, 1, 0}, {apiInitProducerId, 2, 1},
		{apiProduce, 8, 0}, {apiProduce, 9, 1}, {apiApiVersions, 3, 0}, {apiApiVersions, 4, 0}}
	for _, c := range cases {
		if got := ResponseHeaderVersion(c.api, c.ver); got != c.want {
			t.Errorf("%s v%d: header v%d, want v%d", APIName(c.api), c.ver, got, c.want)
		}
	}
}

func synth(t *testing.T, f []byte, code int16) string {
	t.Helper()
	h, err := ParseHeader(f, true)
	if err != nil {
		t.Fatal(err)
	}
	_, _, topics, err := requestBody(h, f)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Synthesize(h, topics, code)
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(out)
}

func TestSynthesizedResponsesByteForByte(t *testing.T) {
	cases := []struct {
		name string
		f    []byte
		code int16
		want string
	}{
		// size | corr | throttle | error
		{"EndTxn v1 (header v0)", endTxn(1, 7, true), 51, "0000000a" + "00000007" + "00000000" + "0033"},
		// size | corr | tags(0) | throttle | error | tags(0)
		{"EndTxn v3 (header v1)", endTxn(3, 7, true), 16, "0000000c" + "00000007" + "00" + "00000000" + "0010" + "00"},
		// v5 adds producer id and epoch (-1: unknown)
		{"EndTxn v5", endTxn(5, 7, false), 16, "00000016" + "00000007" + "00" + "00000000" + "0010" + "ffffffffffffffff" + "ffff" + "00"},
		{"InitProducerId v1", mkRequest(apiInitProducerId, 1, 3, "c", func(e *Encoder, flex bool) {
			e.String("t", flex)
			e.Int32(60000)
		}), 15, "00000014" + "00000003" + "00000000" + "000f" + "ffffffffffffffff" + "ffff"},
		{"AddOffsetsToTxn v3", mkRequest(apiAddOffsetsToTxn, 3, 4, "c", func(e *Encoder, flex bool) {
			e.String("t", flex)
			e.Int64(1)
			e.Int16(0)
			e.String("g", flex)
			e.Tags(flex)
		}), 51, "0000000c" + "00000004" + "00" + "00000000" + "0033" + "00"},
		// throttle | [topic "a" [p0 err, p2 err]] (compact, with tag sections)
		{"AddPartitionsToTxn v3", mkRequest(apiAddPartitionsToTxn, 3, 5, "c", func(e *Encoder, flex bool) {
			e.String("t", flex)
			e.Int64(1)
			e.Int16(0)
			e.ArrayLen(1, flex)
			e.String("a", flex)
			e.ArrayLen(2, flex)
			e.Int32(0)
			e.Int32(2)
			e.Tags(flex)
			e.Tags(flex)
		}), 51, "0000001d" + "00000005" + "00" + "00000000" + "02" + "0261" + "03" + "00000000" + "0033" + "00" + "00000002" + "0033" + "00" + "00" + "00"},
		{"AddPartitionsToTxn v1", mkRequest(apiAddPartitionsToTxn, 1, 5, "c", func(e *Encoder, flex bool) {
			e.String("t", flex)
			e.Int64(1)
			e.Int16(0)
			e.ArrayLen(1, flex)
			e.String("a", flex)
			e.ArrayLen(1, flex)
			e.Int32(3)
		}), 51, "00000019" + "00000005" + "00000000" + "00000001" + "00016100000001" + "00000003" + "0033"},
		{"TxnOffsetCommit v3", mkRequest(apiTxnOffsetCommit, 3, 6, "c", func(e *Encoder, flex bool) {
			e.String("t", flex)
			e.String("g", flex)
			e.Int64(1)
			e.Int16(0)
			e.Int32(5)
			e.String("m", flex)
			e.NullString(flex)
			e.ArrayLen(1, flex)
			e.String("in", flex)
			e.ArrayLen(1, flex)
			e.Int32(4)
			e.Int64(100)
			e.Int32(-1)
			e.NullString(flex)
			e.Tags(flex)
			e.Tags(flex)
			e.Tags(flex)
		}), 16, "00000017" + "00000006" + "00" + "00000000" + "02" + "03696e" + "02" + "00000004" + "0010" + "00" + "00" + "00"},
		// Produce v9: [topic [partition, error, base offset, append time, start offset, record errors, message, tags], tags], throttle, tags
		{"Produce v9", mkRequest(apiProduce, 9, 8, "c", func(e *Encoder, flex bool) {
			e.String("t", flex)
			e.Int16(-1)
			e.Int32(30000)
			e.ArrayLen(1, flex)
			e.String("a", flex)
			e.ArrayLen(1, flex)
			e.Int32(1)
			e.Uvarint(4) // 3 bytes of records
			e.b = append(e.b, 1, 2, 3)
			e.Tags(flex)
			e.Tags(flex)
			e.Tags(flex)
		}), 6, "00000030" + "00000008" + "00" + "02" + "0261" + "02" + "00000001" + "0006" + "ffffffffffffffff" + "ffffffffffffffff" + "ffffffffffffffff" + "01" + "00" + "00" + "00" + "00000000" + "00"},
	}
	for _, c := range cases {
		if got := synth(t, c.f, c.code); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}

func TestProduceAcksZeroHasNoResponse(t *testing.T) {
	f := mkRequest(apiProduce, 7, 1, "c", func(e *Encoder, flex bool) {
		e.NullString(flex)
		e.Int16(0)
		e.Int32(1000)
		e.ArrayLen(0, flex)
	})
	h, _ := ParseHeader(f, true)
	_, none, _, err := requestBody(h, f)
	if err != nil || !none {
		t.Fatalf("acks=0: noResponse=%v err=%v", none, err)
	}
}

func TestRuleValidation(t *testing.T) {
	known := map[string]bool{"client-to-n1": true}
	bad := []RuleSpec{
		{APIs: []string{"Metadata"}, Action: ActError, Error: "NOT_COORDINATOR"}, // not synthesizable
		{APIs: []string{"EndTxn"}, Action: ActError, Error: "NO_SUCH_ERROR"},
		{APIs: []string{"Nope"}, Action: ActHold},
		{APIs: []string{}, Action: ActHold},
		{APIs: []string{"EndTxn"}, Action: "delay"},
		{APIs: []string{"EndTxn"}, Action: ActHold, Until: "later"},
		{APIs: []string{"EndTxn"}, Action: ActHold, Links: []string{"client-to-n9"}},
		{APIs: []string{"EndTxn"}, Action: ActHold, HoldMs: -1},
	}
	for _, s := range bad {
		if _, err := Validate(s, known); err == nil {
			t.Errorf("%+v must be refused", s)
		}
	}
	r, err := Validate(RuleSpec{APIs: []string{"EndTxn", "24"}, Action: ActError, Error: "CONCURRENT_TRANSACTIONS"}, known)
	if err != nil || !r.apis[apiEndTxn] || !r.apis[apiAddPartitionsToTxn] || r.errorCode != 51 {
		t.Fatalf("valid rule: %+v %v", r, err)
	}
	if r, _ := Validate(RuleSpec{APIs: []string{"EndTxn"}, Action: ActHold}, known); r.Spec.Until != UntilTimeout {
		t.Fatalf("until defaults to timeout, got %q", r.Spec.Until)
	}
}

// nothing: the details of a request a test's unfiltered rules never ask for.
func nothing() Details { panic("an unfiltered rule decoded the body") }

func TestRuleCountAndLinks(t *testing.T) {
	rs := NewRules([]string{"client-to-n1", "client-to-n2"})
	if _, err := rs.Add(RuleSpec{APIs: []string{"EndTxn"}, Action: ActDropResponse, Links: []string{"client-to-n2"}, Count: 1}); err != nil {
		t.Fatal(err)
	}
	if rs.Match("client-to-n1", apiEndTxn, nothing) != nil {
		t.Fatal("another link must not match")
	}
	if rs.Match("client-to-n2", apiProduce, nothing) != nil {
		t.Fatal("another API must not match")
	}
	if rs.Match("client-to-n2", apiEndTxn, nothing) == nil || rs.Match("client-to-n2", apiEndTxn, nothing) != nil {
		t.Fatal("count 1 matches exactly once")
	}
}
