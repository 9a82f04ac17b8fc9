// Package kafkalab gives the lab's commands a Kafka to run on when there is
// none: franz-go's in-process cluster (kfake), which speaks the real
// protocol (topics and partitions, consumer groups and their rebalances,
// committed offsets, transactions) on real TCP ports, so the child processes
// of a scenario or a bench connect to it exactly as they would to a real
// cluster. It keeps everything in memory and is gone when the command ends.
//
// KAFKA_BROKERS, when set, wins: the commands then run on that cluster.
package kafkalab

import (
	"context"
	"fmt"
	"net"
	"strings"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/orderpaid/orderpaid/internal/lab/childproc"
)

// Cluster is an in-process Kafka-protocol cluster of one broker.
type Cluster struct {
	c *kfake.Cluster
	// stopReaper ends the ghost reaper (ghosts.go).
	stopReaper context.CancelFunc
}

// Start starts a cluster on a free port of 127.0.0.1, below the ephemeral
// range as every port the lab picks (childproc.FreeAddr), with its ghost
// reaper (ghosts.go).
func Start() (*Cluster, error) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ListenFn(listenFree))
	if err != nil {
		return nil, fmt.Errorf("start an in-process Kafka cluster: %w", err)
	}
	seen := &memberSeen{}
	seen.watch(c)
	ctx, stop := context.WithCancel(context.Background())
	go reapGhosts(ctx, c.ListenAddrs(), seen)
	return &Cluster{c: c, stopReaper: stop}, nil
}

// Brokers is the cluster's KAFKA_BROKERS.
func (c *Cluster) Brokers() string { return strings.Join(c.c.ListenAddrs(), ",") }

// Close stops the cluster; what it held is gone.
func (c *Cluster) Close() {
	c.stopReaper()
	c.c.Close()
}

// listenFree listens on a port childproc.FreeAddr picked; another process
// may take it between the pick and the listen, so it tries a few.
func listenFree(network, _ string) (net.Listener, error) {
	var err error
	for range 10 {
		var addr string
		if addr, err = childproc.FreeAddr(); err != nil {
			return nil, err
		}
		var ln net.Listener
		if ln, err = net.Listen(network, addr); err == nil {
			return ln, nil
		}
	}
	return nil, err
}
