import { createHash, randomBytes } from "node:crypto";

// API keys are 32 random bytes, so a plain SHA-256 is a safe digest to store:
// there is nothing to brute-force that a slow hash would protect. Both
// engines store and look up this digest.

const KEY_PREFIX = "mdk_";

/** A new key: the prefix and 32 random bytes. */
export function newApiKey(): string {
  return KEY_PREFIX + randomBytes(32).toString("base64url");
}

export function hashApiKey(key: string): Buffer {
  return createHash("sha256").update(key, "utf8").digest();
}
