// What a server is told about its webhooks (config.ts validates the flags into it).

export interface WebhookSettings {
  /** Deliver from this process (false: --no-webhooks; administration still answers). */
  deliver: boolean;
  /** --allow-private-webhooks: http, loopback and private destinations. */
  allowPrivate: boolean;
  retryForMs: number;
  concurrency: number;
  perDestination: number;
  timeoutMs: number;
  /** Extra certificate authorities for receivers (PEM). */
  ca?: string | undefined;
  /** Tests: faster polls and leases. */
  pollMs?: number;
  leaseMs?: number;
  leaseEveryMs?: number;
  batchSize?: number;
}
