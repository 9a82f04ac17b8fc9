package soak

import (
	"context"

	"github.com/orderpaid/orderpaid/internal/lab/kafkalab"
	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// ownBroker is the broker a soak starts for itself when it is given none,
// so that restarting it, or killing its members, disturbs nobody.
type ownBroker struct {
	// nats is a private nats-server: broker nats without a NATS URL.
	nats *natsServer
	// kafka is an in-process Kafka cluster (kafkalab): broker kafka
	// without KAFKA_BROKERS. It lives in the soak's own process.
	kafka *kafkalab.Cluster
}

// startOwnBroker starts the broker of broker when its address is empty,
// writes the address it listens on into *natsURL or *kafkaBrokers, and
// says so through logf.
func startOwnBroker(ctx context.Context, broker, natsServer, logDir string, natsURL, kafkaBrokers *string, logf func(string, ...any)) (ownBroker, error) {
	var own ownBroker
	var err error
	switch {
	case broker == config.BrokerNATS && *natsURL == "":
		if own.nats, err = startNATS(ctx, natsServer, logDir); err != nil {
			return own, err
		}
		*natsURL = own.nats.URL()
	case broker == config.BrokerKafka && *kafkaBrokers == "":
		if own.kafka, err = kafkalab.Start(); err != nil {
			return own, err
		}
		*kafkaBrokers = own.kafka.Brokers()
		logf("KAFKA_BROKERS is not set: the soak runs on an in-process Kafka cluster at %s (franz-go's kfake, in this process, gone when the soak ends; "+
			"a worker is SIGKILLed only while every consumer group is stable, see internal/lab/kafkalab/groups.go); set KAFKA_BROKERS to soak a real one", *kafkaBrokers)
	}
	return own, nil
}

// stop stops what startOwnBroker started.
func (o ownBroker) stop() {
	if o.nats != nil {
		o.nats.stop()
	}
	if o.kafka != nil {
		o.kafka.Close()
	}
}
