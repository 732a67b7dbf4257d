// Ownership that follows the market (decisions.md, "Ownership"), shared by
// both engines (sqlite/ownership.ts, postgres/ownership.ts).

/**
 * A sale's log index: sales carry none, so one with no transfer of its
 * transaction known is at the end of its block (then by hash); with one, it
 * is that transfer.
 */
export const SALE_LOG_INDEX = 2 ** 31 - 1;
