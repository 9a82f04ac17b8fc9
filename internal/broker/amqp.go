package broker

import (
	"context"
	"errors"

	"github.com/ThreeDotsLabs/watermill"
)

func newAMQP(ctx context.Context, url string, logger watermill.LoggerAdapter) (*Broker, error) {
	return nil, errors.New("BROKER=amqp is not wired yet")
}
