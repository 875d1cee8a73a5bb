package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
)

const eventUsage = `Usage: ctlplane event stream [flags]

  stream   print the event stream (GET /v1/event/stream) as it comes, one
           JSON object a line: {"Index": N, "Events": [...]}; heartbeats
           are not printed. It runs until interrupted or until the server
           ends the stream (the reason is printed and the exit code is 1).

Flags of stream:
  -topic Topic[:Key]  repeatable: Deployment, Evaluation, Allocation, Job, Node,
                      ACLToken, ACLPolicy, ACLRole, ACLAuthMethod, ACLBindingRule, *
                      (default: every topic); Key "*" or absent: every key
  -namespace NS       the namespace of the events ("*": every namespace the token may read)
  -index N            start at the first event at or after Raft index N (0: the
                      oldest the server keeps)
`

// repeated is a flag that may be given many times.
type repeated []string

func (r *repeated) String() string     { return fmt.Sprint(*r) }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

func runEvent(args []string, stdout, stderr io.Writer) int {
	if len(args) < 1 || args[0] != "stream" {
		fmt.Fprint(stderr, eventUsage)
		return 1
	}
	flags := flag.NewFlagSet("event stream", flag.ContinueOnError)
	flags.SetOutput(stderr)
	client := clientFlags(flags)
	var topics repeated
	flags.Var(&topics, "topic", "Topic or Topic:Key (repeatable)")
	namespace := flags.String("namespace", "", "namespace of the events (\"*\": all readable)")
	index := flags.Uint64("index", 0, "Raft index to start at")
	if flags.Parse(args[1:]) != nil {
		return 1
	}
	if flags.NArg() > 0 {
		fmt.Fprintf(stderr, "Error: unexpected arguments %q\n\n%s", flags.Args(), eventUsage)
		return 1
	}
	q := url.Values{}
	for _, t := range topics {
		q.Add("topic", t)
	}
	if *namespace != "" {
		q.Set("namespace", *namespace)
	}
	q.Set("index", strconv.FormatUint(*index, 10))
	if err := streamEvents(client, q, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "Error: %v\n", err)
		return 1
	}
	return 0
}

// streamEvents copies the stream's lines to stdout until it ends.
func streamEvents(client *apiClient, q url.Values, stdout, stderr io.Writer) error {
	req, err := client.newRequest("GET", "/v1/event/stream?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	hc, err := client.http()
	if err != nil {
		return err
	}
	streaming := *hc
	streaming.Timeout = 0 // a stream has no end to wait for
	resp, err := streaming.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return fmt.Errorf("GET /v1/event/stream: %d %s", resp.StatusCode, msg)
	}
	if resp.Header.Get("X-Service-Event-Truncated") == "true" {
		fmt.Fprintf(stderr, "The index asked for is older than the server's event buffer: starting at its oldest, index %s\n",
			resp.Header.Get("X-Service-Event-Oldest-Index"))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var end struct{ Error string }
		if err := json.Unmarshal(line, &end); err != nil {
			return fmt.Errorf("the server sent a line that is not JSON: %w", err)
		}
		if end.Error != "" {
			return fmt.Errorf("the server ended the stream: %s", end.Error)
		}
		if string(line) == "{}" {
			continue // heartbeat
		}
		if _, err := fmt.Fprintf(stdout, "%s\n", line); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("the stream broke: %w", err)
	}
	return fmt.Errorf("the server closed the stream")
}
