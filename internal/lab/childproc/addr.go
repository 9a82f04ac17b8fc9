package childproc

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
)

// The ports FreeAddr hands out lie below Linux's ephemeral range (32768 to
// 60999), from which the kernel takes the port of every outgoing connection
// and every ":0" listener. A port is handed to a child that binds it a moment
// later; one from the ephemeral range may be taken in that moment by any
// socket on the machine, one below it only by a process that asks for it.
const (
	minPort = 20000
	maxPort = 32767
)

// ports is where FreeAddr goes on: from a random port of the range, so that
// processes started together (parallel test binaries) begin far apart, then
// upwards, so that one process never hands out a port twice.
var ports struct {
	mu   sync.Mutex
	next int // 0 until the first call
}

// FreeAddr returns an address on 127.0.0.1 whose port nothing listens on
// right now, for a child process to listen on.
func FreeAddr() (string, error) {
	ports.mu.Lock()
	defer ports.mu.Unlock()
	if ports.next == 0 {
		ports.next = minPort + rand.IntN(maxPort-minPort+1)
	}
	for range maxPort - minPort + 1 {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports.next))
		if ports.next++; ports.next > maxPort {
			ports.next = minPort
		}
		if ln, err := net.Listen("tcp", addr); err == nil {
			ln.Close()
			return addr, nil
		}
	}
	return "", fmt.Errorf("find a free port on 127.0.0.1: every port from %d to %d is in use", minPort, maxPort)
}
