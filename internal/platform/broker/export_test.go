package broker

import "github.com/ThreeDotsLabs/watermill/message"

// Lanes returns the per-lane subscribers of a subscriber read in lanes, for
// tests that break one lane.
func Lanes(s message.Subscriber) []message.Subscriber { return s.(*lanedSubscriber).lanes }
