// The numeric helpers of the appraisal model, its calibration and its
// backtest, in one place.

export const sigmoid = (z: number): number => 1 / (1 + Math.exp(-z));

/** x limited to [−limit, limit]. */
export const clamp = (x: number, limit: number): number => Math.max(-limit, Math.min(limit, x));

/** The median of the first n values of a, sorted. */
export function medianOfSorted(a: Float64Array, n: number): number {
  return n % 2 === 1 ? a[(n - 1) / 2]! : (a[n / 2 - 1]! + a[n / 2]!) / 2;
}

/** The median of any values (NaN for none). */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const s = Float64Array.from(values).sort();
  return medianOfSorted(s, s.length);
}

/** Sorts the first n values of a in place: the level's windows are a few dozen values. */
export function insertionSort(a: Float64Array, n: number): void {
  for (let i = 1; i < n; i++) {
    const v = a[i]!;
    let j = i - 1;
    while (j >= 0 && a[j]! > v) {
      a[j + 1] = a[j]!;
      j--;
    }
    a[j + 1] = v;
  }
}

/** Solves m·x = b for a symmetric positive definite m (Cholesky); m is overwritten. */
export function solveSpd(m: Float64Array, b: Float64Array, n: number): Float64Array {
  for (let j = 0; j < n; j++) {
    let d = m[j * n + j]!;
    for (let k = 0; k < j; k++) d -= m[j * n + k]! ** 2;
    d = Math.sqrt(Math.max(d, 1e-12));
    m[j * n + j] = d;
    for (let i = j + 1; i < n; i++) {
      let s = m[i * n + j]!;
      for (let k = 0; k < j; k++) s -= m[i * n + k]! * m[j * n + k]!;
      m[i * n + j] = s / d;
    }
  }
  const x = Float64Array.from(b);
  for (let i = 0; i < n; i++) {
    let s = x[i]!;
    for (let k = 0; k < i; k++) s -= m[i * n + k]! * x[k]!;
    x[i] = s / m[i * n + i]!;
  }
  for (let i = n - 1; i >= 0; i--) {
    let s = x[i]!;
    for (let k = i + 1; k < n; k++) s -= m[k * n + i]! * x[k]!;
    x[i] = s / m[i * n + i]!;
  }
  return x;
}
