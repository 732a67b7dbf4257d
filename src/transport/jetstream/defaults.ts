// `marketdata consume`'s defaults (a module of their own: the configuration
// reads them without loading the NATS client).

export const JETSTREAM_DEFAULTS = {
  stream: "MARKETDATA",
  subjectPrefix: "marketdata.ingest",
  durable: "marketdata",
  deadLetter: "marketdata.dead",
  batch: 1000,
  pending: 1000,
  inflight: 4,
  flushMs: 20,
  ackWaitSeconds: 30,
} as const;
