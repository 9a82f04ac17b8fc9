package queries

// AuditOrderSQL is the audit's statement, for the test that reads its plan.
const AuditOrderSQL = auditOrder
