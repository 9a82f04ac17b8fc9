// Package model holds orderpaid.pml, a Promela model of the order_paid flow
// for the Spin model checker, and the test that checks it: with every guard
// on the model verifies; with each guard off Spin finds the run that breaks
// the invariant the guard protects (docs/model.md).
package model
