package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"text/tabwriter"

	ctlhttp "github.com/ctlplane/ctlplane/http"
)

const operatorUsage = `Usage: ctlplane operator raft <list-peers|remove-peer> [flags]

  list-peers [-stale]        show the servers of the Raft configuration
  remove-peer -id=ID         remove a server from the cluster
`

func runOperator(args []string, stdout, stderr io.Writer) int {
	if len(args) < 2 || args[0] != "raft" {
		fmt.Fprint(stderr, operatorUsage)
		return 1
	}
	flags := flag.NewFlagSet("operator raft "+args[1], flag.ContinueOnError)
	flags.SetOutput(stderr)
	client := clientFlags(flags)
	var err error
	switch args[1] {
	case "list-peers":
		stale := flags.Bool("stale", false, "let any server answer from its own state")
		if flags.Parse(args[2:]) != nil {
			return 1
		}
		err = listPeers(client, *stale, stdout)
	case "remove-peer":
		id := flags.String("id", "", "ID of the server to remove")
		if flags.Parse(args[2:]) != nil {
			return 1
		}
		if *id == "" {
			fmt.Fprintln(stderr, "Error: -id is required")
			return 1
		}
		err = removePeer(client, *id, stdout)
	default:
		fmt.Fprintf(stderr, "unknown operator raft command %q\n\n%s", args[1], operatorUsage)
		return 1
	}
	if err != nil {
		fmt.Fprintf(stderr, "Error: %v\n", err)
		return 1
	}
	return 0
}

func listPeers(c *apiClient, stale bool, stdout io.Writer) error {
	path := "/v1/operator/raft/configuration"
	if stale {
		path += "?stale"
	}
	resp, err := c.do("GET", path, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var conf ctlhttp.RaftConfiguration
	if err := json.NewDecoder(resp.Body).Decode(&conf); err != nil {
		return fmt.Errorf("bad answer: %w", err)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "Node\tID\tAddress\tState\tVoter\tRaftProtocol")
	for _, s := range conf.Servers {
		st := "follower"
		if s.Leader {
			st = "leader"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%t\t%s\n", s.Node, s.ID, s.Address, st, s.Voter, s.ProtocolVersion)
	}
	return tw.Flush()
}

func removePeer(c *apiClient, id string, stdout io.Writer) error {
	resp, err := c.do("DELETE", "/v1/operator/raft/peer?id="+url.QueryEscape(id), nil)
	if err != nil {
		return err
	}
	resp.Body.Close()
	fmt.Fprintf(stdout, "Removed peer with id %q\n", id)
	return nil
}
