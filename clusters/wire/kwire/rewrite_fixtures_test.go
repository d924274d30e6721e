package main

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// fixtureMap is the proxy map testdata/GenResponses.java wrote the wanted responses with.
var fixtureMap = Advertised{1: {"127.0.0.1", 39092}, 2: {"127.0.0.1", 39094}, 3: {"127.0.0.1", 39096}}

var fixtureName = regexp.MustCompile(`^([a-z-]+)-(\d+)-v(\d+)\.in\.hex$`)

func readHex(t testing.TB, path string) []byte {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := hex.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return b
}

type fixture struct {
	name    string
	h       Header
	in      []byte
	want    []byte
	changes bool
}

func fixtures(t testing.TB) []fixture {
	files, _ := filepath.Glob(filepath.Join("testdata", "responses", "*.in.hex"))
	var out []fixture
	for _, f := range files {
		m := fixtureName.FindStringSubmatch(filepath.Base(f))
		if m == nil {
			t.Fatalf("fixture %s: expected NAME-APIKEY-vVERSION.in.hex", f)
		}
		key, _ := strconv.Atoi(m[2])
		ver, _ := strconv.Atoi(m[3])
		in := readHex(t, f)
		want := readHex(t, strings.TrimSuffix(f, ".in.hex")+".want.hex")
		out = append(out, fixture{m[1] + " v" + m[3], Header{APIKey: int16(key), APIVersion: int16(ver), CorrelationID: 0x01020304},
			in, want, !bytes.Equal(in, want)})
	}
	return out
}

// Kafka's own bytes (the pinned kafka-clients' message classes, testdata/GenResponses.java): the
// rewrite of what a broker writes is what Kafka writes with the proxy's addresses, byte for byte,
// at every version of every response that carries a broker's address.
func TestKafkaEncodedResponsesRewriteToWhatKafkaWrites(t *testing.T) {
	all := fixtures(t)
	perAPI := map[int16]int{}
	for _, f := range all {
		perAPI[f.h.APIKey]++
		got, err := fixtureMap.Rewrite(f.h, f.in)
		if err != nil {
			t.Errorf("%s: %v", f.name, err)
			continue
		}
		if !bytes.Equal(got.Frame, f.want) {
			t.Errorf("%s: rewritten\n%x\nwant\n%x", f.name, got.Frame, f.want)
		}
		if got.Changed != f.changes {
			t.Errorf("%s: changed=%v, want %v", f.name, got.Changed, f.changes)
		}
		if !got.Changed && &got.Frame[0] != &f.in[0] {
			t.Errorf("%s: unchanged, but copied", f.name)
		}
	}
	// every version of the pinned release: Metadata 0-13, FindCoordinator 0-6, DescribeCluster 0-2
	// (and 1-2 for controllers), Produce 3-13, Fetch 4-18, ApiVersions 0-5
	want := map[int16]int{apiMetadata: 14, apiFindCoordinator: 7, apiDescribeCluster: 5, apiProduce: 11, apiFetch: 15,
		apiApiVersions: 6}
	for k, n := range want {
		if perAPI[k] < n {
			t.Errorf("%s: %d fixtures, want at least %d (run testdata/GenResponses.java)", APIName(k), perAPI[k], n)
		}
	}
}

// Node 9 in the Fetch fixtures is not in the map: it is named, and given a host that never resolves.
func TestAnUnknownNodeGetsAnInvalidHostAndIsReported(t *testing.T) {
	for _, f := range fixtures(t) {
		if f.h.APIKey != apiFetch || f.h.APIVersion < 16 {
			continue
		}
		got, err := fixtureMap.Rewrite(f.h, f.in)
		if err != nil || len(got.Unmapped) != 1 || got.Unmapped[0] != 9 {
			t.Fatalf("%s: unmapped %v, err %v; want [9]", f.name, got.Unmapped, err)
		}
		if !bytes.Contains(got.Frame, []byte("unmapped-node-9.invalid")) || bytes.Contains(got.Frame, []byte("staging")) {
			t.Fatalf("%s: a real host is left: %q", f.name, got.Frame)
		}
	}
}

// A response cut inside a broker's address, or one with bytes after the body the proxy walks to its
// end (Produce, Fetch), is an error: never a response with a real address forwarded.
func TestAResponseThatDoesNotDecodeIsAnError(t *testing.T) {
	for _, f := range fixtures(t) {
		if !f.changes {
			continue
		}
		bad := [][]byte{}
		if at := bytes.Index(f.in, []byte("staging")); at > 0 {
			bad = append(bad, f.in[:at])
		}
		if f.h.APIKey == apiProduce || f.h.APIKey == apiFetch {
			bad = append(bad, append(append([]byte(nil), f.in...), 0, 0))
		}
		for _, b := range bad {
			if _, err := fixtureMap.Rewrite(f.h, b); err == nil {
				t.Errorf("%s: %d bytes instead of %d rewrote without an error", f.name, len(b), len(f.in))
			}
		}
	}
}

// Without a map (the built-in backends) and for every other API, responses pass untouched, uncopied.
func TestOtherResponsesPassUntouched(t *testing.T) {
	frame := []byte{0, 0, 0, 6, 1, 2, 3, 4, 0, 0}
	for _, key := range []int16{apiInitProducerId, apiEndTxn, 2, 8, 9, 11, 55} {
		got, err := fixtureMap.Rewrite(Header{APIKey: key, APIVersion: 3}, frame)
		if err != nil || got.Changed || &got.Frame[0] != &frame[0] {
			t.Fatalf("%s: changed=%v err=%v", APIName(key), got.Changed, err)
		}
	}
}

func BenchmarkRewrite(b *testing.B) {
	for _, f := range fixtures(b) {
		if !strings.HasSuffix(f.name, " v13") && !strings.HasSuffix(f.name, " v18") && !strings.HasSuffix(f.name, " v6") {
			continue
		}
		b.Run(strings.ReplaceAll(f.name, " ", "-"), func(b *testing.B) {
			b.SetBytes(int64(len(f.in)))
			for i := 0; i < b.N; i++ {
				_, _ = fixtureMap.Rewrite(f.h, f.in)
			}
		})
	}
}
