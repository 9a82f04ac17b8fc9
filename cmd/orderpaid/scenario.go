package main

import "errors"

func runScenario(e env) error {
	return errors.New("scenario: not implemented yet")
}
