import type { Random } from "../src/demo/random.js";
import { YEAR } from "./sales-file.js";

// The stats windows the stats and engine benchmarks time: each shape placed
// at random in a collection's history, the same windows for every store.

/** Window shapes: a length in seconds, undefined for the whole history, -1 for random bounds. */
export const WINDOW_SHAPES: readonly [string, number | undefined][] = [
  ["whole history", undefined],
  ["a year", YEAR],
  ["a month", 30 * 86400],
  ["a day", 86400],
  ["an hour", 3600],
  ["random window", -1],
];

/** A window of `length` seconds (undefined: whole history; -1: random bounds) placed at random within [first, last]. */
export function randomWindow(first: number, last: number, length: number | undefined, rnd: Random): { since?: number; until?: number } {
  if (length === undefined) return {};
  if (length === -1) {
    const a = rnd.int(first, last);
    const b = rnd.int(first, last);
    return { since: Math.min(a, b), until: Math.max(a, b) };
  }
  const until = rnd.int(Math.min(first + length, last), last);
  return { since: until - length + 1, until };
}
