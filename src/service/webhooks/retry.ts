// When a webhook's batch is sent again. Timeouts, connection failures, 429
// and every status but 2xx and 410 are retried (a 4xx from a receiver is as
// often a misconfiguration fixed by a person as a permanent refusal: nothing
// is dropped, the subscription turns failing once the retry window passes);
// 410 Gone disables the subscription. Delays grow exponentially with
// jitter (receivers coming back are not hit by every sender at once), and a
// Retry-After the receiver sends is honoured, within bounds.

export const RETRY_BASE_MS = 1000;
/** The longest wait between two attempts of a batch (a receiver back is found within it). */
export const RETRY_CAP_MS = 5 * 60_000;
/** The longest Retry-After honoured. */
export const RETRY_AFTER_CAP_MS = 60 * 60_000;

/** The wait before attempt `attempt + 1` after `attempt` failed: base·2^(attempt−1) up to the cap, then between half and all of it. */
export function backoffMs(attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(RETRY_CAP_MS, RETRY_BASE_MS * 2 ** Math.min(Math.max(attempt - 1, 0), 30));
  return Math.round(ceiling * (0.5 + random() / 2));
}

/** A Retry-After header's wait (delta seconds or an HTTP date), bounded; undefined when absent or unreadable. */
export function retryAfterMs(value: string | undefined, now: number = Date.now()): number | undefined {
  if (value === undefined || value.trim() === "") return undefined;
  const text = value.trim();
  let ms: number;
  if (/^[0-9]{1,10}$/.test(text)) ms = Number(text) * 1000;
  else {
    const at = Date.parse(text);
    if (Number.isNaN(at)) return undefined;
    ms = at - now;
  }
  return Math.min(Math.max(ms, 0), RETRY_AFTER_CAP_MS);
}

export type Outcome = { kind: "delivered" } | { kind: "gone" } | { kind: "retry" };

/** What a receiver's answer (or 0: none) means for the batch. */
export function outcomeOf(status: number): Outcome {
  if (status >= 200 && status < 300) return { kind: "delivered" };
  if (status === 410) return { kind: "gone" };
  return { kind: "retry" };
}
