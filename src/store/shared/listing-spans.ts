/** The end of a listing's span still active (listing_spans.active_until), on both engines. */
export const OPEN_END = Number.MAX_SAFE_INTEGER;
