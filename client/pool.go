package client

import (
	"context"
	"fmt"
	"sync"
)

// StartPool starts n simulated nodes from base, named <base.NodeName>-<i>
// ("dev-node-<i>" when base.NodeName is empty), each with a new node ID.
// They register in the background (see Client.Registered) and run until
// ctx ends; wg (optional) tracks their Run goroutines. All of them share
// one HTTP connection pool unless base.HTTPClient says otherwise.
func StartPool(ctx context.Context, n int, base Config, wg *sync.WaitGroup) ([]*Client, error) {
	prefix := base.NodeName
	if prefix == "" {
		prefix = "dev-node"
	}
	clients := make([]*Client, 0, n)
	for i := range n {
		cfg := base
		cfg.NodeID = ""
		cfg.NodeName = fmt.Sprintf("%s-%d", prefix, i)
		c, err := New(cfg)
		if err != nil {
			return nil, err
		}
		clients = append(clients, c)
	}
	for _, c := range clients {
		if wg != nil {
			wg.Add(1)
		}
		go func() {
			if wg != nil {
				defer wg.Done()
			}
			if err := c.Run(ctx); err != nil && ctx.Err() == nil {
				c.logger.Error("client node stopped", "error", err)
			}
		}()
	}
	return clients, nil
}
