// How error messages quote a caller's value: as JSON, cut to its first
// ECHO_LIMIT characters with the full length named, so that a 5 MB parameter
// cannot make a 5 MB error body.

export const ECHO_LIMIT = 100;

export function echo(value: string): string {
  if (value.length <= ECHO_LIMIT) return JSON.stringify(value);
  return `${JSON.stringify(value.slice(0, ECHO_LIMIT))}... (${value.length} characters)`;
}

/** A value already known to be a plain token (digits): as is when short, else like echo(). */
export function echoBare(value: string): string {
  return value.length <= ECHO_LIMIT ? value : echo(value);
}
