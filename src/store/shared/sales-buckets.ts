/** The stats aggregates' bucket: one row per collection, marketplace and hour, on both engines. */
export const BUCKET_SECONDS = 3600;
