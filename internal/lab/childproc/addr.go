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

// handedOut is every port this process has handed out: it never hands one
// out twice. Each port is drawn at random from the range, not counted upwards
// from one: parallel test binaries each have their own FreeAddr, and two
// processes counting upwards from nearby starts would hand out the same
// ports one after the other.
var handedOut struct {
	mu    sync.Mutex
	ports map[int]bool
}

// FreeAddr returns an address on 127.0.0.1 whose port nothing listens on
// right now, for a child process to listen on.
func FreeAddr() (string, error) {
	handedOut.mu.Lock()
	defer handedOut.mu.Unlock()
	if handedOut.ports == nil {
		handedOut.ports = map[int]bool{}
	}
	for range 1000 {
		port := minPort + rand.IntN(maxPort-minPort+1)
		if handedOut.ports[port] {
			continue
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if ln, err := net.Listen("tcp", addr); err == nil {
			ln.Close()
			handedOut.ports[port] = true
			return addr, nil
		}
	}
	return "", fmt.Errorf("find a free port on 127.0.0.1: 1000 random ports from %d to %d were in use or handed out", minPort, maxPort)
}
