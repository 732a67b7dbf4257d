// The bounds of the live feeds (WatchSales, WatchListings, their SSE
// routes): shared by the feed hub, the transports and the OpenAPI document
// (whose generator reads them here: this module imports nothing).

/** A heartbeat (an SSE comment, a position-only message on RPC) after this long without a message. */
export const HEARTBEAT_SECONDS = 15;

/** The reconnection delay an SSE stream asks of an EventSource (`retry:`). */
export const RETRY_MS = 2000;

/** Rows per store read, live or replaying: one read per commit and collection unless a commit holds more. */
export const FEED_PAGE_ROWS = 500;

/** Messages a subscriber may have waiting before it is ended as too slow (with its resume token). */
export const MAX_QUEUED_MESSAGES = 10_000;

/** How often each server process asks the store whether anything was committed, while anyone subscribes. */
export const FEED_POLL_MS = 20;

/**
 * The query parameter an SSE request may give its API key in, since a
 * browser's EventSource cannot send headers (the x-api-key header wins;
 * request logs redact it: transport/entry.ts).
 */
export const SSE_KEY_PARAM = "apiKey";
