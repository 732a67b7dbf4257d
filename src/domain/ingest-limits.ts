// The bounds of one ingest batch, on every protocol (and in the OpenAPI
// document, whose generator reads them here: this module imports nothing).

/** The most records (REST: non-blank lines) one batch may hold. */
export const MAX_BATCH_RECORDS = 10_000;
/** The largest batch in bytes: an RPC message, a REST body (10,000 tweets with their users fit). */
export const MAX_BATCH_BYTES = 16 * 1024 * 1024;
