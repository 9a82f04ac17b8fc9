package backfill

// Enqueue is enqueue, for BenchmarkBackfillChunk.
var Enqueue = enqueue
