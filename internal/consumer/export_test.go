package consumer

// Permanent marks err as a failure retrying cannot fix, for the tests.
var Permanent = permanent
