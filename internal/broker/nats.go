package broker

import (
	"context"
	"errors"

	"github.com/ThreeDotsLabs/watermill"
)

func newNATS(ctx context.Context, url string, logger watermill.LoggerAdapter) (*Broker, error) {
	return nil, errors.New("BROKER=nats is not wired yet")
}
