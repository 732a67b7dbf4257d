// The store's errors: what a caller of any port may catch, on either engine.

/** A store that cannot be opened or is not at this build's schema: said plainly to the operator. */
export class StoreError extends Error {}

/**
 * A record the store refuses against what it holds, the caller's mistake:
 * a listing named under another collection than the one that holds it (a
 * marketplace's listing stays with its collection: decisions.md). Nothing
 * of the write it was in is kept.
 */
export class RecordConflictError extends Error {}

/** The store could not be reached (PostgreSQL down or restarting): the caller may retry; callers see `unavailable`. */
export class StoreUnavailableError extends Error {}

/** This server's store takes no writes (a PostgreSQL replica, a read-only file): ingest goes to a server on the primary. */
export class StoreReadOnlyError extends Error {}
