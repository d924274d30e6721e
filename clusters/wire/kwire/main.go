// kwire: a Kafka-protocol-aware TCP proxy for fault injection (eos-chaos, docs/WIRE-FAULTS.md).
//
//	kwire -api 127.10.0.253:18475 -events wire.log \
//	      -link client-to-n1=127.10.250.1:19092=127.10.1.1:19092 [-link ...]
//	      [-advertise 1=127.0.0.1:39092 ...]    (rewrite broker addresses in responses: rewrite.go)
//	kwire -ping http://127.0.0.1:18475      (exit 0 if that API answers: a container healthcheck)
//
// Every link passes requests through unchanged until a rule (added over the HTTP API) matches a
// request's API on that link: then it is held, its response dropped, or an error answered.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

const version = "2"

type linkFlags []string

func (l *linkFlags) String() string     { return strings.Join(*l, " ") }
func (l *linkFlags) Set(v string) error { *l = append(*l, v); return nil }

// parseLink reads NAME=LISTEN=UPSTREAM.
func parseLink(s string) (*Link, error) {
	parts := strings.Split(s, "=")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return nil, fmt.Errorf("-link %q: expected NAME=LISTEN_HOST:PORT=UPSTREAM_HOST:PORT", s)
	}
	return &Link{Name: parts[0], Listen: parts[1], Upstream: parts[2]}, nil
}

func main() {
	var links linkFlags
	api := flag.String("api", "127.0.0.1:18475", "address of the HTTP control API")
	events := flag.String("events", "", "event log file (JSON lines); default stdout")
	flag.Var(&links, "link", "NAME=LISTEN=UPSTREAM (repeatable)")
	var advertise linkFlags
	flag.Var(&advertise, "advertise", "NODE=HOST:PORT: the address clients must see for broker NODE (repeatable; any turns rewriting on)")
	ping := flag.String("ping", "", "only ask the API at this URL for its version: exit 0 if it answers (a container healthcheck)")
	flag.Parse()
	if *ping != "" {
		c := http.Client{Timeout: 2 * time.Second}
		resp, err := c.Get(strings.TrimRight(*ping, "/") + "/version")
		if err != nil || resp.StatusCode != 200 {
			fmt.Fprintf(os.Stderr, "kwire: %s does not answer: %v\n", *ping, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if len(links) == 0 {
		fmt.Fprintln(os.Stderr, "kwire: at least one -link NAME=LISTEN=UPSTREAM is needed")
		os.Exit(2)
	}
	ev := &Events{w: os.Stdout}
	if *events != "" {
		f, err := os.OpenFile(*events, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintf(os.Stderr, "kwire: event log: %v\n", err)
			os.Exit(2)
		}
		ev.w = f
	}
	p := &Proxy{Events: ev}
	var names []string
	for _, s := range links {
		l, err := parseLink(s)
		if err != nil {
			fmt.Fprintln(os.Stderr, "kwire:", err)
			os.Exit(2)
		}
		p.Links = append(p.Links, l)
		names = append(names, l.Name)
	}
	p.Rules = NewRules(names)
	if err := p.Rewrite.parse(advertise); err != nil {
		fmt.Fprintln(os.Stderr, "kwire:", err)
		os.Exit(2)
	}
	// Bind everything before serving anything: a busy address fails the start, not a later request.
	lns := make([]net.Listener, len(p.Links))
	for i, l := range p.Links {
		ln, err := net.Listen("tcp", l.Listen)
		if err != nil {
			fmt.Fprintf(os.Stderr, "kwire: link %s: %v\n", l.Name, err)
			os.Exit(2)
		}
		lns[i] = ln
	}
	apiLn, err := net.Listen("tcp", *api)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kwire: API: %v\n", err)
		os.Exit(2)
	}
	for i, l := range p.Links {
		go p.Serve(l, lns[i])
	}
	log.Printf("kwire %s: API on %s, %d links", version, *api, len(p.Links))
	log.Fatal(http.Serve(apiLn, p.Handler()))
}

// Handler is the control API:
//
//	GET    /version
//	GET    /rules            the rules, with how many requests each matched
//	POST   /rules            add a rule (RuleSpec JSON) -> {"id": N}; 400 with the reason if invalid
//	DELETE /rules/{id}       remove it and deliver what it holds
//	POST   /reset            remove every rule and deliver everything held -> {"rules": n, "released": m}
//	GET    /stats            per-link counters, rules, requests held now, the address map and
//	                         per-link rewriting counters
func (p *Proxy) Handler() http.Handler {
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, 200, map[string]string{"version": version})
	})
	mux.HandleFunc("GET /rules", func(w http.ResponseWriter, _ *http.Request) {
		rules, _ := p.Rules.Snapshot()
		reply(w, 200, rules)
	})
	mux.HandleFunc("POST /rules", func(w http.ResponseWriter, r *http.Request) {
		var spec RuleSpec
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&spec); err != nil {
			reply(w, 400, map[string]string{"error": "rule: " + err.Error()})
			return
		}
		rule, err := p.Rules.Add(spec)
		if err != nil {
			reply(w, 400, map[string]string{"error": err.Error()})
			return
		}
		p.Events.Write(map[string]any{"event": "rule-added", "rule": rule.ID, "spec": rule.Spec})
		reply(w, 201, map[string]int{"id": rule.ID})
	})
	mux.HandleFunc("DELETE /rules/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.Atoi(r.PathValue("id"))
		if err != nil || !p.Rules.Remove(id) {
			reply(w, 404, map[string]string{"error": fmt.Sprintf("no rule %q", r.PathValue("id"))})
			return
		}
		p.Events.Write(map[string]any{"event": "rule-removed", "rule": id})
		reply(w, 200, map[string]int{"id": id})
	})
	mux.HandleFunc("POST /reset", func(w http.ResponseWriter, _ *http.Request) {
		n, held := p.Rules.Reset()
		p.Events.Write(map[string]any{"event": "reset", "rules": n, "released": held})
		reply(w, 200, map[string]int{"rules": n, "released": held})
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		rules, held := p.Rules.Snapshot()
		links := map[string]LinkStats{}
		for _, l := range p.Links {
			links[l.Name] = l.Stats()
		}
		rewrite, adv := p.Rewrite.Stats()
		reply(w, 200, map[string]any{"links": links, "rules": rules, "held": held, "advertise": adv, "rewrite": rewrite})
	})
	return mux
}
